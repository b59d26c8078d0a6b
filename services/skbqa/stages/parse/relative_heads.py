"""A common noun that heads a relative clause about another name stands for an unnamed node on the way, not for
the node that bears it as a name: "members of *the genus* that the horse belongs to", "cities in *the states* that
make up New England", "the parts of *the structures* containing the brain".

In a knowledge base whose nodes are common nouns (a thesaurus, a taxonomy) "genus" and "state" are names, so the
lexicon links them; but a definite description, "the N that X …", picks out a node by what the clause says of it,
and its N is only a kind. Such a noun is let go as a constant and left for the chain reader as a node of
whichever type the chain fits (`way_nodes`), when the clause has what a relation needs: another name, and a word
the schema states one of its relations with ("belongs", "member", "contain"). A clause that only describes which
sense of N is meant ("the heart that pumps blood") names no relation, and N stays a name.
"""

from __future__ import annotations

from collections.abc import Sequence

from skbqa.stages.english import word_classes
from skbqa.stages.parse.chain_words import RELATIVE_PRONOUNS
from skbqa.stages.parse.constants import Constant
from skbqa.stages.parse.question_text import QuestionText
from skbqa.stages.parse.relation_verbs import states_a_relation
from skbqa.stages.parse.spelling import reads_as_participle
from skbqa.stages.parse.way_nodes import WAY_CLAIM

DETERMINERS = frozenset({"the", "a", "an", "any", "some", "those", "these"})


def release_relative_heads(
    text: QuestionText, constants: Sequence[Constant], relation_stems: set[str]
) -> list[Constant]:
    """The constants without the heads of relative clauses about a later name; each head's words are claimed as
    `WAY_CLAIM`."""
    kept: list[Constant] = []
    for k, constant in enumerate(constants):
        later = [c for c in constants[k + 1 :] if c.start >= constant.end]
        if later and _heads_a_relative(text, constant, later[0], relation_stems):
            text.claim(constant.start, constant.end, WAY_CLAIM)
            continue
        kept.append(constant)
    return kept


def _heads_a_relative(text: QuestionText, head: Constant, named: Constant, relation_stems: set[str]) -> bool:
    written = text.span_text(head.start, head.end)
    # "the *genus* that …", and "*the states* that …" where the lexicon holds the name with its article
    introduced = (head.start > 0 and text.tokens[head.start - 1].lower in DETERMINERS) or (
        head.end - head.start > 1 and text.tokens[head.start].lower in DETERMINERS
    )
    if not written.islower() or not introduced:
        return False  # a proper name, or a noun not introduced as one of a kind ("the *dog* family")
    opener = head.end
    if opener >= named.start or text.boundary_before(opener):
        return False
    word = text.tokens[opener].lower
    # "the genus *that* …", "the structures *containing* …", "the towns *located* in …"
    if not (word in RELATIVE_PRONOUNS or word.endswith("ing") or reads_as_participle(word)):
        return False
    if any(text.boundary_before(i) for i in range(opener + 1, named.end)):
        return False  # the other name is in another clause
    stop = named.end
    while stop < len(text) and not text.boundary_before(stop) and stop - named.end < 4:
        stop += 1
    clause = [i for i in [*range(opener, named.start), *range(named.end, stop)] if text.claimed[i] is None]
    return any(_relation_word(text.tokens[i].lower, relation_stems) for i in clause)


def _relation_word(word: str, relation_stems: set[str]) -> bool:
    """A content word of the clause the schema states a relation with: a verb or a relation's noun ("belongs",
    "member"); function words (pronouns, copulas, articles) have no stems and state none."""
    return (
        word.isalpha() and states_a_relation(word, relation_stems) and bool({"VERB", "NOUN"} & word_classes(word))
    )
