"""English words that modify or compare rather than name: "but *only* those …", "*less* than 9", "the *same* as X",
"*more general* terms for X". A node may be called so ("Only", "General") but a question uses them in passing; a
type word right before or after, or a preposition before, still makes them a name (the caller decides).
"""

from __future__ import annotations

from skbqa.stages.english import word_classes
from skbqa.stages.parse.question_text import QuestionText

COMPARATIVES = frozenset({"more", "most", "fewer", "fewest", "less", "least"})
# "the *same* as X", "*other* than X", "as *broad* as": a word between these is compared, not named
COMPARED_BEFORE = frozenset({"the", "as", "so"}) | COMPARATIVES
COMPARED_AFTER = frozenset({"as", "than"})
RESPECT_AFTER = frozenset({"to", "with", "as", "than"})


def only_a_modifier(word: str) -> bool:
    """Whether English reads the word only as an adverb, or an adverb and adjective ("only", "less", "just"), or
    as a comparative of counts ("more", "most"): never what a node is called in passing. Adjectives alone stay
    possible names: "progressive", "congenital" are what a clinical course is called."""
    if word in COMPARATIVES:
        return True
    readings = word_classes(word)
    return "ADV" in readings and readings <= {"ADJ", "ADV"}


def compared(text: QuestionText, index: int) -> bool:
    """Whether the lower-case adjective at `index` is compared: "the *same* as", "*other* than", or after "more" /
    "most" ("*more general* terms for X", "the most *specific* kinds"); or is the respect in which two things are
    compared ("similar in *meaning* to X")."""
    token = text.tokens[index]
    if token.text.islower() and in_respect_of(text, index):
        return True
    if not token.text.islower() or "ADJ" not in word_classes(token.lower) or index == 0:
        return False
    before = text.tokens[index - 1].lower
    after = text.tokens[index + 1].lower if index + 1 < len(text) else ""
    return (before in COMPARED_BEFORE and after in COMPARED_AFTER) or before in COMPARATIVES - {"fewer", "fewest"}


def in_respect_of(text: QuestionText, index: int) -> bool:
    """ "similar in *meaning* to X", "equal in *length* to", "close in *sense* with": the noun between an
    adjective's "in" and its preposition says in what respect, it names no node."""
    if index < 2 or index + 1 >= len(text) or text.tokens[index - 1].lower != "in":
        return False
    return "ADJ" in word_classes(text.tokens[index - 2].lower) and text.tokens[index + 1].lower in RESPECT_AFTER
