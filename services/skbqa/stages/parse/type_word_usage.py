"""How the knowledge base's own nodes use a word, per node type: a head noun that is not a type name ("which
*disorders* …", "what *libraries* …") usually is a word the nodes of its type call themselves in their names and in
the opening words of their texts, where a definition puts its genus ("A *disorder* characterized by …", "Python
*library* for …"). Counted once per index from the node table, for any schema.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

import numpy as np

from skbqa.stores.nodes import NodeTable

# The opening characters of a node's text that are read: where a definition or a one-line description states
# what the node is. Beyond it a text talks about other things ("… in patients with a *disorder* of …").
OPENING_CHARS = 160
MIN_NODES = 10  # a word fewer nodes of a type use says nothing about that type (a small type wins on a handful)
USAGE_FLOOR = 0.1  # the share of the evidence spread evenly over every type, so that no type is vetoed outright
_WORD = re.compile(r"[a-z]+")


class TypeWordUsage:
    def __init__(self, nodes: NodeTable) -> None:
        types = len(nodes.schema.node_types)
        self._sizes = np.bincount(np.asarray(nodes.types, dtype=np.int64), minlength=types).astype(np.float64)
        per_type: list[Counter[str]] = [Counter() for _ in range(types)]
        for type_code, name, text in zip(nodes.types.tolist(), nodes.names, nodes.texts, strict=True):
            opening = f"{name} {text[:OPENING_CHARS] if text else ''}".lower()
            per_type[type_code].update(set(_WORD.findall(opening)))
        kept: dict[str, np.ndarray] = {}
        for code, counts in enumerate(per_type):
            for word, count in counts.items():
                if count >= MIN_NODES:
                    kept.setdefault(word, np.zeros(types, dtype=np.float64))[code] = count
        self._counts = kept

    def knows(self, word: str) -> bool:
        """Whether enough nodes of some type use the word in their names or openings."""
        return word in self._counts

    def shares(self, forms: Iterable[str]) -> np.ndarray | None:
        """For a word given in all its forms: each type's share of the rate at which its nodes use it (rates, not
        counts, so a large type does not win by size). None when no type uses it enough to say."""
        counts = sum((self._counts[f] for f in set(forms) if f in self._counts), start=np.zeros_like(self._sizes))
        if not counts.any():
            return None
        rates = counts / np.maximum(self._sizes, 1.0)
        # A type whose nodes use the word fewer than MIN_NODES times is not ruled out, only made unlikely: a word
        # users call a type by may be rare in that type's own names ("illness" among diseases named "… syndrome").
        return (1.0 - USAGE_FLOOR) * rates / rates.sum() + USAGE_FLOOR / len(rates)
