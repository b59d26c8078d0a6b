"""Numbers as questions write them: digits ("6.5" is three tokens: 6 . 5), a number word ("more than *one* word"),
and a count said without a comparison before what it counts ("a *single* word", "*two* binaries", "a *nonzero*
frequency"). English, nothing of any one schema.
"""

from __future__ import annotations

from typing import Literal

from skbqa.stages.parse.question_text import QuestionText

NUMBER_WORDS = {
    w: n
    for n, w in enumerate(("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"))
} | {"single": 1}
# A count before what it counts with no comparison: "a *nonzero* corpus frequency" is more than none
NONZERO_WORDS = frozenset({"nonzero", "non-zero", "positive"})
NONE_WORDS = frozenset({"no", "without"})
MAX_DIGITS = 100  # past this many digits it is no attribute value (and int() refuses more than 4,300)
# A scale word after a number multiplies it: "50 *billion* dollars", "one *million* people"
SCALE_WORDS = {
    "hundred": 100, "thousand": 10**3, "million": 10**6, "mn": 10**6, "billion": 10**9, "bn": 10**9,
    "trillion": 10**12,
}  # fmt: skip


def number_at(text: QuestionText, index: int) -> tuple[float | int, int] | None:
    """A number starting at token `index` (with the scale word after it, if any), and the index after it."""
    found = _plain_number_at(text, index)
    if found is None or found[1] >= len(text) or text.tokens[found[1]].lower not in SCALE_WORDS:
        return found
    value = found[0] * SCALE_WORDS[text.tokens[found[1]].lower]
    return (int(value) if float(value).is_integer() else value), found[1] + 1


def _plain_number_at(text: QuestionText, index: int) -> tuple[float | int, int] | None:
    tokens = text.tokens
    if index >= len(tokens):
        return None
    if tokens[index].lower in NUMBER_WORDS:
        return NUMBER_WORDS[tokens[index].lower], index + 1
    # isdecimal, not isdigit: "²" and "①" are digits that int() refuses
    if not tokens[index].text.isdecimal() or len(tokens[index].text) > MAX_DIGITS:
        return None
    end = index + 1
    literal = tokens[index].text
    if (
        end < len(tokens)
        and text.text[tokens[index].end : tokens[end].start] == "."
        and tokens[end].text.isdecimal()
    ):
        literal += "." + tokens[end].text
        end += 1
    return (float(literal) if "." in literal else int(literal)), end


def count_before(text: QuestionText, label_start: int) -> tuple[Literal["=", ">"], int, int] | None:
    """A count right before a label with no comparison word: ("=", n) for "*a single* word", "*two* binaries",
    ("=", 0) for "*no* synonyms", "*without* aliases", (">", 0) for "a *nonzero* frequency"; with the token where it starts."""
    index = label_start - 1
    if index < 0 or not text.free(index, label_start):
        return None
    words = [t.lower for t in text.tokens]
    for at in (index, index - 1):  # "a nonzero *corpus* frequency": a word of the label's own may come between
        if at >= 0 and text.free(at, label_start) and words[at] in NONZERO_WORDS:
            return ">", 0, at
        if at >= 1 and words[at - 1 : at + 1] == ["non", "zero"] and text.free(at - 1, label_start):
            return ">", 0, at - 1
    word = words[index]
    if word in NONE_WORDS:  # "*no* synonyms"
        return "=", 0, index
    if word in NUMBER_WORDS:  # "a single word" keeps its article out of any name
        start = index - 1 if word == "single" and index > 0 and text.tokens[index - 1].lower == "a" else index
        return "=", NUMBER_WORDS[word], start
    return None
