"""A common noun's noun, said as an of-phrase: "what are *a computer's parts*" asks what "the parts of a computer"
asks, and the parser reads a relation from the words before a name ("the parts of"), not from the words after it.

Only "the/a/an OWNER's NOUN" is rewritten, where OWNER is one to three content words in lower case and NOUN is
one or two lower-case words that end the phrase (the question's end, punctuation, or a word that starts a new
clause). A phrase that is (the start of) a name of the knowledge base stays as it is ("the devil's advocate",
"Parkinson's disease"), as does an owner with a capital ("asyncio's StreamReader", "France's capital": names
that `possessives` reads). English only; nothing of any one schema.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from skbqa.stages.parse.question_text import FUNCTION_WORDS

_DETERMINERS = ("the", "a", "an")
_MAX_OWNER_WORDS = 3
# The owned noun runs to the phrase's end: punctuation, the question's end, or a word that begins another clause.
_OWNED = re.compile(
    r"['’]s\s+(?P<owned>[a-z][a-z-]*(?:\s+[a-z][a-z-]*)?)(?=\s*(?:[?.!,;:(]|$)|\s+(?:and|or|that|which|who|whose)\b)"
)
_WORD_BEFORE = re.compile(r"([A-Za-z][\w-]*)\s*$")


def of_phrase_for_genitive(question: str, is_name: Callable[[str], bool]) -> str | None:
    """The question with each common noun's noun said as an of-phrase (see the module's doc), or None when it has
    none. `is_name(phrase)`: whether some node is named so."""
    pieces: list[str] = []
    done = 0
    for match in _OWNED.finditer(question):
        owned = match.group("owned")
        if any(word in FUNCTION_WORDS for word in owned.split()):
            continue
        owner_words, determiner_at = _owner(question[done : match.start()])
        if not owner_words or determiner_at < 0:
            continue
        owner = " ".join(owner_words)
        said = f"{owner}'s {owned}"
        if is_name(said) or is_name(f"{owner}'s {owned.split()[0]}"):
            continue
        determiner = question[done + determiner_at : match.start()].split()[0]
        pieces.append(question[done : done + determiner_at])
        pieces.append(f"the {owned} of {determiner.lower()} {owner}")
        done = match.end()
    if not pieces:
        return None
    return "".join(pieces) + question[done:]


def _owner(before: str) -> tuple[list[str], int]:
    """The owner's words at the end of `before` and where its determiner starts there ([], -1 when the words are
    not lower-case content words after "the", "a" or "an")."""
    words: list[str] = []
    rest = before
    for _ in range(_MAX_OWNER_WORDS + 1):
        found = _WORD_BEFORE.search(rest)
        if found is None:
            return [], -1
        word = found.group(1)
        if word.lower() in _DETERMINERS:
            return (words, found.start(1)) if words else ([], -1)
        if not word.islower() or word in FUNCTION_WORDS:
            return [], -1
        words.insert(0, word)
        rest = rest[: found.start(1)]
    return [], -1
