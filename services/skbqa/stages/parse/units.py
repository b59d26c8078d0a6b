"""A number said in another unit than the one a type's description gives the attribute in: "installed size in KiB"
makes "under *2 MB*" under 2048 and "more than *200 MB*" more than 204800. Units of data size, length, mass and
time; binary multiples for data sizes (what package tools and file managers mostly mean). A unit of one letter is
read only where the description states it: in a question "m", "s" or "t" are too often something else. English and
SI, nothing of one SKB.
"""

from __future__ import annotations

import re
from dataclasses import replace

from skbqa.query.structured import AttributeConstraint
from skbqa.stages.parse.question_text import QuestionText
from skbqa.stages.parse.spotted import SpottedConstraint


def _with_plurals(units: dict[str, float]) -> dict[str, float]:
    return units | {f"{word}s": size for word, size in units.items() if len(word) > 3}


_SIZES: tuple[dict[str, float], ...] = (
    {"b": 1.0, "byte": 1, "kb": 2**10, "kib": 2**10, "kilobyte": 2**10, "mb": 2**20, "mib": 2**20,
     "megabyte": 2**20, "gb": 2**30, "gib": 2**30, "gigabyte": 2**30, "tb": 2**40, "tib": 2**40,
     "terabyte": 2**40},
    {"mm": 1e-3, "millimetre": 1e-3, "millimeter": 1e-3, "cm": 1e-2, "centimetre": 1e-2, "centimeter": 1e-2,
     "m": 1, "metre": 1, "meter": 1, "km": 1e3, "kilometre": 1e3, "kilometer": 1e3},
    {"mg": 1e-3, "milligram": 1e-3, "g": 1, "gram": 1, "kg": 1e3, "kilogram": 1e3, "t": 1e6, "tonne": 1e6},
    {"ms": 1e-3, "millisecond": 1e-3, "s": 1, "sec": 1, "second": 1, "min": 60, "minute": 60, "h": 3600,
     "hour": 3600, "day": 86400},
)  # fmt: skip
_FAMILIES = tuple(_with_plurals(family) for family in _SIZES)


def unit_label(label: tuple[str, ...], description: str) -> tuple[str, ...] | None:
    """The unit a type's description gives an attribute in ("… installed size *in KiB* …"): a number with it names
    the attribute ("less than 2000 *kib*")."""
    match = re.search(rf"(?<!\w){re.escape(' '.join(label))}\s+in\s+([a-z]+)(?!\w)", description.lower())
    return (match.group(1),) if match else None


def family_of(unit: str | None) -> dict[str, float]:
    """Every unit of the stated unit's kind (one-letter ones aside, but the stated unit itself), with its size."""
    family = next((f for f in _FAMILIES if unit in f), {}) if unit else {}
    return {word: size for word, size in family.items() if len(word) > 1 or word == unit}


def in_stated_unit(hit: SpottedConstraint, text: QuestionText, stated: str | None) -> SpottedConstraint:
    """The spotted comparison with its number converted to the stated unit, when the question says another unit
    of its kind inside the span or right after it (which the span then takes in)."""
    family = family_of(stated)
    value = hit.constraint.value
    if not family or stated is None or isinstance(value, (bool, str, tuple)):
        return hit
    for index in range(hit.start, min(hit.end + 1, len(text))):
        word = text.tokens[index].lower
        if word in family and word != stated:
            if index == hit.end and not text.free(index, index + 1):
                return hit
            converted = value * family[word] / family[stated]
            number = int(converted) if float(converted).is_integer() else converted
            constraint: AttributeConstraint = replace(hit.constraint, value=number)
            return SpottedConstraint(constraint, hit.start, max(hit.end, index + 1))
    return hit
