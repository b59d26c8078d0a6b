"""A family of nodes named by the start their codes share, as users write it: "*TLR* genes", "the *SLC*
transporter genes" → the answer's identifier-like attribute (mostly one distinct value per node: a symbol, a
code) starts with that string. The word must be written in capitals right before the answer's type word in the
plural (one word may stand between), be no code itself ("the MAPT genes" name one), start no longer name ("*DNA*
repair genes": the process DNA repair), and several values, but not most, must start with it and go on (a start
most share is a namespace: "GO" of "GO:0008150"). Nothing here is specific to one SKB.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable

from skbqa.query.structured import AttributeConstraint
from skbqa.stages.parse.question_text import FUNCTION_WORDS, QUESTION_WORDS, QuestionText, is_discourse_word
from skbqa.stages.parse.spotted import SpottedConstraint
from skbqa.stages.parse.type_mentions import noun_lemma
from skbqa.stores.attributes.catalog import AttributeCatalog

MIN_FAMILY = 3  # values that start with the prefix and go on
MAX_FAMILY_SHARE = 0.2  # of a column's values: more share the start, it says nothing of the node
MIN_DISTINCT_SHARE = 0.5  # of a column's nodes that have their own value: an identifier, not a category
MAX_PREFIX_CHARS = 8
BETWEEN_WORDS = 1  # "SLC *transporter* genes"


class FamilyPrefixSpotter:
    def __init__(
        self, catalog: AttributeCatalog, symbol: str = "y", is_name: Callable[[str], bool] | None = None
    ) -> None:
        """`is_name`: whether a phrase is some node's name or alias (None: no phrase is)."""
        self._catalog = catalog
        self._symbol = symbol
        self._is_name = is_name
        self._columns: dict[str, list[tuple[str, list[str]]]] = {}  # node type → (key, sorted values)

    def columns(self, node_type: str) -> list[tuple[str, list[str]]]:
        """The type's identifier-like columns (single values, mostly distinct), each with its values sorted."""
        if node_type not in self._columns:
            self._columns[node_type] = [
                (c.key, sorted(c.vocab))
                for c in self._catalog.columns(node_type)
                if c.kind in ("text", "categorical")
                and c.separator is None
                and c.positions.size
                and len(c.vocab) >= MIN_DISTINCT_SHARE * c.positions.size
            ]
        return self._columns[node_type]

    def __call__(self, text: QuestionText, node_type: str) -> list[SpottedConstraint]:
        columns = self.columns(node_type)
        if not columns:
            return []
        if _shouted(text):
            return []  # a question typed in capitals says nothing by its capitals ("WHICH PACKAGES …")
        type_word = node_type.replace("_", " ").split()[-1].lower()
        found: list[SpottedConstraint] = []
        for index, token in enumerate(text.tokens):
            prefix = token.text
            if not (
                2 <= len(prefix) <= MAX_PREFIX_CHARS
                and prefix.isupper()
                and prefix.isalnum()
                and not prefix.isdigit()
                and text.free(index, index + 1)
            ):
                continue
            if index > 0 and _modifies(text, index - 1):
                continue  # "non-coding *RNA* genes", "small nuclear *RNA* genes": a word of a longer kind
            following = [t.lower for t in text.tokens[index + 1 : index + 2 + BETWEEN_WORDS]]
            if not any(noun_lemma(word) == type_word != word for word in following):
                continue  # a plural: "the MAPT *gene*" is one gene
            if self._is_name is not None and any(
                self._is_name(text.span_text(index, end))
                for end in range(index + 2, min(len(text), index + 4) + 1)
            ):
                continue
            if any(_holds(values, prefix.lower()) for _, values in columns):
                continue  # a code of its own ("MAPT genes"): a name, which the constant pass reads
            sizes = [(_family_size(values, prefix.lower()), len(values), key) for key, values in columns]
            # a start most values share is a namespace ("GO" of "GO:0008150"), not a family
            best = max(((n, key) for n, total, key in sizes if n <= MAX_FAMILY_SHARE * total), default=(0, ""))
            if best[0] >= MIN_FAMILY:
                constraint = AttributeConstraint(
                    self._symbol, best[1], "STARTS WITH", prefix, case_insensitive=True
                )
                found.append(SpottedConstraint(constraint, index, index + 1))
        return found


SHOUTED_SHARE = 0.6  # of a question's words of two letters or more written all in capitals


def _shouted(text: QuestionText) -> bool:
    words = [t.text for t in text.tokens if len(t.text) >= 2 and t.text.isalpha()]
    return bool(words) and sum(w.isupper() for w in words) >= SHOUTED_SHARE * len(words)


def _modifies(text: QuestionText, index: int) -> bool:
    """Whether the lower-case word at `index` is a content word that qualifies the next one in one phrase."""
    word = text.tokens[index].lower
    return (
        text.tokens[index].text.islower()
        and word.replace("-", "").isalpha()
        and word not in FUNCTION_WORDS
        and word not in QUESTION_WORDS
        and not is_discourse_word(word)
        and not text.boundary_before(index + 1)
    )


def _holds(values: list[str], value: str) -> bool:
    at = bisect.bisect_left(values, value)
    return at < len(values) and values[at] == value


def _family_size(values: list[str], prefix: str) -> int:
    """How many of the sorted (lower-case) values start with `prefix` and go on past it."""
    low = bisect.bisect_left(values, prefix)
    high = bisect.bisect_left(values, prefix + "\uffff")
    return sum(1 for v in values[low:high] if len(v) > len(prefix))
