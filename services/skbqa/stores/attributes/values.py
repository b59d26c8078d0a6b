"""How attribute values and attribute names are read: one place, shared by the catalog and the filters.

SKB attributes are untyped JSON scalars, so both sides must agree on what a value *is*: `17`, `"17"` and `17.0`
are the same number; `"2015"`, `"2015-03"` and `"2015-03-01"` are dates of decreasing granularity; `"a; b"` may
be a list. The catalog parses each *distinct* stored value once with these functions and the filters parse a
constraint's value with the same ones, so a value always compares equal to itself however it was written.
"""

from __future__ import annotations

import datetime as _dt
import re
from typing import NamedTuple

from skbqa.skb.model import Scalar

# Candidate list separators, most specific first; "," is the most ambiguous (prose uses it too).
SEPARATORS = (";", "|", ",")
_NUMBER_START = frozenset("0123456789+-.")
_DATE = re.compile(r"(\d{4})(?:[-/](\d{1,2})(?:[-/](\d{1,2}))?)?(?:[T ]\d{1,2}:\d{2}.*)?", re.ASCII)
_LOOSE = re.compile(r"[\W_]+")


def canonical(value: Scalar) -> str:
    """One string per scalar: booleans as "true"/"false", integral floats without ".0" (17.0 → "17")."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def normalise(text: str) -> str:
    """The equality key of a string value: case-folded, trimmed, inner whitespace collapsed."""
    return " ".join(text.split()).casefold()


def loose(text: str) -> str:
    """A fallback equality key that also ignores punctuation ("HER-2" ~ "her2", "protein coding" ~ "protein-coding")."""
    return _LOOSE.sub("", text.casefold())


def parse_number(text: str) -> float | None:
    """A finite number written as a plain decimal or exponent ("17", "-3.5", "1e3"); None otherwise."""
    text = text.strip()
    # The first-character test keeps the common non-numeric case free of exception handling.
    if not text or text[0] not in _NUMBER_START or "_" in text:
        return None
    try:
        number = float(text)
    except ValueError:
        return None
    return number if number == number and abs(number) != float("inf") else None


class DateValue(NamedTuple):
    """A calendar value at its written granularity: 0 = year, 1 = month, 2 = day.

    `month_key` and `day_key` are only meaningful at granularity ≥ 1 and 2; comparisons happen at the coarser of
    the two granularities involved (see `skbqa.stages.symbols.filters`).
    """

    granularity: int
    year: int
    month_key: int  # year * 12 + month - 1
    day_key: int  # proleptic Gregorian ordinal


def parse_date(text: str) -> DateValue | None:
    """ "YYYY", "YYYY-MM", "YYYY-MM-DD" (also with "/" or a trailing time); impossible days fall back to the month."""
    text = text.strip()
    if len(text) < 4 or not text[:4].isdigit() or (len(text) > 4 and text[4] not in "-/"):
        return None  # the common non-date case, without the regex
    match = _DATE.fullmatch(text)
    if match is None:
        return None
    year = int(match.group(1))
    if year < 1:
        return None
    if match.group(2) is None:
        return DateValue(0, year, year * 12, 0)
    month = int(match.group(2))
    if not 1 <= month <= 12:
        return None
    month_key = year * 12 + month - 1
    if match.group(3) is None:
        return DateValue(1, year, month_key, 0)
    try:
        day_key = _dt.date(year, month, int(match.group(3))).toordinal()
    except ValueError:
        return DateValue(1, year, month_key, 0)
    return DateValue(2, year, month_key, day_key)


def is_year(text: str) -> bool:
    """A bare four-digit year: a date of year granularity when it sits in a date column."""
    return len(text) == 4 and text.isdigit() and text[0] != "0"


def split_items(text: str, separator: str) -> list[str]:
    return [item for item in (part.strip() for part in text.split(separator)) if item]


def humanise(key: str) -> str:
    """`gene_type` / `geneType` / `gene-type` → "gene type": the words a question would use."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", key)
    return " ".join(w for w in re.split(r"[^0-9A-Za-z]+", spaced) if w).lower()


# ----------------------------------------------------------------------------------------- attribute names

_STOPWORDS = frozenset({"of", "the", "a", "an", "in", "on", "at", "for", "by", "with", "to"})
# Generic English abbreviations and near-synonyms only: nothing domain-specific belongs here.
_TOKEN_SYNONYMS = {
    "n": "number",
    "no": "number",
    "nr": "number",
    "num": "number",
    "count": "number",
    "cnt": "number",
    "yr": "year",
    "pub": "publication",
    "publish": "publication",
    "desc": "description",
    "identifier": "id",
    "kind": "type",
    "category": "type",
}


def _stem(word: str) -> str:
    """Crude but symmetric: singular and plural, verb and noun forms end up as the same stem."""
    if len(word) > 4 and word.endswith("ies"):
        word = word[:-3] + "y"
    elif len(word) > 2 and word.endswith("s") and not word.endswith(("ss", "us", "is", "as")):
        word = word[:-1]
    if len(word) > 5 and word.endswith("ing"):  # "founding" / "founded" → "found"
        word = word[:-3]
    elif len(word) > 5 and word.endswith("ed"):
        word = word[:-2]
    if len(word) > 4 and word.endswith("e"):  # "aliases" → "aliase" → "alias", "disease(s)" → "diseas"
        word = word[:-1]
    return word


def name_tokens(name: str) -> tuple[str, ...]:
    """An attribute name as comparable words: camelCase and separators split, plurals and -ed/-ing stemmed,
    abbreviations expanded, filler words dropped ("Year of publication" → ("year", "publication"))."""
    words = humanise(name).split()
    tokens = [_TOKEN_SYNONYMS.get(s, s) for s in (_stem(w) for w in words if w not in _STOPWORDS)]
    return tuple(tokens) if tokens else tuple(words)


def name_match_score(query: tuple[str, ...], key: tuple[str, ...]) -> int:
    """4 same words in order, 3 same words, 2 one name extends the other with the same head noun (last word),
    1 the query adds modifiers to a key with another head, 0 no match.

    Extending is asymmetric on purpose: a query may add modifiers to a key ("chromosome number" → `chromosome`,
    "publication date" → `published`), but a shorter query must share the key's head noun ("year" →
    `publication_year`, never "venue" → `venue_kind`). "publication year" prefers `year` (same head) over
    `published`.
    """
    if not query or not key:
        return 0
    if query == key:
        return 4
    q, k = set(query), set(key)
    if q == k:
        return 3
    same_head = query[-1] == key[-1]
    if (k < q or q < k) and same_head:
        return 2
    if k < q:
        return 1
    return 0
