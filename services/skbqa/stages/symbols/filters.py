"""AF-Retriever step 4 hard filters: a symbol's attribute constraints → the node positions that pass them all.

Every constraint that is not a name is a hard filter on the symbol's candidates ("year >= 2012" rules out
earlier papers). A constraint that cannot be applied — unknown attribute, a value the attribute never holds, a
value of the wrong type, an unusable pattern — is returned with its reason instead, so the caller can append it
to a constant's search string (the paper's rule) or drop it for a variable. `name`/`title` equality is never a
filter: it *is* the constant's search string, and is returned as such.

Semantics (Cypher-like, tuned for LLM-written queries):
- All string matching is case-insensitive, whatever `case_insensitive` says: models rarely get case right.
- A node without the attribute fails every constraint on it, `<>` included (Cypher's null semantics).
- `=` on strings: equal after normalising case and whitespace, or equal to one item of a list-valued string
  ("HER2" matches "CD340, HER-2, HER2"); if nothing matches, punctuation is ignored too ("HER-2" ~ "her2").
  Numbers compare numerically however stored (17 = "17" = "17.0"); dates compare as dates (below).
  `IN` is any of; `<>` is "has the attribute and not =".
- `<`, `<=`, `>`, `>=`: numerically, or as dates on date attributes; a text value has no order → not applied.
- Dates ("YYYY", "YYYY-MM", "YYYY-MM-DD") compare at the coarser of the two granularities: against full dates,
  `>= 2012` keeps 2012-01-05, `> 2012` drops all of 2012, `= 2012` keeps all of 2012 (and likewise for a full
  date against year-only values). A full date against a numeric year attribute compares on its year.
- `CONTAINS` / `STARTS WITH` / `ENDS WITH`: case-insensitive substring tests on the stored string (STARTS/ENDS
  also on each list item), and on the pseudo-attributes `name`/`title` (the node name) and `text`.
- `=~`: a case-insensitive full match (Cypher semantics) of a pattern of at most 200 characters; patterns
  that do not compile or nest quantifiers (`(a+)+`, the catastrophic-backtracking shape) are not applied, and
  a pattern is only run on the distinct values of the symbol's type (or its nodes' names/texts).
- `=`, `IN`, `CONTAINS`, `STARTS WITH`, `ENDS WITH` and `=~` that match no node of the attribute at all are
  "value unavailable in the SKB" → not applied; an empty range (`year > 2100`) is a real, empty answer.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from skbqa.query.structured import AttributeConstraint
from skbqa.query.structured import Scalar as QueryScalar
from skbqa.stores.attributes.catalog import AttributeCatalog
from skbqa.stores.attributes.columns import AttributeColumn, DateColumn
from skbqa.stores.attributes.values import (
    DateValue,
    canonical,
    humanise,
    loose,
    normalise,
    parse_date,
    parse_number,
)
from skbqa.stores.nodes import NodeTable

Reason = Literal["name", "unknown_attribute", "unknown_value", "value_mismatch", "bad_pattern"]

MAX_PATTERN_CHARS = 200
NAME_ATTRIBUTES = frozenset({"name", "title"})  # plus each node type's `name_attr`
TEXT_ATTRIBUTE = "text"
_MATCHING_OPS = frozenset({"=", "IN", "CONTAINS", "STARTS WITH", "ENDS WITH", "=~"})
_RANGE_OPS: dict[str, Callable[[np.ndarray, np.ndarray | int | float], np.ndarray]] = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "=": operator.eq,
}
_INLINE_FLAGS = re.compile(r"\(\?[aiLmsux]+\)")
# A group holding a quantifier, itself quantified: the shape behind catastrophic backtracking.
_NESTED_QUANTIFIER = re.compile(r"\((?:[^()\\]|\\.)*[+*}](?:[^()\\]|\\.)*\)\s*(?:[+*]|\{\d*,)")
_REGEX_SYNTAX = re.compile(r"\(\?[a-zA-Z]+\)|[.*+?^$()\[\]{}|\\]")


@dataclass(frozen=True)
class Applied:
    constraint: AttributeConstraint
    key: str  # the stored attribute key it was applied to, or "name" / "text"
    matched: int  # nodes passing this constraint alone


@dataclass(frozen=True)
class NotApplied:
    constraint: AttributeConstraint
    reason: Reason
    detail: str

    @property
    def search_text(self) -> str:
        """What to append to a constant's search string: the value for a name, "attribute value" otherwise."""
        c = self.constraint
        values = c.value if isinstance(c.value, tuple) else (c.value,)
        shown = " ".join(canonical(v) for v in values)
        if c.op == "=~":
            shown = " ".join(_REGEX_SYNTAX.sub(" ", shown).split())
        if self.reason == "name":
            return shown
        label = humanise(c.attribute)
        if c.op in _MATCHING_OPS:
            return f"{label} {shown}"
        return f"{label} {'not' if c.op == '<>' else c.op} {shown}"


@dataclass(frozen=True)
class FilterResult:
    positions: (
        np.ndarray | None
    )  # sorted unique int64 positions passing every applied constraint; None: none applied
    applied: tuple[Applied, ...]
    not_applied: tuple[NotApplied, ...]

    @property
    def search_terms(self) -> list[str]:
        return [n.search_text for n in self.not_applied]


def apply_constraints(
    catalog: AttributeCatalog,
    constraints: Sequence[AttributeConstraint],
    node_type: str | None,
    nodes: NodeTable | None = None,
) -> FilterResult:
    """Apply one symbol's constraints (see the module docstring for the semantics).

    `node_type` restricts every filter to that type's nodes; None (or a type the schema lacks) means any type.
    `nodes` supplies names and texts for the pseudo-attributes; by default the catalog's own table.
    """
    table = nodes if nodes is not None else catalog.nodes
    type_name = catalog.known_type(node_type)
    names = set(NAME_ATTRIBUTES)
    names.update(t.name_attr.casefold() for t in table.schema.node_types if type_name in (None, t.name))
    result: np.ndarray | None = None
    applied: list[Applied] = []
    not_applied: list[NotApplied] = []
    for constraint in constraints:
        outcome = _apply_one(catalog, table, type_name, names, constraint)
        if isinstance(outcome, NotApplied):
            not_applied.append(outcome)
            continue
        key, passing = outcome
        applied.append(Applied(constraint, key, int(passing.shape[0])))
        result = passing if result is None else np.intersect1d(result, passing, assume_unique=True)
    return FilterResult(result, tuple(applied), tuple(not_applied))


def _apply_one(
    catalog: AttributeCatalog, table: NodeTable, type_name: str | None, names: set[str], c: AttributeConstraint
) -> tuple[str, np.ndarray] | NotApplied:
    values = c.value if isinstance(c.value, tuple) else (c.value,)
    if not values or (len(values) > 1 and c.op not in ("=", "IN", "<>")):
        return NotApplied(c, "value_mismatch", f"{c.op} needs exactly one value")
    pattern: re.Pattern[str] | None = None
    if c.op == "=~":
        compiled = _compile(values[0])
        if isinstance(compiled, str):
            return NotApplied(c, "bad_pattern", compiled)
        pattern = compiled

    attribute = c.attribute.strip().casefold()
    if attribute in names or attribute == TEXT_ATTRIBUTE:
        pseudo = "text" if attribute == TEXT_ATTRIBUTE and attribute not in names else "name"
        if pseudo == "name" and c.op in ("=", "IN"):
            return NotApplied(c, "name", "name equality is the constant's search string")
        strings = table.names if pseudo == "name" else table.texts
        passing = _on_strings(strings, catalog.type_positions(type_name), c.op, values, pattern)
        if passing is None:
            return NotApplied(c, "value_mismatch", f"{c.op} does not apply to the node {pseudo}")
        if passing.size == 0 and c.op in _MATCHING_OPS:
            return NotApplied(c, "unknown_value", f"no node {pseudo} matches")
        return pseudo, passing

    key = catalog.resolve_attribute(type_name, c.attribute)
    if key is None:
        return NotApplied(
            c, "unknown_attribute", f"no attribute like '{c.attribute}' on {type_name or 'any type'}"
        )
    parts = [_on_column(column, c.op, values, pattern) for column in catalog.columns_for(type_name, key)]
    found = [p for p in parts if p is not None]
    if not found:
        return NotApplied(c, "value_mismatch", f"{c.op} {values!r} does not fit attribute '{key}'")
    passing = _union(found)
    if passing.size == 0 and c.op in _MATCHING_OPS:
        return NotApplied(c, "unknown_value", f"attribute '{key}' never holds {values!r}")
    return key, passing


def _compile(value: QueryScalar) -> re.Pattern[str] | str:
    """The compiled pattern, or why it is refused."""
    if not isinstance(value, str):
        return "a regular expression must be a string"
    if len(value) > MAX_PATTERN_CHARS:
        return f"pattern longer than {MAX_PATTERN_CHARS} characters"
    # Matching is always case-insensitive; inline flags are dropped (Python rejects them past the start).
    text = _INLINE_FLAGS.sub("", value)
    if _NESTED_QUANTIFIER.search(text):
        return "nested quantifiers (catastrophic backtracking)"
    risk = _backtracking_risk(text)
    if risk is not None:
        return f"{risk} (catastrophic backtracking)"
    try:
        return re.compile(text, re.IGNORECASE | re.DOTALL)
    except re.error as exc:
        return f"invalid pattern: {exc}"


_BOUNDS = re.compile(r"\{(\d*)(,?)(\d*)\}")
_GROUP_PREFIX = re.compile(r"\(\?(?:[:=!]|<[=!]|P<\w+>|[aiLmsux]+[:)])")
_LONG_RANGE = 10  # `{m,n}` with n - m above this backtracks like an unbounded repetition


def _backtracking_risk(pattern: str) -> str | None:
    """Why `pattern` could take exponential or high-polynomial time in Python's backtracking `re`, else None.

    Conservative, refusing the shapes behind catastrophic backtracking: a repeated group (`(a|a)*`, `((a+))+`,
    `(.*a){8}`: nested or overlapping repetition), two unbounded repetitions with nothing mandatory between them
    (`.*.*x`, `\\w+\\s*\\w+`: polynomial of their number's degree; groups and `|` do not separate them), and
    backreferences. Patterns like `.*graph.*`, `[A-Z]{2,4}\\d+` or `her-?2` pass.
    """
    i, n, run = 0, len(pattern), False  # run: an unbounded repetition since the last mandatory atom
    while i < n:
        c = pattern[i]
        if c == "(":
            if pattern.startswith("(?P=", i):
                return "a backreference"
            prefix = _GROUP_PREFIX.match(pattern, i)
            i = prefix.end() if prefix else i + 1
            continue
        if c == ")":
            if i + 1 < n and (pattern[i + 1] in "*+" or _BOUNDS.match(pattern, i + 1)):
                return "a repeated group"
            i += 1
            continue
        if c in "|^$":
            i += 1
            continue
        if c == "\\":
            if i + 1 < n and pattern[i + 1] in "123456789":
                return "a backreference"
            end = i + 2
        elif c == "[":
            end = i + 1
            end += pattern[end : end + 1] == "^"
            end += pattern[end : end + 1] == "]"
            while end < n and pattern[end] != "]":
                end += 2 if pattern[end] == "\\" else 1
            end += 1
        else:
            end = i + 1
        unbounded, mandatory = False, True
        bounds = _BOUNDS.match(pattern, end)
        if end < n and pattern[end] in "*+?":
            unbounded, mandatory = pattern[end] != "?", pattern[end] == "+"
            end += 1
        elif bounds:
            low, comma, high = bounds.groups()
            unbounded = bool(comma) and (not high or int(high) - int(low or 0) > _LONG_RANGE)
            mandatory = int(low or 0) > 0
            end = bounds.end()
        if end < n and pattern[end] in "?+":  # lazy / possessive
            end += 1
        if unbounded and run:
            return "two unbounded repetitions in a row"
        if unbounded:
            run = True
        elif mandatory:
            run = False
        i = end
    return None


def _union(parts: Sequence[np.ndarray]) -> np.ndarray:
    if len(parts) == 1:
        return parts[0]
    return np.unique(np.concatenate(parts)).astype(np.int64)


# ------------------------------------------------------------------------------------------ on a column


def _on_column(
    col: AttributeColumn, op: str, values: tuple[QueryScalar, ...], pattern: re.Pattern[str] | None
) -> np.ndarray | None:
    """Positions of the column passing `op`; None when the value's type does not fit the column."""
    if op in ("=", "IN", "<>"):
        equal = _union([_equal(col, v) for v in values])
        return np.setdiff1d(col.positions, equal, assume_unique=True) if op == "<>" else equal
    if op in _RANGE_OPS:
        return _compare(col, op, values[0])
    if pattern is not None:
        codes = [i for i, s in enumerate(col.display) if pattern.fullmatch(s)]
        codes += [c for shown, cs in col.items.values() if pattern.fullmatch(shown) for c in cs]
        return col.positions_of(codes)
    test = _substring_test(op, values[0])
    if test is None:
        return None
    codes = [i for i, s in enumerate(col.vocab) if test(s)]
    if op != "CONTAINS":  # a whole value contains whatever its items contain
        codes += [c for item, (_, cs) in col.items.items() if test(item) for c in cs]
    return col.positions_of(codes)


def _equal(col: AttributeColumn, value: QueryScalar) -> np.ndarray:
    text = canonical(value)
    norm = normalise(text)
    codes: list[int] = []
    if (code := col.lookup.get(norm)) is not None:
        codes.append(code)
    if col.separator is not None and norm in col.items:
        codes.extend(col.items[norm][1])
    if not codes and (key := loose(norm)):
        codes.extend(col.loose_lookup.get(key, ()))
        if col.separator is not None:
            codes.extend(col.loose_items.get(key, ()))
    parts = [col.positions_of(codes)]
    if not isinstance(value, bool):
        number = parse_number(text)
        if col.numeric is not None and number is not None:
            parts.append(col.numeric.positions[col.numeric.values == number])
        date = parse_date(text)
        if col.dates is not None and date is not None:
            parts.append(_compare_dates(col.dates, "=", date))
    return _union(parts)


def _compare(col: AttributeColumn, op: str, value: QueryScalar) -> np.ndarray | None:
    if isinstance(value, bool):
        return None
    text = canonical(value)
    date = parse_date(text)
    if col.dates is not None and date is not None:
        return _compare_dates(col.dates, op, date)
    numeric = col.numeric
    if numeric is None:
        return None
    number = parse_number(text)
    if number is not None:
        return numeric.positions[_RANGE_OPS[op](numeric.values, number)]
    if date is not None and numeric.years_like:  # "2012-06-01" against a numeric year: compare the year
        return numeric.positions[_RANGE_OPS[op](numeric.values, date.year)]
    return None


def _compare_dates(dates: DateColumn, op: str, value: DateValue) -> np.ndarray:
    """Compare at the coarser granularity of each stored value and the constraint (module docstring)."""
    level = np.minimum(dates.granularity, value.granularity)
    stored = np.where(level == 0, dates.year, np.where(level == 1, dates.month_key, dates.day_key))
    wanted = np.where(level == 0, value.year, np.where(level == 1, value.month_key, value.day_key))
    return dates.positions[_RANGE_OPS[op](stored, wanted)]


def _substring_test(op: str, value: QueryScalar) -> Callable[[str], bool] | None:
    if isinstance(value, bool):
        return None
    needle = normalise(canonical(value))
    if not needle:
        return None  # an empty needle matches everything: no filter
    if op == "CONTAINS":
        return lambda s: needle in s
    if op == "STARTS WITH":
        return lambda s: s.startswith(needle)
    if op == "ENDS WITH":
        return lambda s: s.endswith(needle)
    return None


# ------------------------------------------------------------------------------------ on names and texts


def _on_strings(
    strings: list[str],
    scope: np.ndarray,
    op: str,
    values: tuple[QueryScalar, ...],
    pattern: re.Pattern[str] | None,
) -> np.ndarray | None:
    """The pseudo-attributes: a loop over the symbol's type only (free text has no vocabulary to index)."""
    keep: list[int]
    if pattern is not None:
        keep = [p for p in scope.tolist() if pattern.fullmatch(strings[p])]
    elif op in ("=", "IN", "<>"):
        wanted = {normalise(canonical(v)) for v in values if not isinstance(v, bool)}
        if not wanted:
            return None
        negate = op == "<>"
        keep = [p for p in scope.tolist() if (normalise(strings[p]) in wanted) != negate]
    else:
        test = _substring_test(op, values[0])
        if test is None:
            return None
        keep = [p for p in scope.tolist() if test(normalise(strings[p]))]
    return np.asarray(keep, dtype=np.int64)
