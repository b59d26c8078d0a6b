"""Hierarchical codes written as users write them: "EC 3.2.-.-", "EC 2.7.x.x", "EC numbers starting 2.7.10" →
the attribute STARTS WITH "3.2." / "2.7.10.". An attribute is a code column when most of its distinct values are
dot-separated numbers; the question names it by its label or by a distinctive word of it ("ec" of `ec_numbers`),
and gives a code whose missing or wildcard parts ("-", "x", "*") stand for any value. Nothing here is specific to
one SKB: the columns and their labels come from the `AttributeCatalog`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from skbqa.query.structured import AttributeConstraint, Operator
from skbqa.stages.parse.question_text import QuestionText
from skbqa.stages.parse.spotted import SpottedConstraint
from skbqa.stores.attributes.catalog import AttributeCatalog
from skbqa.stores.attributes.values import humanise

_CODE_VALUE = re.compile(r"^\d+(\.\d+)+$")
MIN_CODE_SHARE = 0.8  # of a column's distinct values that must be codes
# Label words that say nothing of which attribute is meant ("EC *numbers*", "Entrez gene *id*").
_GENERIC_LABEL_WORDS = frozenset({"number", "numbers", "id", "ids", "code", "codes", "type", "types", "name"})
# Between the label and the code: "EC numbers *starting with* 2.7", "EC *class* 3.2".
_CODE_LEAD = re.compile(
    r"^[\s:=#(]*(?:(?:numbers?|codes?|class(?:es)?|starting|beginning|begins?|starts?|with|of|in|under)[\s:=#(]+)*"
    r"(\d+(?:\.(?:\d+|[-x*]))*)",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class CodeColumn:
    key: str
    labels: frozenset[str]  # words that name the column on their own
    parts: int  # how many parts a full code has (the most common count)


class CodeValueSpotter:
    def __init__(self, catalog: AttributeCatalog, symbol: str = "y") -> None:
        self._catalog = catalog
        self._symbol = symbol
        self._columns: dict[str, list[CodeColumn]] = {}

    def columns(self, node_type: str) -> list[CodeColumn]:
        if node_type not in self._columns:
            found = []
            for column in self._catalog.columns(node_type):
                items = [v for shown in column.display for v in _items(shown, column.separator)]
                codes = [v for v in items if _CODE_VALUE.match(v)]
                if not items or len(codes) < MIN_CODE_SHARE * len(items):
                    continue
                counts: dict[int, int] = {}
                for code in codes:
                    counts[code.count(".") + 1] = counts.get(code.count(".") + 1, 0) + 1
                label = humanise(column.key).split()
                words = {w for w in label if w not in _GENERIC_LABEL_WORDS} or set(label)
                found.append(CodeColumn(column.key, frozenset(words), max(counts, key=lambda n: counts[n])))
            self._columns[node_type] = found
        return self._columns[node_type]

    def __call__(self, text: QuestionText, node_type: str) -> list[SpottedConstraint]:
        found: list[SpottedConstraint] = []
        for column in self.columns(node_type):
            for index, token in enumerate(text.tokens):
                if token.lower not in column.labels or not text.free(index, index + 1):
                    continue
                match = _CODE_LEAD.match(text.text[token.end :])
                if match is None:
                    continue
                given = match.group(1).split(".")
                known = []
                for part in given:
                    if not part.isdecimal():
                        break
                    known.append(part)
                if not known:
                    continue
                prefix = ".".join(known)
                whole = len(known) == len(given) == column.parts
                value = prefix if whole else prefix + "."
                stop = token.end + match.end(1)
                end = max(i for i, t in enumerate(text.tokens) if t.start < stop) + 1
                if not text.free(index, end):
                    continue
                op: Operator = "=" if whole else "STARTS WITH"
                found.append(
                    SpottedConstraint(AttributeConstraint(self._symbol, column.key, op, value), index, end)
                )
                break
        return found


def _items(shown: str, separator: str | None) -> list[str]:
    return [item.strip() for item in shown.split(separator)] if separator else [shown.strip()]
