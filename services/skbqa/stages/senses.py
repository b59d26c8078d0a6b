"""Which of the nodes bearing one name a few words mean ("bank" said "as in: a financial institution"): those whose
document (type, name, text, attributes) shares the most of the words. Used by the parser and by step 4, so a
constant's candidates are the meant nodes wherever the query is resolved."""

from __future__ import annotations

import re
from collections.abc import Iterable

import numpy as np

from skbqa.ingest.documents import document
from skbqa.stores.nodes import NodeTable

_WORD = re.compile(r"[a-z0-9]+")
MIN_WORD_CHARS = 3
MAX_NODES_SCORED = 2000  # a name this common is left as it is: reading every node's document would cost too much
# English words that say nothing about a sense ("the one *that is* …")
_EMPTY = frozenset(
    {"the", "and", "for", "that", "this", "with", "from", "into", "its", "their", "which", "who", "whose", "one",
     "ones", "being", "are", "was", "were", "has", "have", "had", "not", "any", "some", "such", "sense", "meaning"}
)  # fmt: skip


def sense_words(text: str) -> frozenset[str]:
    """The words of a qualifier that may tell senses apart (dotted categories split: "noun.feeling")."""
    return frozenset(
        w for w in _WORD.findall(text.lower().replace(".", " ")) if len(w) >= MIN_WORD_CHARS and w not in _EMPTY
    )


def closest_senses(nodes: NodeTable, positions: np.ndarray, words: Iterable[str]) -> np.ndarray:
    """The positions whose documents share the most of the words; all of them when none shares any, when there
    is only one, or when there are too many to read."""
    said = frozenset(words)
    if not said or positions.size < 2 or positions.size > MAX_NODES_SCORED:
        return positions
    shared = np.array([len(said & sense_words(document(nodes, int(p)))) for p in positions])
    best = int(shared.max())
    return positions[shared == best] if best else positions
