"""An activity named by its verb's -ing form: "what is entailed *by postponing* something", "the result *of
cooking*", "which verbs entail *competing*". Where a knowledge base names its verb nodes by their plain form (a
dictionary's "postpone"), the gerund after a preposition or a verb, with nothing after it but a placeholder (or, as a do-question's
subject, the question's verb: "what does *buying* involve"), names
that node; when the gerund is itself a name ("swimming", an adjective), it names both, and the relation read
from the clause picks. English only; nothing of any one SKB.
"""

from __future__ import annotations

import numpy as np

from skbqa.stages.english import is_base_verb, word_classes
from skbqa.stages.parse.chain_words import PLACEHOLDERS
from skbqa.stages.parse.question_text import QuestionText
from skbqa.stages.parse.relation_verbs import DO_AUXILIARIES
from skbqa.stages.parse.type_mentions import PREPOSITIONS
from skbqa.stores.lexicon import NameLexicon

OBJECT_PLACEHOLDERS = PLACEHOLDERS | {"someone", "somebody", "it", "them"}


def gerund_name(text: QuestionText, i: int, lexicon: NameLexicon) -> tuple[str, np.ndarray] | None:
    """The plain verb token i's gerund names and its nodes, when token i is an -ing word in lower case after a
    preposition or a verb that is no name, followed by a placeholder, the clause's end or (as a do-question's
    subject) the question's verb; None otherwise."""
    word = text.tokens[i].text
    if not (word.islower() and word.endswith("ing")) or i == 0 or not _takes_an_object(text, i - 1):
        return None
    after = i + 1
    if after < len(text) and not text.boundary_before(after) and text.tokens[after].lower in OBJECT_PLACEHOLDERS:
        after += 1
    do_subject = (
        text.tokens[i - 1].lower in DO_AUXILIARIES and after < len(text) and is_base_verb(text.tokens[after].text)
    )
    if after < len(text) and not text.boundary_before(after) and not do_subject:
        return None  # "for *building* packages": a verb with its object, no activity named alone
    from lemminflect import getAllLemmas

    verb = next(iter(getAllLemmas(word).get("VERB", ())), None)
    if verb is None or verb == word:
        return None
    positions = lexicon.positions(verb, original=verb)
    return (verb, positions) if positions.size else None


def _takes_an_object(text: QuestionText, index: int) -> bool:
    """A preposition, or a lower-case verb ("entail") that is no name, at `index`, in the gerund's clause."""
    token = text.tokens[index]
    if text.boundary_before(index + 1):
        return False
    if token.lower in PREPOSITIONS:
        return True
    # a verb not read as a name (names are claimed left to right, so a name before would be claimed by now)
    return token.text.islower() and "VERB" in word_classes(token.lower) and text.claimed[index] is None


def with_verb_nodes(named: np.ndarray, verb: np.ndarray) -> np.ndarray:
    """A gerund that is a name of its own ("swimming") names its nodes, then its plain verb's."""
    return np.concatenate([named, np.setdiff1d(verb, named)])
