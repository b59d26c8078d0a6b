"""Where a word in a question stands in a name's place, whatever English otherwise makes of it: the object of a
relation's verb or of a preposition, the subject after "does"; and the participles that relate the word before."""

from __future__ import annotations

from skbqa.stages.english import word_classes
from skbqa.stages.parse.chain_words import RELATING_PREPOSITIONS
from skbqa.stages.parse.modifier_words import COMPARATIVES
from skbqa.stages.parse.question_text import QuestionText
from skbqa.stages.parse.relation_labels import PARTICLES
from skbqa.stages.parse.relation_verbs import DO_AUXILIARIES, states_a_relation


def in_a_name_slot(text: QuestionText, index: int, stated_stems: set[str]) -> bool:
    """ "modules that import *re*", "imported by *re*", "what does *re* import": a short word right after a verb
    the schema states a relation with (or after its preposition), or after "does", stands where a name does,
    unless English has it as a verb's particle ("make *up*"); not after any preposition ("… assembly in *GO*")."""
    if index == 0 or text.tokens[index].lower in PARTICLES:
        return False
    before = text.tokens[index - 1].lower
    if before in DO_AUXILIARIES:
        return True
    if before in RELATING_PREPOSITIONS and index >= 2:  # the preposition of a relation's verb ("imported *by*")
        before = text.tokens[index - 2].lower
    return "VERB" in word_classes(before) and states_a_relation(before, stated_stems)


def a_participle(word: str) -> bool:
    """Whether the word is a verb's past participle ("localized", "related", "encoded")."""
    return word.endswith("ed") and "VERB" in word_classes(word)


def object_of_a_preposition(text: QuestionText, index: int) -> bool:
    """ "antonyms of *meagerly*": an adverb after a preposition, ending its clause, modifies nothing: it is named."""
    return (
        index > 0
        and text.tokens[index - 1].lower in ("of", "to", "as", "than", "like")
        and (index + 1 >= len(text) or text.boundary_before(index + 1))
        and text.tokens[index].lower not in COMPARATIVES
    )
