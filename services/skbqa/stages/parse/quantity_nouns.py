"""A number said with a noun that names no attribute: "fewer than one million *people*", "over 50 million
*inhabitants*", "at least 300 *speakers*" (encoder parser, no LLM).

The noun says what is counted, not the attribute's name, so no label matches it (`attribute_mentions` reads
"a *population* under one million"). The attribute compared is the numeric one of the answer's type whose name
means the noun most (embedding cosine of the noun and the attribute's name), when
- the data lets the comparison separate the type's nodes (some values on each side of the number: a country's
  "numeric code" never reaches one million, so "one million people" cannot compare it), and
- its meaning is close enough (MIN_COSINE) and clearly closer than any other attribute's (MIN_MARGIN).
A noun that names one of the schema's types is no such quantity ("more than 3 *languages*": a count of nodes).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np

from skbqa.query.encoder import Encoder
from skbqa.query.structured import AttributeConstraint, Operator
from skbqa.skb.schema import Schema
from skbqa.stages.parse.attribute_mentions import COMPARISONS
from skbqa.stages.parse.question_text import FUNCTION_WORDS, QuestionText
from skbqa.stages.parse.type_mentions import plural
from skbqa.stages.parse.written_numbers import number_at
from skbqa.stores.attributes.catalog import AttributeCatalog
from skbqa.stores.attributes.values import humanise

MIN_COSINE = 0.4
MIN_MARGIN = 0.05
MAX_NOUN_WORDS = 2
# "=" comparisons ("of", "in") and time words ("before", "since") say a value or a date, not an amount of something
_AMOUNT_OPERATORS: frozenset[Operator] = frozenset({">", ">=", "<", "<="})
_TIME_WORDS = frozenset({"after", "before", "since", "until"})


class QuantityNouns:
    def __init__(self, catalog: Callable[[], AttributeCatalog], schema: Schema, symbol: str = "y") -> None:
        self._catalog = catalog
        self._symbol = symbol
        words = {w for t in schema.node_types for w in t.name.replace("_", " ").lower().split()}
        self._type_words = frozenset(words | {plural(w) for w in words})
        self._labels: dict[str, tuple[list[str], list[np.ndarray], np.ndarray | None]] = {}
        self._lock = threading.Lock()

    def __call__(
        self, text: QuestionText, node_type: str, encoder: Encoder, taken: list[AttributeConstraint]
    ) -> list[AttributeConstraint]:
        """Constraints for the amounts the question states with a noun (each claimed in `text`); none on an
        attribute already constrained (`taken`)."""
        found: list[AttributeConstraint] = []
        for start, op, value, noun_start, noun_end in _amounts(text):
            if any(t.lower in self._type_words for t in text.tokens[noun_start:noun_end]):
                continue
            noun = " ".join(t.lower for t in text.tokens[noun_start:noun_end])
            busy = {c.attribute for c in [*taken, *found]}
            key = self._attribute_meant(node_type, noun, op, value, encoder, busy)
            if key is not None:
                found.append(AttributeConstraint(self._symbol, key, op, value))
                text.claim(start, noun_end, "attribute")
        return found

    def _attribute_meant(
        self, node_type: str, noun: str, op: Operator, value: float | int, encoder: Encoder, busy: set[str]
    ) -> str | None:
        keys, columns, vectors = self._numeric_labels(node_type, encoder)
        if vectors is None:
            return None
        fits = [
            k
            for k, (key, values) in enumerate(zip(keys, columns, strict=True))
            if key not in busy and _separates(values, op, value)
        ]
        if not fits:
            return None
        noun_vector = encoder.encode([noun])[0]
        cosines = sorted(((float(vectors[k] @ noun_vector), keys[k]) for k in fits), reverse=True)
        best, key = cosines[0]
        second = cosines[1][0] if len(cosines) > 1 else -1.0
        # the margin is over every numeric attribute, not only those the number fits: "people" must mean
        # population clearly, not merely be the only fit
        others = [float(vectors[k] @ noun_vector) for k, other in enumerate(keys) if other != key]
        second = max([second, *others]) if others else second
        return key if best >= MIN_COSINE and best - second >= MIN_MARGIN else None

    def _numeric_labels(
        self, node_type: str, encoder: Encoder
    ) -> tuple[list[str], list[np.ndarray], np.ndarray | None]:
        with self._lock:
            cached = self._labels.get(node_type)
        if cached is not None:
            return cached
        numeric = [
            c
            for c in self._catalog().columns(node_type)
            if c.kind == "numeric" and c.numeric is not None and not c.numeric.years_like and c.numeric.values.size
        ]
        keys = [c.key for c in numeric]
        values = [c.numeric.values for c in numeric if c.numeric is not None]
        vectors = encoder.encode([humanise(k) for k in keys]) if keys else None
        with self._lock:
            self._labels[node_type] = (keys, values, vectors)
        return keys, values, vectors


def _amounts(text: QuestionText) -> list[tuple[int, Operator, float | int, int, int]]:
    """(start, operator, number, noun start, noun end) of each free "<comparison> <number> <noun>"."""
    words = [t.lower for t in text.tokens]
    found: list[tuple[int, Operator, float | int, int, int]] = []
    index = 0
    while index < len(words):
        match = _amount_at(text, words, index)
        if match is None:
            index += 1
            continue
        found.append(match)
        index = match[4]
    return found


def _amount_at(
    text: QuestionText, words: list[str], index: int
) -> tuple[int, Operator, float | int, int, int] | None:
    for phrase, op in COMPARISONS:
        end = index + len(phrase)
        if op not in _AMOUNT_OPERATORS or phrase[0] in _TIME_WORDS or tuple(words[index:end]) != phrase:
            continue
        if not text.free(index, end):
            continue
        number = number_at(text, end)
        if number is None:
            continue
        value, stop = number
        noun_end = stop
        while (
            noun_end < len(words)
            and noun_end - stop < MAX_NOUN_WORDS
            and words[noun_end].isalpha()
            and words[noun_end] not in FUNCTION_WORDS
            and text.free(noun_end, noun_end + 1)
        ):
            noun_end += 1
        if noun_end > stop and text.free(index, noun_end):
            return index, op, value, stop, noun_end
    return None


def _separates(values: np.ndarray, op: Operator, number: float | int) -> bool:
    """Whether comparing with `number` keeps some of the values and drops others."""
    kept = {
        ">": values > number,
        ">=": values >= number,
        "<": values < number,
        "<=": values <= number,
    }[op]
    return bool(kept.any()) and not bool(kept.all())
