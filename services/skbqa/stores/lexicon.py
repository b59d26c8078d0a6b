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

import json
import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from skbqa.stores.nodes import NodeTable

_WORD = re.compile(r"\w+")
_SPLIT = re.compile(r"\s*;\s*")
_SPLIT_COMMA = re.compile(r"\s*,\s*")
MAX_SPAN_WORDS = 24
MIN_DISTINCT_RATIO = 0.5  # an alias column's values are mostly distinct
MAX_ALIAS_CHARS = 120
# A qualified name ("asyncio.streams.StreamReader", "java.util.ArrayList", "std::unique_ptr", "shutil.make_archive")
# is typed by its last part. That part is an alias when it reads as an identifier, not a word (an "errors" module
# is no answer to "which errors …"), no node is named so, and at most this many names end in it ("__init__", the
# last part of a thousand methods, names no one thing).
MAX_LAST_PART_NODES = 5
_IDENTIFIER_PART = re.compile(r"_|\d|.[A-Z]")  # snake_case, a digit, or an inner capital (CamelCase)
_QUALIFIED = re.compile(r"^[A-Za-z_][\w-]*(?:(?:\.|::|/)[A-Za-z_][\w-]*)+$")
NAME, ALIAS = 0, 1
LEXICON_FILE = "lexicon.npz"  # beside the node table of an index (written by ingest)
LEXICON_VERSION = 3  # bump when the build rules change: older files are then rebuilt, not trusted

logger = logging.getLogger(__name__)


_POSSESSIVE = re.compile(r"['’]s\b")


def normalise(text: str) -> str:
    """Lower-case words; a possessive 's goes ("Alzheimer's disease" = "Alzheimer disease")."""
    return " ".join(_WORD.findall(_POSSESSIVE.sub("", text.lower())))


def _needs_exact_case(alias: str) -> bool:
    """Short upper-case aliases without digits ('WAS', 'NEU') read as English words once lower-cased."""
    return len(alias) < 6 and alias.upper() == alias and not any(c.isdigit() for c in alias)


@dataclass(frozen=True)
class Entry:
    position: int
    kind: int  # NAME or ALIAS
    exact_case: str | None  # the alias as written when it must match case-sensitively


class NameLexicon:
    """normalised key → entries (names before aliases within a node, nodes in position order).

    Held compactly — one dict from key to a group number, entries as arrays (position, kind) grouped by key — so
    millions of names cost a dict of strings and a few arrays, not an object per entry; `Entry` objects are made
    only for the keys looked up. Ingest saves it beside the node table (`save`), and `build` reads that file back
    when it matches the table (loading is several times faster than rebuilding at a million names).
    """

    def __init__(
        self,
        keys: dict[str, int],
        offsets: np.ndarray,
        positions: np.ndarray,
        kinds: np.ndarray,
        exact: dict[int, str],
        alias_keys: list[tuple[int, str, str]],
    ) -> None:
        self._keys = keys  # key → group; group g's entries are rows offsets[g]:offsets[g + 1]
        self._offsets = offsets
        self._positions = positions
        self._kinds = kinds
        self._exact = exact  # entry row → alias as written, for aliases that must match case
        self.alias_keys = alias_keys  # (node type code, attribute key, item separator) read as aliases
        self.max_words = min(MAX_SPAN_WORDS, max((k.count(" ") + 1 for k in keys), default=1))

    @classmethod
    def build(cls, nodes: NodeTable) -> NameLexicon:
        """The lexicon of a node table: read from the index when ingest saved one for this table, else built."""
        directory = getattr(nodes, "directory", None)
        if directory is not None and (directory / LEXICON_FILE).is_file():
            try:
                return cls.load(directory / LEXICON_FILE, expect_nodes=len(nodes))
            except (OSError, KeyError, ValueError) as exc:
                logger.warning("rebuilding the name lexicon: %s", exc)
        return cls.build_from(nodes)

    @classmethod
    def build_from(cls, nodes: NodeTable) -> NameLexicon:
        alias_keys = _alias_columns(nodes)
        wanted: dict[int, list[tuple[str, str]]] = {}
        for code, key, separator in alias_keys:
            wanted.setdefault(code, []).append((key, separator))
        groups: dict[str, int] = {}
        entry_groups: list[int] = []
        entry_positions: list[int] = []
        entry_kinds: list[int] = []
        exact_rows: dict[int, str] = {}
        types = nodes.types.tolist() if wanted else None
        for position, name in enumerate(nodes.names):
            key = normalise(name)
            if key:
                entry_groups.append(groups.setdefault(key, len(groups)))
                entry_positions.append(position)
                entry_kinds.append(NAME)
            keys = wanted.get(types[position]) if types is not None else None
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
                    if _needs_exact_case(alias):
                        exact_rows[len(entry_groups)] = alias
                    entry_groups.append(groups.setdefault(alias_key, len(groups)))
                    entry_positions.append(position)
                    entry_kinds.append(ALIAS)
        for alias_key, positions in _last_parts(nodes.names, groups).items():
            group = groups.setdefault(alias_key, len(groups))
            for position in positions:
                entry_groups.append(group)
                entry_positions.append(position)
                entry_kinds.append(ALIAS)
        group_of = np.asarray(entry_groups, np.int64)
        order = np.argsort(group_of, kind="stable")  # grouped by key, insertion order kept inside a group
        row_of = np.empty_like(order)
        row_of[order] = np.arange(order.size)
        offsets = np.zeros(len(groups) + 1, np.int64)
        np.cumsum(np.bincount(group_of, minlength=len(groups)), out=offsets[1:])
        return cls(
            groups,
            offsets,
            np.asarray(entry_positions, np.int64)[order],
            np.asarray(entry_kinds, np.int8)[order],
            {int(row_of[row]): alias for row, alias in exact_rows.items()},
            alias_keys,
        )

    def __len__(self) -> int:
        return len(self._keys)

    def names_of(self, nodes: NodeTable, position: int) -> list[str]:
        """The node's name and the aliases the lexicon reads for it, in that order."""
        names = [nodes.names[position]]
        code = int(nodes.types[position])
        for type_code, attr, separator in self.alias_keys:
            value = nodes.attrs[position].get(attr) if type_code == code else None
            if isinstance(value, str):
                names += [alias for alias in _items(value, separator) if alias not in names]
        return names

    def _entries(self, key: str) -> list[Entry]:
        group = self._keys.get(key)
        if group is None:
            return []
        start, end = int(self._offsets[group]), int(self._offsets[group + 1])
        return [
            Entry(int(p), int(k), self._exact.get(row))
            for row, p, k in zip(
                range(start, end),
                self._positions[start:end].tolist(),
                self._kinds[start:end].tolist(),
                strict=True,
            )
        ]

    def lookup(self, text: str, *, original: str | None = None) -> list[Entry]:
        """Entries whose normalised name equals `text`'s; `original` (the span as written) gates exact-case aliases."""
        found = self._entries(normalise(text))
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
        return key in self._keys

    def words(self) -> set[str]:
        """Every word that occurs in a name or alias (the vocabulary a misspelt name is corrected against)."""
        return {word for key in self._keys for word in key.split()}

    # ------------------------------------------------------------------------------------------------ files

    def save(self, path: Path, *, nodes: int) -> None:
        keys = list(self._keys)  # insertion order = group order
        blob = "\n".join(keys).encode("utf-8")  # keys are words joined by single spaces: never a newline
        meta = {"version": LEXICON_VERSION, "nodes": nodes, "keys": len(keys), "alias_keys": self.alias_keys}
        exact_rows = np.asarray(sorted(self._exact), np.int64)
        with path.open("wb") as handle:
            np.savez(
                handle,
                meta=np.array(json.dumps(meta)),
                keys=np.frombuffer(blob, np.uint8),
                offsets=self._offsets,
                positions=self._positions,
                kinds=self._kinds,
                exact_rows=exact_rows,
                exact=np.array(json.dumps([self._exact[int(r)] for r in exact_rows])),
            )

    @classmethod
    def load(cls, path: Path, *, expect_nodes: int | None = None) -> NameLexicon:
        with np.load(path) as data:
            meta = json.loads(str(data["meta"]))
            if meta.get("version") != LEXICON_VERSION:
                raise ValueError(f"{path}: lexicon version {meta.get('version')}, expected {LEXICON_VERSION}")
            if expect_nodes is not None and meta.get("nodes") != expect_nodes:
                raise ValueError(f"{path}: lexicon of {meta.get('nodes')} nodes, the table has {expect_nodes}")
            blob = data["keys"].tobytes().decode("utf-8")
            keys = blob.split("\n") if meta["keys"] else []
            exact = dict(zip(data["exact_rows"].tolist(), json.loads(str(data["exact"])), strict=True))
            lexicon = cls(
                dict(zip(keys, range(len(keys)), strict=True)),
                data["offsets"],
                data["positions"],
                data["kinds"],
                exact,
                [tuple(k) for k in meta["alias_keys"]],  # type: ignore[misc]
            )
        if len(lexicon) != meta["keys"]:
            raise ValueError(f"{path}: damaged lexicon")
        return lexicon


def _last_parts(names: Iterable[str], taken: dict[str, int]) -> dict[str, list[int]]:
    """Normalised last part of each qualified name → the nodes whose names end in it, for parts that are no key
    yet (a name or an alias of some node says what the word means) and end few names."""
    found: dict[str, list[int]] = {}
    for position, name in enumerate(names):
        if ("." not in name and "/" not in name and "::" not in name) or not _QUALIFIED.match(name):
            continue
        part = re.split(r"\.|::|/", name)[-1]
        key = normalise(part)
        if len(part) >= 3 and key and key not in taken and _IDENTIFIER_PART.search(part.strip("_")):
            found.setdefault(key, []).append(position)
    return {key: positions for key, positions in found.items() if len(positions) <= MAX_LAST_PART_NODES}


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
