"""Attribute columns: one (node type, key) of a node table as arrays, and the single pass that builds them all.

A column holds the nodes that have a non-null value (`positions`, sorted), each one's code into the column's
vocabulary of normalised distinct values, the inferred kind, and — by kind — numeric or calendar arrays aligned
with their own sorted positions. Every stored value is read once; everything after that works on the distinct
values (parsed once each) and on numpy arrays, so the build stays linear and filters never loop over nodes.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import Literal

import numpy as np

from skbqa.skb.model import Scalar
from skbqa.stores.attributes.values import (
    SEPARATORS,
    DateValue,
    canonical,
    is_year,
    loose,
    normalise,
    parse_date,
    parse_number,
    split_items,
)
from skbqa.stores.nodes import NodeTable

Kind = Literal["numeric", "date", "boolean", "categorical", "list", "text"]

SMALL_VOCABULARY = 2000  # at most this many distinct values: a categorical attribute a question may quote
LIST_MIN_SHARE = 0.05  # share of values holding the separator above which a column is reported as list-valued
_MAJORITY = 0.9  # share of parseable values that makes a mixed column numeric / date
_PARSE_SAMPLE = 1000  # distinct values whose parse decides whether a large vocabulary is parsed at all
_ITEM_WORDS = {",": 4.0, ";": 6.0, "|": 6.0}  # mean words per item above which "separated" text is prose


@dataclass(frozen=True)
class NumericColumn:
    positions: np.ndarray  # int64, sorted: nodes whose value parses as a finite number
    values: np.ndarray  # float64, aligned with positions
    years_like: bool  # every value an integer in 1000..2999: a date constraint can compare on the year


@dataclass(frozen=True)
class DateColumn:
    positions: np.ndarray  # int64, sorted: nodes whose value parses as a date (a bare year counts)
    granularity: np.ndarray  # int8: 0 year, 1 month, 2 day (see `attr_values.DateValue`)
    year: np.ndarray  # int64
    month_key: np.ndarray  # int64, year * 12 + month - 1 (meaningful at granularity ≥ 1)
    day_key: np.ndarray  # int64, date ordinal (meaningful at granularity 2)


class AttributeColumn:
    """One (node type, key): its values as codes into a normalised vocabulary, plus typed views by kind."""

    def __init__(
        self,
        node_type: str,
        key: str,
        kind: Kind,
        positions: np.ndarray,
        codes: np.ndarray,
        vocab: list[str],
        display: list[str],
        lookup: dict[str, int],
        separator: str | None,
        numeric: NumericColumn | None,
        dates: DateColumn | None,
    ) -> None:
        self.node_type = node_type
        self.key = key
        self.kind = kind
        self.positions = positions  # int64, sorted: nodes with a non-null value
        self.codes = codes  # int32, aligned with positions: index into vocab
        self.vocab = vocab  # normalised distinct values (`attr_values.normalise`)
        self.display = display  # one stored spelling per vocab entry
        self.lookup = lookup  # normalised value → code
        self.separator = separator  # list separator for item matching; None: values are never split
        self.numeric = numeric
        self.dates = dates
        self.counts = np.bincount(codes, minlength=len(vocab)).astype(np.int64)
        self._csr: tuple[np.ndarray, np.ndarray] | None = None
        if len(vocab) <= SMALL_VOCABULARY:
            self._csr = _csr(codes, len(vocab))  # value → positions slices, ready for the common case

    @property
    def count(self) -> int:
        return int(self.positions.shape[0])

    @property
    def small_vocabulary(self) -> bool:
        return len(self.vocab) <= SMALL_VOCABULARY

    def positions_of(self, codes: np.ndarray | list[int]) -> np.ndarray:
        """Sorted positions of the nodes whose value has one of the vocabulary `codes`."""
        wanted = np.unique(np.asarray(codes, dtype=np.int64))
        if wanted.size == 0:
            return np.zeros(0, np.int64)
        if self._csr is not None:
            order, offsets = self._csr
            parts = [order[offsets[c] : offsets[c + 1]] for c in wanted.tolist()]
            return np.sort(self.positions[np.concatenate(parts)])
        return self.positions[np.isin(self.codes, wanted)]

    @cached_property
    def loose_lookup(self) -> dict[str, list[int]]:
        """loose key → codes; built on first use (a fallback for near-miss spellings)."""
        index: dict[str, list[int]] = {}
        for code, value in enumerate(self.vocab):
            index.setdefault(loose(value), []).append(code)
        return index

    @cached_property
    def items(self) -> dict[str, tuple[str, list[int]]]:
        """normalised list item → (a stored spelling, codes of the values listing it); built on first use."""
        index: dict[str, tuple[str, list[int]]] = {}
        if self.separator is None:
            return index
        sep = self.separator
        for code, shown in enumerate(self.display):
            if sep not in shown:
                continue
            for item in split_items(shown, sep):
                codes = index.setdefault(normalise(item), (item, []))[1]
                if not codes or codes[-1] != code:  # "a, a" lists a once
                    codes.append(code)
        return index

    @cached_property
    def loose_items(self) -> dict[str, list[int]]:
        index: dict[str, list[int]] = {}
        for item, (_, codes) in self.items.items():
            index.setdefault(loose(item), []).extend(codes)
        return index

    def __repr__(self) -> str:
        return f"AttributeColumn({self.node_type}.{self.key}: {self.kind}, {self.count} nodes, {len(self.vocab)} values)"


def _csr(codes: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    order = np.argsort(codes, kind="stable")  # stable: positions stay ascending inside each value's slice
    offsets = np.zeros(size + 1, np.int64)
    np.cumsum(np.bincount(codes, minlength=size), out=offsets[1:])
    return order, offsets


# ------------------------------------------------------------------------------------------------ building


def build_columns(nodes: NodeTable) -> dict[str, dict[str, AttributeColumn]]:
    """node type name → key → column, for every type and key present in the table."""
    types = np.asarray(nodes.types)
    attrs = nodes.attrs
    columns: dict[str, dict[str, AttributeColumn]] = {}
    for code in np.unique(types).tolist():
        type_name = nodes.schema.node_types[code].name
        positions = np.flatnonzero(types == code).astype(np.int64)
        built = (_build_column(type_name, key, ps, vs) for key, ps, vs in _by_key(positions, attrs))
        columns[type_name] = {c.key: c for c in built if c is not None}
    return columns


def _by_key(
    positions: np.ndarray, attrs: list[dict[str, Scalar]]
) -> Iterator[tuple[str, np.ndarray, list[Scalar]]]:
    """(key, positions, values) for every key of these nodes' dicts; values may hold None (missing)."""
    dicts = [attrs[p] for p in positions.tolist()]
    keys: set[str] = set().union(*dicts) if dicts else set()
    entries = sum(map(len, dicts))
    if len(keys) * len(dicts) <= 3 * entries:
        # Dense keys (the usual case): one C-speed comprehension per key beats a Python loop over entries.
        for key in sorted(keys):
            yield key, positions, [d.get(key) for d in dicts]
        return
    # Sparse keys (many optional attributes): one pass over the entries instead.
    buckets: dict[str, tuple[list[int], list[Scalar]]] = {}
    for p, d in zip(positions.tolist(), dicts, strict=True):
        for key, value in d.items():
            bucket = buckets.get(key)
            if bucket is None:
                bucket = buckets[key] = ([], [])
            bucket[0].append(p)
            bucket[1].append(value)
    for key in sorted(buckets):
        yield key, np.asarray(buckets[key][0], dtype=np.int64), buckets[key][1]


def _factorise(values: list[Scalar]) -> tuple[np.ndarray, list[Scalar]]:
    """Codes into the distinct values, first-seen order; C-level dict and map calls only."""
    distinct = list(dict.fromkeys(values))
    # True == 1 and False == 0 as dict keys: a column mixing booleans with numbers must be keyed by its strings.
    if any(isinstance(v, bool) for v in distinct) and any(not isinstance(v, bool | str | None) for v in distinct):
        return _factorise([None if v is None else canonical(v) for v in values])
    index = dict(zip(distinct, range(len(distinct)), strict=True))
    return np.fromiter(map(index.__getitem__, values), np.int64, len(values)), distinct


def _build_column(
    node_type: str, key: str, positions: np.ndarray, value_list: list[Scalar]
) -> AttributeColumn | None:
    raw_codes, distinct = _factorise(value_list)
    if None in distinct:  # null or missing: the node does not have the attribute
        missing = distinct.index(None)
        present = raw_codes != missing
        positions, raw_codes = positions[present], raw_codes[present]
        raw_codes -= raw_codes > missing
        distinct.pop(missing)
    if not distinct:
        return None
    # Several stored spellings ("HER2", "her2 ") may share one normalised value: re-code onto the normalised vocab.
    shown = [v if isinstance(v, str) else canonical(v) for v in distinct]
    norms = [" ".join(v.split()).casefold() for v in shown]  # `normalise`, inlined: it runs per distinct value
    lookup = {norm: i for i, norm in enumerate(dict.fromkeys(norms))}
    first_spelling = dict(zip(reversed(norms), reversed(shown), strict=True))
    display = [first_spelling[norm] for norm in lookup]
    remap = np.fromiter(map(lookup.__getitem__, norms), np.int32, len(norms))
    codes = remap[raw_codes]
    vocab = list(lookup)
    counts = np.bincount(codes, minlength=len(vocab))
    total = int(positions.shape[0])

    # A large vocabulary whose sample is mostly neither numbers nor dates can reach neither majority: skip the
    # per-value parsing (the dearest part of building a column of a million identifiers).
    sample = vocab[:_PARSE_SAMPLE]
    parse_all = len(vocab) <= SMALL_VOCABULARY or sum(
        parse_number(v) is not None or parse_date(v) is not None for v in sample
    ) >= 0.5 * len(sample)
    numbers = np.full(len(vocab), np.nan)
    parsed_dates: list[DateValue | None] = [None] * len(vocab)
    if parse_all:
        parsed_numbers = (parse_number(v) for v in vocab)
        numbers = np.fromiter((np.nan if x is None else x for x in parsed_numbers), np.float64, len(vocab))
        parsed_dates = [parse_date(v) for v in vocab]
    numeric_ok = ~np.isnan(numbers)
    n_numeric = int(counts[numeric_ok].sum())
    date_ok = np.fromiter((d is not None for d in parsed_dates), bool, len(vocab))
    year_ok = np.fromiter(map(is_year, vocab), bool, len(vocab))
    n_dashed = int(counts[date_ok & ~year_ok].sum())
    n_years = int(counts[year_ok].sum())

    separator, share = None, 0.0
    kind: Kind
    if vocab and set(vocab) <= {"true", "false"}:
        kind = "boolean"
    elif n_dashed > 0 and n_dashed + n_years >= _MAJORITY * total:
        kind = "date"
    elif n_numeric == total:
        kind = "numeric"
    else:
        separator, share = _detect_separator(vocab, counts, total)
        small = len(vocab) <= SMALL_VOCABULARY and (len(vocab) <= 20 or 2 * len(vocab) <= total)
        if separator is not None and share >= LIST_MIN_SHARE:
            kind = "list"
        elif small:
            kind = "categorical"
        elif n_numeric >= _MAJORITY * total:
            kind = "numeric"
        else:
            kind = "text"

    numeric = None
    if kind in ("numeric", "categorical") and n_numeric:
        per_entry = numbers[codes]
        keep = ~np.isnan(per_entry)
        values = per_entry[keep]
        years_like = bool(np.all((values == np.floor(values)) & (values >= 1000) & (values <= 2999)))
        numeric = NumericColumn(positions[keep], values, years_like)
    dates = _date_column(positions, codes, parsed_dates) if kind == "date" else None
    return AttributeColumn(
        node_type, key, kind, positions, codes, vocab, display, lookup, separator, numeric, dates
    )


def _date_column(positions: np.ndarray, codes: np.ndarray, parsed: list[DateValue | None]) -> DateColumn:
    rows = [(d.granularity, d.year, d.month_key, d.day_key) if d else (-1, 0, 0, 0) for d in parsed]
    per_entry = np.array(rows, dtype=np.int64).reshape(-1, 4)[codes]
    keep = per_entry[:, 0] >= 0
    kept = per_entry[keep]
    return DateColumn(
        positions[keep], kept[:, 0].astype(np.int8), kept[:, 1].copy(), kept[:, 2].copy(), kept[:, 3].copy()
    )


def _detect_separator(vocab: list[str], counts: np.ndarray, total: int) -> tuple[str | None, float]:
    """The separator that splits this column's values into short items, and the share of values holding it.

    Short items (few words on average) make a list ("ECE-2, ECE2"); long ones make prose that merely contains
    commas. Judged on a sample of values, so the cost stays linear in the vocabulary.
    """
    best, best_share = None, 0.0
    for sep in SEPARATORS:
        has = np.fromiter((sep in v for v in vocab), dtype=bool, count=len(vocab))
        share = float(counts[has].sum()) / total if total else 0.0
        if share > best_share:
            best, best_share = sep, share
    if best is None:
        return None, 0.0
    sample = [v for v in vocab if best in v][:500]
    items = [item for v in sample for item in split_items(v, best)]
    mean_words = sum(len(item.split()) for item in items) / max(1, len(items))
    return (best if mean_words <= _ITEM_WORDS[best] else None), best_share
