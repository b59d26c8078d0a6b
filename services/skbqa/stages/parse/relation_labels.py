"""Names in a question that label a relation rather than name a node: a name that says an edge's own name ("the
*mode of inheritance* of X"), a name that labels the next name ("whose *inheritance* is …"), and a category said
of a name below it in its hierarchy ("whose *clinical course* is rapidly progressive"). `ConstantSpotter` drops
them from the constants; they stay the relation's words.
"""

from __future__ import annotations

import re
from typing import Protocol, TypeVar

import numpy as np

from skbqa.stages.english import is_english, word_classes
from skbqa.stages.parse.chain_words import RELATIVE_PRONOUNS
from skbqa.stages.parse.question_text import FUNCTION_WORDS, QuestionText
from skbqa.stages.parse.relation_verbs import verb_lemma
from skbqa.stages.parse.relations import stems
from skbqa.stages.parse.type_mentions import noun_lemma
from skbqa.stages.parse.type_synonyms import COPULAS
from skbqa.stores.index import IndexStores


class _Name(Protocol):
    """A name found in the question (`constants.Constant`)."""

    @property
    def start(self) -> int: ...

    @property
    def end(self) -> int: ...

    @property
    def surface(self) -> str: ...

    @property
    def positions(self) -> np.ndarray: ...


Constant = TypeVar("Constant", bound=_Name)

COORDINATORS = frozenset({"and", "or", "nor"})
LINKING_VERBS = COPULAS | {"be", "being"}
# "whose clinical course is recorded as rapidly progressive": a category this far from the value, this many levels up
LABEL_GAP_WORDS = 4
LABEL_LEVELS = 4
MIN_EDGE_PHRASE_WORDS = 2
EDGE_PHRASE_LEAD = 3  # "*modes of* inheritance": the edge's other words come this close before the name
EDGE_NAME = "edge_name"  # how a name that says an edge's name is claimed
# How a noun or adjective that labels the next name is claimed ("specific *ways* to X"): words of its clause. A verb
# ("if I *install* X, which …") is claimed as "relation": it may belong to another clause than the question's.
LABELLING_NOUN = "labelling_noun"
NOUN_DETERMINERS = frozenset({"the", "a", "an", "its", "their", "his", "her", "our", "your", "my"})
RELATION_PREPOSITIONS = frozenset({"of", "to", "as", "with", "from"})
PARTICLES = frozenset({"up", "out", "off", "down", "away", "over"})
MIN_PREFIX_CHARS = 4  # "hypernyms *of*", "belong *to*", "marked *as*"


class RelationLabels:
    def __init__(self, stores: IndexStores) -> None:
        self._stores = stores
        schema = stores.nodes.schema
        self._edge_name_stems = set().union(*(stems(e.name.replace("_", " ")) for e in schema.edge_types))
        # the words of every edge's name and description, type names aside ("hyper", "belon", "topic")
        texts = [f"{e.name.replace('_', ' ')} {e.description}".lower() for e in schema.edge_types]
        self._edge_text_words = {w for t in texts for w in re.findall(r"[a-z]+", t)}
        self._edge_descriptions = " " + " | ".join(" ".join(re.findall(r"[a-z]+", t)) for t in texts) + " "
        self._edge_text_stems = set().union(
            *(stems(f"{e.name.replace('_', ' ')} {e.description}") for e in schema.edge_types)
        )
        # and their verbs' plain forms: "of which it is *made*" states "*make* up"
        self._edge_text_stems |= stems(" ".join(verb_lemma(w) for w in self._edge_text_words))
        type_stems = set().union(*(stems(t.name.replace("_", " ")) for t in schema.node_types))
        # each edge's own words, type names aside, when there are several: "mode", "inheritance"
        self._edge_phrases = [
            own
            for e in schema.edge_types
            if len(own := stems(e.name.replace("_", " ")) - type_stems) >= MIN_EDGE_PHRASE_WORDS
        ]

    def drop(self, text: QuestionText, found: list[Constant]) -> list[Constant]:
        """A name that only labels the relation of the next name is not a constant: "with the *mode of
        inheritance* Autosomal dominant …", "whose *inheritance* is …", "*localised* to the site of …". It is
        followed by the next name with at most two function words between, and is either made of an edge type's
        name words or is a single word (some SKBs have nodes called "Mode of inheritance" or "Localized")."""
        kept: list[Constant] = []
        for i, constant in enumerate(found):
            nxt = found[i + 1] if i + 1 < len(found) else None
            if self.says_an_edge_name(text, constant.start, constant.end):
                text.claim(constant.start, constant.end, EDGE_NAME)  # a relation's words: in its clause
                continue
            if self._says_a_relation_in_its_slot(text, constant):
                text.claim(constant.start, constant.end, EDGE_NAME)
                continue
            if nxt is not None and self._labels_next(text, constant, nxt):
                # after an article or a possessive it is a noun, whatever else it may be ("the *reverse* of X")
                noun = constant.start > 0 and text.tokens[constant.start - 1].lower in NOUN_DETERMINERS
                verb = not noun and any(
                    "VERB" in word_classes(w) for w in text.words(constant.start, constant.end)
                )
                text.claim(constant.start, constant.end, "relation" if verb else LABELLING_NOUN)
                continue
            kept.append(constant)
        return kept

    def says_an_edge_name(self, text: QuestionText, start: int, end: int) -> bool:
        """ "the *mode of inheritance* of X", "*modes of* inheritance of the diseases …": a name that, alone or with
        the words right before it, says an edge's name (its own words: `disease_has_mode_of_inheritance`) names
        that relation, not a node."""
        own = stems(" ".join(noun_lemma(w) or w for w in text.words(start, end)))  # "modes" says "mode"
        lead = text.words(max(start - EDGE_PHRASE_LEAD, 0), start)
        before = stems(" ".join(noun_lemma(w) or w for w in lead))
        return bool(own) and any(own <= words <= own | before for words in self._edge_phrases)

    def _says_a_relation_in_its_slot(self, text: QuestionText, constant: _Name) -> bool:
        """ "which concepts are *hypernyms* of X", "… *belong to* the topic X": where every word is some node's name
        (a dictionary's SKB), an English word in lower case that the schema's edge names or descriptions use
        ("Hypernymy: …", "the concept belongs to the field or topic …"), standing where a relation stands (after a
        copula or a relative pronoun, or before "of", "to", "as" or "with"), says that relation."""
        words = text.words(constant.start, constant.end)
        content = [w for w in words if w not in FUNCTION_WORDS]
        if len(content) == 2 and content[1] in PARTICLES and "VERB" in word_classes(content[0]):
            content = content[:1]  # a phrasal verb ("components that *make up* X") says its verb's relation
        if len(content) != 1 or not text.tokens[constant.start].text.islower():
            return False
        if self._in_an_edge_description(text, constant):
            return True
        word = noun_lemma(content[0]) or content[0]
        if not (stems(word) <= self._edge_text_stems or self._prefix_of_an_edge_word(word)):
            return self._verb_of_the_answer(text, constant)
        as_a = text.words(max(constant.start - 2, 0), constant.start) in (["as", "a"], ["as", "an"])
        if as_a and (constant.end >= len(text) or text.boundary_before(constant.end)):
            return True  # "(terms that include X) *as a part*": the role X plays, a relation's noun
        before = text.words(max(constant.start - 1, 0), constant.start)
        after = text.words(constant.end, constant.end + 1)
        # a verb after a relative pronoun or a plural head noun whose verb it is ("which concepts *belong to*",
        # "words that *share* a root with X", "describing words *mean* nearly …") needs no preposition after it
        is_verb = "VERB" in word_classes(content[0])
        # ("books that *quote* cites": a verb right after it makes it the clause's subject, a name)
        subject = _followed_by_a_verb(text, constant)
        verb_slot = (
            bool(before)
            and is_verb
            and not subject
            and (before[0] in RELATIVE_PRONOUNS or noun_lemma(before[0]) not in (None, before[0]))
        )
        # "types of X *and belong to* Y": a word English knows only as a verb, after "and", starts a second verb
        # phrase of the answer's ("*and cough*" or "*and swelling* of" may be a second name)
        coordinated = (
            bool(before) and before[0] in COORDINATORS and is_verb and "NOUN" not in word_classes(content[0])
        )
        opens = bool(before) and (
            before[0] in LINKING_VERBS or before[0] in RELATIVE_PRONOUNS or verb_slot or coordinated
        )
        leads = bool(after) and after[0] in RELATION_PREPOSITIONS and not text.boundary_before(constant.end)
        return verb_slot or (opens and (leads or words[-1] in RELATION_PREPOSITIONS))

    @staticmethod
    def _verb_of_the_answer(text: QuestionText, constant: _Name) -> bool:
        """ "which adjective concepts *share* a word root with X": a lower-case verb right after the answer's own
        noun, not followed by another verb (then it would be the clause's subject: "books that *quote* cites"), is
        the answer's verb, whatever words the schema uses for the relation."""
        if (
            constant.end - constant.start != 1
            or constant.start == 0
            or text.claimed[constant.start - 1] != "target"
        ):
            return False
        return "VERB" in word_classes(text.tokens[constant.start].lower) and not _followed_by_a_verb(
            text, constant
        )

    def _prefix_of_an_edge_word(self, word: str) -> bool:
        """ "mean" in "similar in *meaning*": a word of four letters or more that starts an edge text's word."""
        return len(word) >= MIN_PREFIX_CHARS and any(w.startswith(word) for w in self._edge_text_words)

    def _in_an_edge_description(self, text: QuestionText, constant: _Name) -> bool:
        """ "share a *word root* with X": a name that, with the word before or after it, is a phrase of an edge's
        description ("a form of the same word root") says that relation."""
        for start, end in ((constant.start - 1, constant.end), (constant.start, constant.end + 1)):
            if start < 0 or end > len(text) or any(text.boundary_before(i) for i in range(start + 1, end)):
                continue
            words = text.words(start, end)
            if all(w not in FUNCTION_WORDS for w in words) and f" {' '.join(words)} " in self._edge_descriptions:
                return True
        return False

    def _labels_next(self, text: QuestionText, constant: _Name, nxt: _Name) -> bool:
        between = text.words(constant.end, nxt.start)
        if self._category_of(text, constant, nxt, between):
            return True
        if "as" in between:
            return False  # "(include) wheel *as* a part": the second says the role of the first
        if len(between) > 2 or any(w not in FUNCTION_WORDS or w in COORDINATORS for w in between):
            return False  # "X and Y", "X or Y": two names side by side, neither labels the other
        if any(w in RELATIVE_PRONOUNS or w == "whose" for w in between):
            return False  # "dementia *whose* clinical course …": a relative clause about it (or the answer)
        if any(text.boundary_before(i) for i in range(constant.end, nxt.start + 1)):
            return False
        words = stems(constant.surface)
        # a single word labels only if English knows it ("*localised* to …"); "the *zsh* program" names a node
        single = constant.end - constant.start == 1 and is_english(text.tokens[constant.start].lower)
        return bool(words) and (words <= self._edge_name_stems or single)

    def _category_of(self, text: QuestionText, constant: _Name, nxt: _Name, between: list[str]) -> bool:
        """ "whose *clinical course* is (recorded as) rapidly progressive": a name said, through a copula, of a
        name below it in its hierarchy labels it (a category, not a second node)."""
        if not LINKING_VERBS & set(between) or len(between) > LABEL_GAP_WORDS or COORDINATORS & set(between):
            return False  # ("X *and are* members of Y": a second clause of the answer's, not one of X's)
        if any(text.boundary_before(i) for i in range(constant.end, nxt.start + 1)):
            return False
        graph, types, schema = self._stores.graph, self._stores.nodes.types, self._stores.nodes.schema
        above = set(constant.positions.tolist())
        for code in np.unique(types[nxt.positions]).tolist():
            kind = schema.node_types[int(code)].name
            edges = {e.name for e in schema.edge_types if e.source == kind and e.target == kind}
            level = nxt.positions[types[nxt.positions] == code]
            for _ in range(LABEL_LEVELS):
                level = np.unique(
                    np.concatenate([graph.neighbours(level, edge, "out") for edge in edges] or [level[:0]])
                )
                if above.intersection(level.tolist()):
                    return True
        return False


def _followed_by_a_verb(text: QuestionText, constant: _Name) -> bool:
    after = text.words(constant.end, constant.end + 1)
    return bool(after) and after[0] not in FUNCTION_WORDS and "VERB" in word_classes(after[0])
