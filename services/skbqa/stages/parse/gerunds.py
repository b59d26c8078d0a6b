"""An activity named by its verb's -ing form: "what is entailed *by postponing* something", "the result *of
cooking*". Where a knowledge base names its verb nodes by their plain form (a dictionary's "postpone"), the gerund
after a preposition, with nothing after it but a placeholder, names that node. English only; nothing of any one SKB.
"""

from __future__ import annotations

import numpy as np

from skbqa.stages.parse.chain_words import PLACEHOLDERS
from skbqa.stages.parse.question_text import QuestionText
from skbqa.stages.parse.type_mentions import PREPOSITIONS
from skbqa.stores.lexicon import NameLexicon

OBJECT_PLACEHOLDERS = PLACEHOLDERS | {"someone", "somebody", "it", "them"}


def gerund_name(text: QuestionText, i: int, lexicon: NameLexicon) -> tuple[str, np.ndarray] | None:
    """The plain verb token i's gerund names and its nodes, when token i is an -ing word in lower case after a
    preposition, followed by a placeholder or the clause's end; None otherwise."""
    word = text.tokens[i].text
    if not (word.islower() and word.endswith("ing")) or i == 0 or text.tokens[i - 1].lower not in PREPOSITIONS:
        return None
    after = i + 1
    if after < len(text) and not text.boundary_before(after) and text.tokens[after].lower in OBJECT_PLACEHOLDERS:
        after += 1
    if after < len(text) and not text.boundary_before(after):
        return None  # "for *building* packages": a verb with its object, no activity named alone
    from lemminflect import getAllLemmas

    verb = next(iter(getAllLemmas(word).get("VERB", ())), None)
    if verb is None or verb == word:
        return None
    positions = lexicon.positions(verb, original=verb)
    return (verb, positions) if positions.size else None
