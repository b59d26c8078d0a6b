"""Yes-or-no attributes named by their own words, as users do: "maintainers that are *teams*" (is_team),
"packages flagged *build-essential*" (build_essential), "processes with *no definition*" (has_definition). The
attribute's words are its name without an "is"/"has" prefix; a free run of them (the last in any inflection)
asks for the nodes where it holds, and a negation just before it ("*not* teams", "*no* GO definition",
"*without* a definition", "*non*-essential") for the nodes where it does not. Nothing here is specific to one SKB:
the columns and their stored values come from the attribute catalog.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from skbqa.query.structured import AttributeConstraint
from skbqa.stages.parse.question_text import QuestionText
from skbqa.stages.parse.spotted import SpottedConstraint
from skbqa.stages.parse.type_mentions import PREPOSITIONS, noun_forms
from skbqa.stores.attributes.catalog import AttributeCatalog

PREFIXES = ("is_", "has_", "have_", "can_")
NEGATIONS = frozenset({"not", "no", "non", "without", "never", "lacking", "lacks", "lack", "nor", "neither"})
NEGATION_WINDOW = 3  # "not *teams*", "no GO *definition*", "without a *definition*"
TRUE_VALUES = ("true", "yes", "1")
FALSE_VALUES = ("false", "no", "0")


@dataclass(frozen=True)
class BooleanColumn:
    key: str
    forms: tuple[tuple[str, ...], ...]  # word sequences that name it, longest first
    true: str  # the stored spelling of "holds"
    false: str | None  # of "does not hold", when the column stores one


class BooleanSpotter:
    def __init__(
        self, catalog: AttributeCatalog, symbol: str = "y", is_name: Callable[[str], bool] | None = None
    ) -> None:
        """`is_name`: whether a phrase is some node's name ("depends on *build-essential*" names a package)."""
        self._catalog = catalog
        self._symbol = symbol
        self._is_name = is_name
        self._columns: dict[str, list[BooleanColumn]] = {}

    def columns(self, node_type: str) -> list[BooleanColumn]:
        if node_type not in self._columns:
            found = []
            for column in self._catalog.columns(node_type):
                if column.kind != "boolean":
                    continue
                stored = {v.lower(): v for v in column.display}
                true = next((stored[v] for v in TRUE_VALUES if v in stored), None)
                if true is None:
                    continue
                false = next((stored[v] for v in FALSE_VALUES if v in stored), None)
                found.append(BooleanColumn(column.key, _forms(column.key), true, false))
            self._columns[node_type] = found
        return self._columns[node_type]

    def __call__(self, text: QuestionText, node_type: str) -> list[SpottedConstraint]:
        found: list[SpottedConstraint] = []
        words = [t.lower for t in text.tokens]
        used: set[int] = set()
        # the longest names first: "build-essential" is build_essential, not also essential
        for column in sorted(self.columns(node_type), key=lambda c: -max(map(len, c.forms), default=0)):
            hit = _first_free(text, words, column.forms, used)
            if hit is None:
                continue
            start, end = hit
            used.update(range(start, end))
            if self._names_a_node(text, words, start, end) or _inside_a_word(text, start, end):
                continue
            window = words[max(0, start - NEGATION_WINDOW) : start]
            negated = bool(NEGATIONS & set(window))
            if not negated:
                constraint = AttributeConstraint(self._symbol, column.key, "=", column.true)
            elif column.false is not None:
                constraint = AttributeConstraint(self._symbol, column.key, "=", column.false)
            else:  # only "true" is stored: the others lack the flag
                constraint = AttributeConstraint(self._symbol, column.key, "<>", column.true)
            negation_start = next((start - len(window) + k for k, w in enumerate(window) if w in NEGATIONS), start)
            found.append(SpottedConstraint(constraint, negation_start if negated else start, end))
        return found

    def _names_a_node(self, text: QuestionText, words: list[str], start: int, end: int) -> bool:
        """A node's name as the object of a preposition ("depends on *build-essential*") is that node, not the
        flag ("packages flagged build-essential", "essential packages")."""
        return (
            self._is_name is not None
            and start > 0
            and words[start - 1] in PREPOSITIONS
            and self._is_name(text.span_text(start, end))
        )


def _inside_a_word(text: QuestionText, start: int, end: int) -> bool:
    """ "crossbuild-*essential*": joined to a word before or after by a hyphen, a part of a longer word."""
    return (start > 0 and text.gap_before(start) == "-") or (end < len(text) and text.gap_before(end) == "-")


def _forms(key: str) -> tuple[tuple[str, ...], ...]:
    """ "is_team" → ("team",), ("teams",); "build_essential" → ("build", "essential")."""
    name = key.lower()
    for prefix in PREFIXES:
        if name.startswith(prefix) and len(name) > len(prefix):
            name = name[len(prefix) :]
            break
    words = tuple(w for w in name.split("_") if w)
    if not words:
        return ()
    forms = {(*words[:-1], form) for form in noun_forms(words[-1])} | {words}
    return tuple(sorted(forms, key=len, reverse=True))


def _first_free(
    text: QuestionText, words: list[str], forms: tuple[tuple[str, ...], ...], used: set[int]
) -> tuple[int, int] | None:
    for i in range(len(words)):
        for form in forms:
            end = i + len(form)
            if tuple(words[i:end]) == form and text.free(i, end) and not used & set(range(i, end)):
                return i, end
    return None
