"""A start, an end or a part of a text attribute said outright: "genes whose *symbol starts with KRT*", "(symbol
*starting with HLA-DQ*)", "packages whose *name ends with -dev*", "terms whose *name contains development*" →
the attribute STARTS WITH / ENDS WITH / CONTAINS the value, case-insensitively. The attribute is one of the answer
type's text columns named by its own words (or the node's name); the value is the unbroken run of characters after
"with" (or after "contains"). Nothing here is specific to one SKB.
"""

from __future__ import annotations

from skbqa.query.structured import AttributeConstraint, Operator
from skbqa.stages.parse.question_text import QuestionText
from skbqa.stages.parse.spotted import SpottedConstraint
from skbqa.stores.attributes.catalog import AttributeCatalog
from skbqa.stores.attributes.values import humanise

# verb → operator, and whether "with" follows it
VERBS: dict[str, tuple[Operator, bool]] = {
    **{w: ("STARTS WITH", True) for w in ("starts", "start", "starting", "begins", "begin", "beginning")},
    **{w: ("ENDS WITH", True) for w in ("ends", "end", "ending")},
    **{w: ("CONTAINS", False) for w in ("contains", "contain", "containing", "includes", "including")},
}
NAME_KEY = "name"
MAX_VALUE_CHARS = 40


class AffixSpotter:
    def __init__(self, catalog: AttributeCatalog, symbol: str = "y") -> None:
        self._catalog = catalog
        self._symbol = symbol
        self._labels: dict[str, dict[tuple[str, ...], str]] = {}

    def labels(self, node_type: str) -> dict[tuple[str, ...], str]:
        """The words that name each text column of the type ("symbol", "gene symbol"), and "name"."""
        if node_type not in self._labels:
            found: dict[tuple[str, ...], str] = {(NAME_KEY,): NAME_KEY}
            for column in self._catalog.columns(node_type):
                if column.kind in ("text", "categorical") and column.separator is None:
                    found.setdefault(tuple(humanise(column.key).lower().split()), column.key)
            self._labels[node_type] = found
        return self._labels[node_type]

    def __call__(self, text: QuestionText, node_type: str) -> list[SpottedConstraint]:
        labels = self.labels(node_type)
        words = [t.lower for t in text.tokens]
        found: list[SpottedConstraint] = []
        for index, word in enumerate(words):
            if word not in VERBS or not text.free(index, index + 1):
                continue
            op, with_follows = VERBS[word]
            key, label_start = _label_before(words, index, labels)
            if key is None:
                continue
            value_start = index + 1
            if with_follows:
                if value_start >= len(words) or words[value_start] != "with":
                    continue
                value_start += 1
            value_end = _unbroken_end(text, value_start)
            if value_end == value_start or not text.free(label_start, value_end):
                continue
            value = text.span_text(value_start, value_end).strip("'\"")
            if not value or len(value) > MAX_VALUE_CHARS:
                continue
            constraint = AttributeConstraint(self._symbol, key, op, value, case_insensitive=True)
            found.append(SpottedConstraint(constraint, label_start, value_end))
        return found


def _label_before(words: list[str], index: int, labels: dict[tuple[str, ...], str]) -> tuple[str | None, int]:
    """The column named right before the verb ("whose *symbol* starts"), longest name first."""
    for label in sorted(labels, key=len, reverse=True):
        start = index - len(label)
        if start >= 0 and tuple(words[start:index]) == label:
            return labels[label], start
    return None, index


def _unbroken_end(text: QuestionText, start: int) -> int:
    """The end of the run of tokens from `start` with no space between them ("HLA-DQ", "KRT")."""
    if start >= len(text):
        return start
    end = start + 1
    while end < len(text) and text.gap_before(end) and not any(c.isspace() for c in text.gap_before(end)):
        end += 1
    return end
