"""Step 1 of the encoder parser: the answer's type, from the question's head noun phrase.

In order of trust: a type word that heads the question ("Which *genes* …", in any word order); a head noun that is
not a type word but comes first, or after a wh-word wherever that stands ("which *disorders* involve genes …",
"…: which *disorders*?"), read as the schema's description word for one type, as an edge it names ("in what
*locations* …"), or as a synonym (`type_synonyms`); "who" when the schema has one type of persons; the far end of
an edge the question's verb names ("how is X *inherited*", `edge_word_target`); the type word further on; and the
type whose nodes dominate the question's nearest documents (the guesser the parser is given).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from skbqa.query.context import QueryContext
from skbqa.query.encoder import Encoder
from skbqa.stages.parse.chain_words import (
    INVERSE_WORDS,
    hierarchy_depth,
    is_narrower_noun,
)
from skbqa.stages.parse.constants import ConstantSpotter
from skbqa.stages.parse.edge_word_target import EdgeWordTarget
from skbqa.stages.parse.head_noun_limits import HeadNounLimits
from skbqa.stages.parse.named_categories import NamedCategories
from skbqa.stages.parse.question_text import FUNCTION_WORDS, QuestionText, is_discourse_word
from skbqa.stages.parse.sibling_questions import sibling_type
from skbqa.stages.parse.type_mentions import (
    ARTICLES,
    INTRODUCERS,
    TypeMention,
    TypeVocabulary,
    choose_target,
    heads_question,
    noun_lemma,
    on_the_way,
    qualifies_another,
)
from skbqa.stages.parse.type_synonyms import COPULAS, HeadNoun, TypeSynonyms
from skbqa.stages.parse.wh_words import PLACE_QUESTION_WORDS, WhWordTypes, asks_for_the_subject
from skbqa.stores.index import IndexStores
from skbqa.stores.lexicon import NameLexicon

TargetTypeGuesser = Callable[[QueryContext], str | None]
DO_FORMS = frozenset({"do", "does", "did"})
MIN_HOW_WORDS = 5  # "how are the disorders … inherited": how, a copula, a subject, more, a verb
# An edge meant by the question's free words must be this close to them, and this much closer than any edge that
# leads to another type.
MEANING_MIN_COSINE = 0.35
MEANING_MARGIN = 0.05


class TargetTypeReader:
    def __init__(
        self,
        stores: IndexStores,
        lexicon: Callable[[], NameLexicon],
        synonyms: TypeSynonyms,
        types: TypeVocabulary,
        constants: ConstantSpotter,
        *,
        edge_vectors: Callable[[Encoder], np.ndarray],
        guess_target_type: TargetTypeGuesser | None = None,
        context_words: frozenset[str] = frozenset(),
    ) -> None:
        """`edge_vectors`: every edge type's text embedded, in the schema's order (the relation chooser's);
        `context_words`: the knowledge base's own name words and cited sources ("Debian", "HPO"), which name no
        node the answer relates to."""
        self._stores = stores
        self._schema = stores.nodes.schema
        self._lexicon = lexicon
        self._synonyms = synonyms
        self._types = types
        self._constants = constants
        self._edge_words = EdgeWordTarget(self._schema)
        self._wh_words = WhWordTypes(self._schema)
        self._categories = NamedCategories(stores, lexicon)
        self._guess_target_type = guess_target_type
        self._context_words = context_words
        self._edge_index = {id(e): i for i, e in enumerate(self._schema.edge_types)}
        self._edge_vectors = edge_vectors
        self._limits = HeadNounLimits(stores, lexicon, synonyms, self._types_named, self._types_corrected_at)

    def read(
        self, query: QueryContext, text: QuestionText, warnings: list[str], head_noun: bool = True
    ) -> tuple[str | None, str]:
        """The head noun phrase's type: a type word, else a synonym of one, else the nearest nodes' type; and
        which of the three it was."""
        mentions = self._types.mentions(text)
        spans = self._constants.name_spans(text) if head_noun else []
        closing = self._wh_words.asked_at_the_end(text) if head_noun else None
        if closing is not None:
            warnings.append(f"target type {closing[0]!r}: the question ends asking {closing[1]!r}")
            return closing[0], "synonym"
        person = self._wh_words.asked_at_the_start(text) if head_noun else None
        if person is not None:
            warnings.append(f"target type {person!r}: 'who' with a copula asks for a person or team")
            return person, "synonym"
        how = self._how_is_question(query, text, mentions) if head_noun else None
        if how is not None:
            warnings.append(f"target type {how!r}: how the subject is what the question's last verb says")
            return how, "relation"
        by_object = self._object_of_do_question(text, mentions, spans) if head_noun else None
        if by_object is not None:
            warnings.append(f"target type {by_object!r}: what the question's last verb reaches from its subject")
            return by_object, "relation"
        category = self._categories.read(text, spans) if head_noun else None
        if category is not None:
            type_name, start, end = category
            text.claim(start, end, "target")
            warnings.append(f"target type {type_name!r}: {text.span_text(start, end)!r} names a kind of answer")
            return type_name, "word"
        verb = asks_for_the_subject(text, mentions) if head_noun else None
        by_subject = self._edge_words.subject_of(verb) if verb is not None else None
        if by_subject is not None:
            warnings.append(f"target type {by_subject!r}: the subject of the verb after the wh-word")
            return by_subject, "relation"
        chosen = choose_target(text, mentions, spans) if head_noun else (mentions[0] if mentions else None)
        siblings = (
            sibling_type(
                text, self._schema, lambda: self._types_named(text, spans), (m.type_name for m in mentions)
            )
            if head_noun and (chosen is None or not heads_question(text, chosen, spans))
            else None
        )
        if siblings is not None:
            warnings.append(f"target type {siblings!r}: the question asks for others like the named {siblings}")
            return siblings, "relation"
        head = self._synonyms.head_noun(text, spans) if head_noun else None
        level, head = (head, None) if head is not None and head.level else (None, head)
        at_head = next((m for m in mentions if head is not None and m.start <= head.start < m.end), None)
        if at_head is not None and not any(s <= at_head.start < e for s, e in spans):
            chosen = at_head  # the head noun is a type word: "games section *packages* that …"
        if chosen is not None and head_noun and self._types_name_before(text, chosen, spans):
            # "For the hamradio *section*, which programs …": the word types the name before it
            chosen = next((m for m in mentions if m is not chosen and m.start > chosen.end), None)
        # A head noun that is not a type word comes before the type words further on: "*conditions* associated
        # with genes located in …", "which *disorders* involve genes …" ask for diseases, not genes; so does one
        # after a wh-word wherever it stands, when the type word heads nothing ("… a gene product …: which
        # *disorders*?").
        head_leads = (
            head_noun
            and head is not None
            and (
                chosen is None
                or head.start < chosen.start
                or (
                    head.asked
                    and not chosen.start <= head.start < chosen.end
                    and not heads_question(text, chosen, spans)
                )
            )
        )
        if chosen is not None and (
            not head_noun
            or (
                heads_question(text, chosen, spans)
                and not _inside_relative_clause(text, head, chosen)
                and not head_leads
            )
            or (head is not None and chosen.start <= head.start < chosen.end)
        ):
            text.claim(chosen.start, chosen.end, "target")
            return chosen.type_name, "word"
        if level is not None and (chosen is None or level.start < chosen.start):
            kind = self._limits.kind_of_level(text, level, mentions, spans)
            if kind is not None:
                warnings.append(f"target type {kind!r}: {level.lemma!r} names a level of its hierarchy")
                return kind, "relation"
        if head is not None and head_leads:
            described = self._synonyms.described_as(text, head)
            if len(described) == 1:  # the schema's own word for one type outranks a stem shared with an edge
                return self._take_synonym(text, head, chosen, next(iter(described)), warnings, spans)
            # A head noun that names an edge ("in what *locations* …", "which *maintainers* …") reaches the answer
            # through it: the edge's far end from the named nodes, before any reading of the noun as a synonym.
            by_edge = self._edge_words.target(
                text,
                self._types_named(text, spans),
                {m.type_name for m in mentions},
                set(range(len(text))) - set(range(head.start, head.end)),
            )
            if by_edge is not None:
                text.claim(head.start, head.end, "target")
                warnings.append(f"target type {by_edge!r}: the head noun names an edge that reaches it")
                return by_edge, "relation"
            synonym = self._synonyms.type_of(text, head, query.encoder)
            if synonym is not None and (
                synonym in self._limits.untyped_of_object(text, head, spans, mentions, query.encoder)
                or synonym in self._limits.said_otherwise(text, head, spans, mentions)
            ):
                # "*symptoms* of the disorders …": a thing of a disease is no disease when no edge joins diseases
                synonym = self._synonyms.type_of(text, head, query.encoder, exclude={synonym})
            if synonym is not None:
                return self._take_synonym(text, head, chosen, synonym, warnings, spans)
        if head_noun and (chosen is None or qualifies_another(text, chosen, spans)):
            # No word heads the answer's phrase ("How is X inherited?", "Where … are the products of genes …
            # located?"): the question's verb or noun may name the edge that reaches the answer.
            by_edge = self._edge_words.target(
                text,
                self._types_named(text, spans),
                {m.type_name for m in mentions},
                {i for s, e in [*spans, *((m.start, m.end) for m in mentions)] for i in range(s, e)},
            )
            if by_edge is not None:
                warnings.append(f"target type {by_edge!r}: the question's words name an edge that reaches it")
                return by_edge, "relation"
        asked = (
            self._wh_words.asked_by_wh_word(text, chosen, spans, lambda: self._types_named(text, spans), mentions)
            if head_noun
            else None
        )
        meant: str | None = None
        if asked is not None and asked[1] in PLACE_QUESTION_WORDS:
            # a verb that clearly means one edge says which place ("where is the book *kept*": its shelf)
            meant = self._edge_by_meaning(query, text, spans, mentions)
        if asked is not None and meant is None:
            kind = "places" if asked[1] in PLACE_QUESTION_WORDS else "persons or teams"
            warnings.append(f"target type {asked[0]!r}: {asked[1]!r} asks for the schema's one type of {kind}")
            return asked[0], "synonym"
        if chosen is not None and meant is None:
            # "which words are hypernyms *of a noun* that …": the only type word is a node on the way; it gives the
            # answer's type, and stays free for the chain through it
            if not on_the_way(text, chosen):
                text.claim(chosen.start, chosen.end, "target")
            return chosen.type_name, "word"
        if meant is None and head_noun:
            meant = self._edge_by_meaning(query, text, spans, mentions)
        if meant is not None:
            warnings.append(f"target type {meant!r}: the question's words mean an edge that reaches it")
            return meant, "meaning"
        if self._guess_target_type is None:
            return None, "none"
        guessed = self._guess_target_type(query)
        warnings.append(f"no type word in the question; target type guessed as {guessed!r}")
        return guessed, "guess"

    def _object_of_do_question(
        self, text: QuestionText, mentions: list[TypeMention], spans: list[tuple[int, int]]
    ) -> str | None:
        """ "*What do* the packages that X maintains *depend on*?": a wh-word with "do" asks for the object of the
        question's last verb, whose subject is the type word after "do" (a node on the way, not the answer): the
        answer is the far end, from the subject's type, of the edge that verb names."""
        words = text.words(0, len(text))
        for i in range(len(words) - 2):
            if words[i] not in ("what", "whom") or words[i + 1] not in DO_FORMS:
                continue
            if i > 0 and not text.boundary_before(i):
                continue
            j = i + 2
            while j < len(words) and words[j] in ARTICLES:
                j += 1
            subject = next((m for m in mentions if m.start == j), None)
            verbs = (
                [k for k in range(subject.end, len(words)) if words[k] not in FUNCTION_WORDS] if subject else []
            )
            if subject is None or not verbs:
                return None
            last = verbs[-1]
            skip = set(range(len(words))) - {last}
            return self._edge_words.target(text, {subject.type_name}, set(), skip)
        return None

    def _how_is_question(self, query: QueryContext, text: QuestionText, mentions: list[TypeMention]) -> str | None:
        """ "*How are* the disorders linked to X *inherited*?": "how" and a copula ask for the far end, from the
        subject's type, of the edge the question's last verb names (the subject is a node on the way)."""
        words = text.words(0, len(text))
        if len(words) < MIN_HOW_WORDS or words[0] != "how" or words[1] not in COPULAS:
            return None
        j = 2
        while j < len(words) and words[j] in ARTICLES:
            j += 1
        subject = next((m.type_name for m in mentions if m.start == j), None)
        if subject is None and j < len(words) and (lemma := noun_lemma(words[j])) is not None:
            subject = self._synonyms.type_of(text, HeadNoun(j, j + 1, lemma), query.encoder)
        last = next((k for k in range(len(words) - 1, j, -1) if words[k] not in FUNCTION_WORDS), None)
        if subject is None or last is None:
            return None
        return self._edge_words.target(text, {subject}, set(), set(range(len(words))) - {last})

    def _edge_by_meaning(
        self, query: QueryContext, text: QuestionText, spans: list[tuple[int, int]], mentions: list[TypeMention]
    ) -> str | None:
        """No word names the answer or an edge by its stem ("what part of the archive is tmux *filed under*", "what
        does apt *pull in* as extras"): the question's free words, read by the encoder against the edges at the
        named nodes' types, may still mean one edge clearly; its far end is the answer."""
        # a one-word lower-case name English reads as a noun ("the *archive*") is more likely the word than the node
        spans = [
            (s, e)
            for s, e in spans
            if text.span_text(s, e).lower() not in self._context_words  # not the knowledge base's ("… in HPO")
            and not (e - s == 1 and text.tokens[s].text.islower() and noun_lemma(text.tokens[s].lower))
        ]
        named = self._types_named(text, spans)
        taken = {i for s, e in [*spans, *((m.start, m.end) for m in mentions)] for i in range(s, e)}
        words = [
            t.lower
            for i, t in enumerate(text.tokens)
            if i not in taken
            and text.claimed[i] is None
            and t.lower not in FUNCTION_WORDS
            and not is_discourse_word(t.lower)
            and t.lower.isalpha()
        ]
        if not named or not words or _speaks_of_levels(words):
            return None  # "subtypes of X", "two levels below X": the kind of X, which the constant's type gives
        edges = [e for e in self._schema.edge_types if e.source in named or e.target in named]
        if not edges:
            return None
        vectors = self._edge_vectors(query.encoder)
        phrase = query.encoder.encode([" ".join(words)])[0]
        cosines = [float(vectors[self._edge_index[id(e)]] @ phrase) for e in edges]
        order = sorted(range(len(edges)), key=lambda k: -cosines[k])
        best = edges[order[0]]
        far = best.target if best.source in named else best.source
        rival = next(
            (k for k in order[1:] if (edges[k].target if edges[k].source in named else edges[k].source) != far),
            None,
        )
        if cosines[order[0]] < MEANING_MIN_COSINE or (
            rival is not None and cosines[order[0]] - cosines[rival] < MEANING_MARGIN
        ):
            return None
        return far

    @staticmethod
    def _take_synonym(
        text: QuestionText,
        head: HeadNoun,
        chosen: TypeMention | None,
        synonym: str,
        warnings: list[str],
        spans: list[tuple[int, int]],
    ) -> tuple[str, str]:
        text.claim(head.start, head.end, "target")
        # "architecture-independent … packages": the type word restates the answer; but "… depended on by *the
        # package* X" types the name after it, and its clause must stay whole
        # nor does "… suggest *any package* that …", an unnamed node on the way that an article introduces
        introduced = chosen is not None and chosen.start > 0 and text.tokens[chosen.start - 1].lower in INTRODUCERS
        if (
            chosen is not None
            and chosen.type_name == synonym
            and not introduced
            and not any(s == chosen.end for s, _ in spans)
        ):
            text.claim(chosen.start, chosen.end, "target")
        warnings.append(f"target type {synonym!r} read from {text.span_text(head.start, head.end)!r}")
        return synonym, "synonym"

    def _types_name_before(self, text: QuestionText, mention: TypeMention, spans: list[tuple[int, int]]) -> bool:
        """Whether a name of a node of the mention's type ends right before it ("the hamradio section")."""
        for start, end in spans:
            if end == mention.start:
                return mention.type_name in self._types_named(text, [(start, end)])
        return False

    def _types_corrected_at(self, text: QuestionText, start: int) -> set[str]:
        """The types of the nodes a name starting at `start` names once misspellings are read (on a copy of the
        question: nothing is claimed)."""
        found = next((c for c in self._constants.exact(text.copy()) if c.start == start), None)
        if found is None:
            return set()
        return {self._schema.node_types[int(c)].name for c in np.unique(self._stores.nodes.types[found.positions])}

    def _types_named(self, text: QuestionText, spans: list[tuple[int, int]]) -> set[str]:
        """The types of the nodes whose names stand at the spans."""
        found: set[str] = set()
        for start, end in spans:
            surface = text.span_text(start, end)
            positions = self._lexicon().positions(surface, original=surface)
            if positions.size:
                codes = np.unique(self._stores.nodes.types[positions])
                found.update(self._schema.node_types[int(c)].name for c in codes)
        return found


RELATIVE_PRONOUNS = frozenset({"that", "which", "who", "whom", "whose", "where"})


def _inside_relative_clause(text: QuestionText, head: HeadNoun | None, mention: TypeMention) -> bool:
    """Whether the type word stands in a relative clause of the head noun ("find *tags* that any *package* … is
    tagged with"): a node on the way to the answer, which the head noun names."""
    if head is None or head.end > mention.start:
        return False
    return any(w in RELATIVE_PRONOUNS for w in text.words(head.end, mention.start))


# Words for a place in a hierarchy, English: what they ask for is the kind of the node they are said of.
LEVEL_WORDS = frozenset({"below", "above", "under", "beneath", "level", "levels", "up", "down"})


def _speaks_of_levels(words: list[str]) -> bool:
    """ "the direct *subtypes*", "*children* of", "two *levels below*", "*parents*" (a plural or "sub-" narrower
    noun: "what *part* of the archive" asks for a place, not a narrower node)."""
    narrower = [w for w in words if is_narrower_noun(w) and (w.startswith("sub") or noun_lemma(w) != w)]
    return (
        bool(narrower) or any(w in LEVEL_WORDS or w in INVERSE_WORDS for w in words) or hierarchy_depth(words) > 1
    )
