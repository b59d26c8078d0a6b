"""The name lexicon: every node's name and aliases, looked up by normalised word sequence (step 4's exact match,
and the encoder parser's constant spotting).

Which attributes hold aliases is inferred from the data, not configured per SKB: a string attribute is an alias
column when its values are mostly distinct across the nodes that have it (symbols, synonyms, identifiers — not
categories like "protein-coding" or "17") and contain letters. List-valued strings ("CD340, HER2" or "a; b") are
split into items. Keys are lower-cased word sequences (`\\w+`), so punctuation and case do not matter for names;
short all-caps aliases ("WAS", "NEU") must match the question's casing, because in lower case they are English
words.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from skbqa.stores.nodes import NodeTable

_WORD = re.compile(r"\w+")
_SPLIT = re.compile(r"\s*;\s*")
_SPLIT_COMMA = re.compile(r"\s*,\s*")
MAX_SPAN_WORDS = 24
MIN_DISTINCT_RATIO = 0.5  # an alias column's values are mostly distinct
MAX_ALIAS_CHARS = 120
NAME, ALIAS = 0, 1


def normalise(text: str) -> str:
    return " ".join(_WORD.findall(text.lower()))


def _needs_exact_case(alias: str) -> bool:
    """Short upper-case aliases without digits ('WAS', 'NEU') read as English words once lower-cased."""
    return len(alias) < 6 and alias.upper() == alias and not any(c.isdigit() for c in alias)


@dataclass(frozen=True)
class Entry:
    position: int
    kind: int  # NAME or ALIAS
    exact_case: str | None  # the alias as written when it must match case-sensitively


class NameLexicon:
    def __init__(self, entries: dict[str, list[Entry]], alias_keys: list[tuple[int, str, str]]) -> None:
        self._entries = entries
        self.alias_keys = alias_keys  # (node type code, attribute key, item separator) read as aliases
        self.max_words = min(MAX_SPAN_WORDS, max((k.count(" ") + 1 for k in entries), default=1))

    @classmethod
    def build(cls, nodes: NodeTable) -> NameLexicon:
        alias_keys = _alias_columns(nodes)
        wanted: dict[int, list[tuple[str, str]]] = {}
        for code, key, separator in alias_keys:
            wanted.setdefault(code, []).append((key, separator))
        entries: dict[str, list[Entry]] = {}
        for position, name in enumerate(nodes.names):
            key = normalise(name)
            if key:
                entries.setdefault(key, []).append(Entry(position, NAME, None))
            keys = wanted.get(int(nodes.types[position]))
            if not keys:
                continue
            attrs = nodes.attrs[position]
            seen = {key}
            for attr, separator in keys:
                value = attrs.get(attr)
                if not isinstance(value, str):
                    continue
                for alias in _items(value, separator):
                    alias_key = normalise(alias)
                    if not alias_key or alias_key in seen:
                        continue
                    seen.add(alias_key)
                    exact = alias if _needs_exact_case(alias) else None
                    entries.setdefault(alias_key, []).append(Entry(position, ALIAS, exact))
        return cls(entries, alias_keys)

    def __len__(self) -> int:
        return len(self._entries)

    def lookup(self, text: str, *, original: str | None = None) -> list[Entry]:
        """Entries whose normalised name equals `text`'s; `original` (the span as written) gates exact-case aliases."""
        found = self._entries.get(normalise(text), [])
        if original is None:
            return [e for e in found if e.exact_case is None]
        return [e for e in found if e.exact_case is None or e.exact_case == original.strip()]

    def positions(self, text: str, *, original: str | None = None) -> np.ndarray:
        """Matching positions, names before aliases, each group in position order."""
        found = self.lookup(text, original=original)
        names = sorted(e.position for e in found if e.kind == NAME)
        aliases = sorted({e.position for e in found if e.kind == ALIAS} - set(names))
        return np.asarray(names + aliases, np.int64)

    def __contains__(self, key: str) -> bool:
        return key in self._entries


def _items(value: str, separator: str) -> Iterable[str]:
    if len(value) > MAX_ALIAS_CHARS * 20:
        return ()
    parts = _SPLIT.split(value) if separator == ";" else [value, *_SPLIT_COMMA.split(value)]
    return [p for p in parts if 1 < len(p) <= MAX_ALIAS_CHARS and any(c.isalpha() for c in p)]


def _alias_columns(nodes: NodeTable, sample: int = 5000) -> list[tuple[int, str, str]]:
    """(type code, attribute, separator) for string columns whose values are mostly distinct and hold letters.

    A column where more values hold ';' than ', ' is ';'-separated (its items may contain commas: "chromosome,
    centromeric region" is one synonym); otherwise items are comma-separated ("CD340, HER2").
    """
    by_type: dict[int, list[int]] = {}
    for code in np.unique(nodes.types):
        of_type = np.flatnonzero(nodes.types == code)
        by_type[int(code)] = of_type[:: max(1, of_type.size // sample)].tolist()
    columns: list[tuple[int, str, str]] = []
    for code, positions in by_type.items():
        values: dict[str, list[str]] = {}
        for p in positions:
            for key, value in nodes.attrs[p].items():
                if isinstance(value, str) and key not in ("name", "title", "text"):
                    values.setdefault(key, []).append(value)
        for key, seen in values.items():
            has_letters = sum(any(c.isalpha() for c in v) for v in seen) >= 0.5 * len(seen)
            distinct = len(set(seen)) >= MIN_DISTINCT_RATIO * len(seen)
            short = sum(len(v) for v in seen) / len(seen) <= MAX_ALIAS_CHARS * 4
            if has_letters and distinct and short and len(seen) >= 2:
                semicolons = sum(";" in v for v in seen)
                commas = sum(", " in v for v in seen)
                columns.append((code, key, ";" if semicolons >= commas else ","))
    return sorted(columns)
