"""Verbs in a question that are no names. The schema's own relations' verbs: "are *used* in the field of X",
"adverbs *formed* from X", "… and *mean* nearly the same as X". Where every English word is some node's name (a
dictionary), such a word is still the clause's verb, not a node: the schema states its relations with it, and
the question uses it as one. And the verbs English grammar marks: a relative clause's ("… that *links* against
X") and a do-question's ("what does a knife *consist* of").
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from functools import lru_cache

from skbqa.skb.schema import EdgeType
from skbqa.stages.english import is_base_verb, word_classes
from skbqa.stages.parse.chain_words import RELATING_PREPOSITIONS, RELATIVE_PRONOUNS
from skbqa.stages.parse.modifier_words import in_respect_of
from skbqa.stages.parse.question_text import FUNCTION_WORDS, QuestionText
from skbqa.stages.parse.relations import stems
from skbqa.stages.parse.schema_examples import without_examples
from skbqa.stages.parse.spelling import reads_as_participle
from skbqa.stages.parse.type_synonyms import COPULAS

# What a relation's verb is followed by when it relates: a preposition ("formed *from*"), or a degree adverb before
# its object ("mean *nearly* the same as").
EXTRA_PREPOSITIONS = frozenset({"against", "upon", "onto", "towards", "toward", "alongside"})
DO_AUXILIARIES = frozenset({"do", "does", "did"})
MAX_DO_SUBJECT_WORDS = 5
_ARTICLES = frozenset({"a", "an", "the"})
DEGREE_ADVERBS = frozenset({"nearly", "roughly", "almost", "approximately", "exactly", "closely", "directly"})


def stated_stems(edges: Iterable[EdgeType]) -> set[str]:
    """The stems an edge's name and description state it with; examples, in parentheses ("dog -> canine") or
    introduced ("e.g. dog is in noun.animal"), are nodes, not the relation's words."""
    return set().union(
        *(stems(e.name + " " + without_examples(re.sub(r"\([^)]*\)", " ", e.description))) for e in edges)
    )


def states_a_relation(word: str, relation_stems: set[str]) -> bool:
    """Whether every stem of the word is one the schema states its relations with ("*meronyms*" for a part
    meronymy): such a word, written as the schema writes it, is no misspelt name."""
    own = stems(word)
    return bool(own) and own <= relation_stems


@lru_cache(maxsize=4096)
def verb_lemma(word: str) -> str:
    """The verb's plain form ("formed" → "form"), where the stemmer leaves the inflection ("forme")."""
    from lemminflect import getAllLemmas

    lemmas = getAllLemmas(word).get("VERB")
    return lemmas[0].lower() if lemmas else word


def relates(text: QuestionText, index: int, relation_stems: set[str]) -> bool:
    """Whether the lower-case word at `index` is a verb of the schema's relations used as one: after a copula ("are
    *used* …"), or before a preposition or degree adverb ("*formed* from", "*mean* nearly"); or any past participle
    before a preposition ("*cross-referenced* with"); or a word of a relation before another ("*part* meronyms").
    After a relative pronoun, `ConstantSpotter` decides: "books that *quote* cites" names a book."""
    token = text.tokens[index]
    word = token.lower
    if not token.text.islower():
        return False
    before = text.tokens[index - 1].lower if index > 0 else ""
    after = text.tokens[index + 1].lower if index + 1 < len(text) and not text.boundary_before(index + 1) else ""
    if (
        after
        and "NOUN" in word_classes(word)  # "*formed* words": a participle before a noun modifies it
        and states_a_relation(word, relation_stems)
        and states_a_relation(after, relation_stems)
        and before not in RELATIVE_PRONOUNS  # "books that *quote* cites": a name, the subject of a verb
    ):
        return True  # "*part* meronyms", "*member* meronyms": a word of one relation's name before another's
    if after == "in" and index + 2 < len(text) and in_respect_of(text, index + 2):
        return states_a_relation(word, relation_stems)  # "*similar* in meaning to X" says "similar to X"
    if "VERB" not in word_classes(word):
        return False
    if after in RELATING_PREPOSITIONS and reads_as_participle(word):
        return True  # "*cross-referenced* with X", "*located* in X": any schema's relation, said as a participle
    if not _verb_states_a_relation(word, relation_stems):
        return False
    return before in COPULAS or after in RELATING_PREPOSITIONS or after in DEGREE_ADVERBS


def verb_of_relative_clause(text: QuestionText, index: int) -> bool:
    """ "… that *links* against libnet1": a lower-case verb right after a relative pronoun, followed by a
    preposition or an article, is the clause's verb (in "… that *curl* depends on" a verb follows: the word is
    the clause's subject, a name)."""
    if index == 0 or text.tokens[index - 1].lower not in RELATIVE_PRONOUNS or index + 1 >= len(text):
        return False
    if not text.tokens[index].text.islower():
        return False
    following = text.tokens[index + 1].lower
    if following not in FUNCTION_WORDS and following not in EXTRA_PREPOSITIONS:
        return False
    return "VERB" in word_classes(text.tokens[index].lower)


def verb_after_do_subject(text: QuestionText, index: int) -> bool:
    """ "what does a knife *consist* of", "what does trading *involve*": a lower-case verb in its base form after
    "does" and a subject is the question's verb, not a name."""
    word = text.tokens[index]
    if not word.text.islower() or not is_base_verb(word.lower):
        return False
    for after in range(index, max(0, index - 1 - MAX_DO_SUBJECT_WORDS), -1):
        if text.boundary_before(after):
            return False
        if text.tokens[after - 1].lower in DO_AUXILIARIES:
            # a subject between ("does *a bank* have"; in "does a *bank* …" the word is the subject)
            return any(t.lower not in _ARTICLES for t in text.tokens[after:index])
    return False


def verb_after_type_word(
    text: QuestionText, index: int, relation_stems: set[str], is_type_word: Callable[[str], bool]
) -> bool:
    """ "which verbs *entail* competing", "genes *encode* …": a lower-case verb the schema states a relation with,
    right after a word for a type, is a reduced relative clause's verb, not a name."""
    token = text.tokens[index]
    if index == 0 or not token.text.islower() or "VERB" not in word_classes(token.lower):
        return False
    if text.boundary_before(index) or not is_type_word(text.tokens[index - 1].lower):
        return False
    return _verb_states_a_relation(token.lower, relation_stems)


def _verb_states_a_relation(word: str, relation_stems: set[str]) -> bool:
    """Whether the verb, as written or in its plain form ("formed" → "form"), states one of the relations."""
    return states_a_relation(word, relation_stems) or states_a_relation(verb_lemma(word), relation_stems)
