"""A noun after a demonstrative refers back: "tennis: which nouns are filed under *that topic*?", "zsh — what does
*this package* depend on?". The noun is no constant of its own: the question named what it refers to earlier. And
where a pronoun stands for such a name ("X: what depends on *it*?"). English only; nothing of any one SKB.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from skbqa.stages.parse.constants import Constant
from skbqa.stages.parse.question_text import QuestionText

C = TypeVar("C", bound=Constant)

# Always determiners. "that" and "those" are also relative pronouns ("genes *that* BRCA1 regulates"), so after them
# the noun must end its clause to be read as a reference back.
DEMONSTRATIVES = frozenset({"this", "these"})
AMBIGUOUS_DEMONSTRATIVES = frozenset({"that", "those"})
# Pronouns that stand for a node named earlier ("X: what depends on *it*?", "X genes - where do *their* products …")
REFERRING_PRONOUNS = frozenset({"it", "its", "them", "their", "this", "they"})


def drop_anaphors(text: QuestionText, constants: Sequence[C]) -> list[C]:
    """The constants without the ones that are a common noun (lower case, one word) after a demonstrative, when an
    earlier constant is what it can refer to."""
    kept: list[C] = []
    for constant in constants:
        if kept and _refers_back(text, constant):
            continue
        kept.append(constant)
    return kept


def _refers_back(text: QuestionText, constant: Constant) -> bool:
    if constant.end - constant.start != 1 or constant.start == 0:
        return False
    if not text.tokens[constant.start].text.islower():
        return False  # "that Linux kernel", "this GNOME app": a name
    before = text.tokens[constant.start - 1].lower
    if before in DEMONSTRATIVES:
        return True
    ends_clause = constant.end >= len(text) or text.boundary_before(constant.end)
    return before in AMBIGUOUS_DEMONSTRATIVES and ends_clause


def referring_pronoun(text: QuestionText) -> int | None:
    """Where the question's one free pronoun stands, if it has one."""
    found = [i for i, t in enumerate(text.tokens) if t.lower in REFERRING_PRONOUNS and text.claimed[i] is None]
    return found[0] if len(found) == 1 else None
