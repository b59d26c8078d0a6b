"""Which role a named node plays in its clause, for the assembler: the clause's words around it, the type word
that types it ("the package X") or does not ("the packages X recommends"), and whether it is the subject of a
relation between two nodes of one type ("… that X depends on", "the dependencies of X", "… regulated by X").
English only; the types and edges come from the schema.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from skbqa.stages.english import word_classes
from skbqa.stages.parse.chain_words import (
    BROADER_NOUNS,
    INVERSE_WORDS,
    NAME_ARTICLES,
    PLACEHOLDERS,
    RELATIVE_PRONOUNS,
    WHOLE_VERBS,
    is_narrower_noun,
    nominal_subject,
)
from skbqa.stages.parse.constants import Constant
from skbqa.stages.parse.question_text import FUNCTION_WORDS, QuestionText, is_discourse_word
from skbqa.stages.parse.relation_labels import EDGE_NAME, LABELLING_NOUN
from skbqa.stages.parse.relations import stems
from skbqa.stages.parse.spelling import reads_as_participle
from skbqa.stages.parse.type_mentions import PREPOSITIONS, TypeMention, TypeVocabulary, noun_lemma
from skbqa.stages.parse.way_nodes import WAY_CLAIM
from skbqa.stores.index import IndexStores

# Words that may end a question after the last constant without making it a subject ("… are there?").
_CLAUSE_TAIL = frozenset({"are", "is", "there", "exist", "exists", "s"})
# What may stand between two coordinated names ("X and Y", "X, Y or Z", "both X and Y").
COORDINATION = frozenset({"and", "or", "nor", "both", "either", "neither", "as", "well"})
HAVE_WORDS = frozenset({"have", "has", "having", "had"})
HEAD_MODIFIER_WORDS = 3  # "the direct *parent* classes of X": how far back the answer's head noun phrase is read
ANSWER_PRONOUNS = frozenset({"they"})  # what a clause after a name calls the (plural) answer; "it" is the name
# Auxiliaries a relative clause's verb may follow ("the packages X *is* enhanced by", "… X *does* depend on").
_AUXILIARIES = frozenset(
    {"is", "are", "was", "were", "gets", "get", "got", "does", "do", "did", "has", "have", "had"}
)
# Words claimed as an edge's name ("*modes of inheritance* of the diseases …") belong to the clause they relate, and
# so does the head of a relative clause about a name ("the *genus* that X belongs to").
RELATION_WORDS = frozenset({EDGE_NAME, LABELLING_NOUN, WAY_CLAIM})


class ClauseRoles:
    def __init__(self, stores: IndexStores, types: TypeVocabulary) -> None:
        self._stores = stores
        self._schema = stores.nodes.schema
        self._types = types
        # the stems of the edge names' own words (type names aside): what names a relation wherever it stands
        type_stems = set().union(*(stems(t.name.replace("_", " ")) for t in self._schema.node_types))
        self.edge_stems = (
            set().union(*(stems(e.name.replace("_", " ")) for e in self._schema.edge_types)) - type_stems
        )

    def names_edge(self, word: str) -> bool:
        return bool(stems(word) & self.edge_stems)

    def clause_words(self, text: QuestionText, constant: Constant) -> tuple[list[str], list[str]]:
        """The words of the constant's clause before and after it (the clause extends over free tokens only, so
        the constant's own claim does not stop it)."""
        left, right = text.clause(constant.start, constant.end, RELATION_WORDS)
        return text.words(left, constant.start), text.words(constant.end, right)

    def hint_after(self, text: QuestionText, constant: Constant) -> str | None:
        """A type word right after a name types it when the name has a node of that type ("the mp3guessenc
        *package*", "the zsh *program*"); "Kabuki syndrome 1 *genes*" keeps its disease."""
        if constant.end >= len(text) or text.boundary_before(constant.end):
            return None
        after = self._types.type_at(text, constant.end)
        if after is None:
            return None
        codes = np.unique(self._stores.nodes.types[constant.positions])
        return after if self._schema.node_code(after) in codes else None

    def relating(
        self, text: QuestionText, constant: Constant, hints: Sequence[TypeMention]
    ) -> tuple[list[str], list[str]]:
        """The clause's words that may relate the constant: without a type word that types it ("… depended on by
        *the package* X"), which is part of the name's phrase. `hints`: the question's type words."""
        before_words, after_words = self.clause_words(text, constant)
        typing = next((m for m in hints if self.typed_by(text, m, constant)), None)
        if typing is not None and constant.start - typing.start <= len(before_words):
            before_words = before_words[: len(before_words) - (constant.start - typing.start)]
        return before_words, after_words

    def typed_by(self, text: QuestionText, mention: TypeMention, constant: Constant) -> bool:
        """A type word just before a constant that has a node of its type types it ("the gene BCS1L", "with the
        phenotype Anhidrosis"); "the diseases TSC1 is associated with" is a clause about diseases, TSC1 none."""
        code = self._schema.node_code(mention.type_name)
        return (
            _types_the_name(text, mention, constant.start)
            and not _subject_of_a_relative(text, mention, constant)
            and bool((self._stores.nodes.types[constant.positions] == code).any())
        )

    def phrase(self, text: QuestionText, constant: Constant) -> str:
        """The clause's words around the constant, without it: what the question says links it to the answer."""
        before, after = self.clause_words(text, constant)
        return " ".join(before + after)

    def constant_is_subject(self, text: QuestionText, constant: Constant, hints: Sequence[TypeMention]) -> bool:
        """English relative clauses: the constant is the subject when a relative pronoun introduces it ("… that X
        is a kind of", "of which X is a subtype") or content words follow it in its clause ("… that have X as a
        part"); otherwise the answer is ("… that cite X", "… that are subtypes of X")."""
        before_words, after_words = self.relating(text, constant, hints)
        nominal = nominal_subject(text.words(max(0, constant.start - 4), constant.start), self.names_edge)
        if nominal is not None:
            return nominal
        before = [w for w in before_words if w not in ("the", "a", "an", "both", "either")]  # "by both X and Y"
        if before and before[-1] in HAVE_WORDS and self._listed_under_an_edge(after_words):
            return False  # "packages that have X *listed under Suggests*": they suggest X
        # "(packages that list) X among the things *they recommend*": a pronoun for the answer is the subject of
        # the verb after X, so X is its object.
        if _answer_pronoun_acts(after_words):
            return any(w in INVERSE_WORDS for w in before_words)
        # "X is depended on *by* what", "X gets suggested *by* which apps": the answer is the passive's agent, so
        # the source of the edge, and X its object.
        if "by" in after_words:
            verb = after_words[: after_words.index("by")]
            if any(w not in FUNCTION_WORDS and w not in _CLAUSE_TAIL for w in verb):
                return any(w in INVERSE_WORDS for w in before_words)
        # "… subtypes of X in GO": a prepositional phrase after the constant is no clause of which X is subject.
        if after_words and after_words[0] in PREPOSITIONS:
            after_words = []
        after = [w for w in after_words if w not in FUNCTION_WORDS and w not in _CLAUSE_TAIL]
        # "… regulated by X": X is the agent of a passive verb, so the source of the edge.
        passive = bool(before and before[-1] == "by")
        # Content words after it make the constant the subject only when none before it relate it to the answer
        # already ("… that X is a kind of" vs "kinds of X does GO distinguish").
        # ("List *everything* X suggests": a request and a placeholder relate nothing)
        stated_before = any(
            w not in FUNCTION_WORDS and w not in RELATIVE_PRONOUNS and not is_discourse_word(w) for w in before
        )
        subject = (
            bool(before and before[-1] in RELATIVE_PRONOUNS) or (bool(after) and not stated_before) or passive
        )
        # "… that are parents of X", "what does X *consist* of": words for the broader end of a hierarchy turn the
        # relation around, before the constant or as its own verb.
        inverse = (
            any(w in INVERSE_WORDS for w in before_words)
            or after[:1] in ([w] for w in WHOLE_VERBS)
            or _broader_head_of(text, constant)
        )
        return subject != inverse

    def _listed_under_an_edge(self, after_words: Sequence[str]) -> bool:
        """ "(have X) *listed under Suggests*", "(has X) *marked as a dependency*": a participle, then words naming
        an edge, none of them a hierarchy's ("have X as a *part*": X is the part)."""
        content = [w for w in after_words if w not in FUNCTION_WORDS]
        return (
            len(content) >= 2
            and reads_as_participle(content[0])
            and any(self.names_edge(w) for w in content[1:])
            and not any(is_narrower_noun(w) or w in INVERSE_WORDS for w in content)
        )


def _broader_head_of(text: QuestionText, constant: Constant) -> bool:
    """ "the *parent* classes of X", "the *superclasses* of X": the answer's head noun, right before "of" and the
    name, says the broader end of a hierarchy, though its words are the answer's, not the clause's."""
    k = constant.start - 1
    while k > 0 and text.tokens[k].lower in NAME_ARTICLES:
        k -= 1
    if k < 1 or text.tokens[k].lower != "of" or text.claimed[k - 1] != "target":
        return False
    head = range(max(0, k - HEAD_MODIFIER_WORDS), k)
    return any(text.tokens[i].lower in BROADER_NOUNS and text.claimed[i] in (None, "target") for i in head)


def _answer_pronoun_acts(after_words: Sequence[str]) -> bool:
    """ "… among the things *they recommend*": "they", then a verb."""
    for k, word in enumerate(after_words[:-1]):
        if word in ANSWER_PRONOUNS:
            verb = after_words[k + 1]
            return verb not in FUNCTION_WORDS and "VERB" in word_classes(verb) and "AUX" not in word_classes(verb)
    return False


def _subject_of_a_relative(text: QuestionText, mention: TypeMention, constant: Constant) -> bool:
    """ "the packages r-base *recommends*": a plural type word (or a placeholder), then a name with a verb of its
    own, is a clause about the type word's nodes (a relative clause without "that"), not a typed name ("the package r-base")."""
    word = text.tokens[mention.end - 1].lower
    plural = word in PLACEHOLDERS or noun_lemma(word) not in (None, word)  # "the *stuff* X depends on"
    if not plural or constant.end >= len(text) or text.boundary_before(constant.end):
        return False
    following = text.tokens[constant.end].lower
    if following in _AUXILIARIES and constant.end + 1 < len(text) and not text.boundary_before(constant.end + 1):
        # "the diseases SOD1 *is linked* to", "everything tmux *is enhanced* by", "the packages X *does* depend on"
        verb = text.tokens[constant.end + 1].lower
        return reads_as_participle(verb) or "VERB" in word_classes(verb)
    return (
        following not in FUNCTION_WORDS
        and following not in COORDINATION
        and (noun_lemma(following) is None or "VERB" in word_classes(following))  # "X *imports*"
    )


def _types_the_name(text: QuestionText, mention: TypeMention, start: int) -> bool:
    """ "the *package* X": a type word right before the name starting at `start` types it; it is no node on the
    way."""
    return mention.end <= start and all(w in ("the", "a", "an") for w in text.words(mention.end, start))
