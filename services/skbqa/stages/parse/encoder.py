"""The encoder parser (the default, LLM-free): steps 1–3 from the question's words, the schema and the SKB's names.

Passes over the question, each claiming the words it uses:
1. target type — the type word that heads the question's answer phrase ("Which *genes* …", in any word order;
   `type_mentions`), else a synonym of a type (`type_synonyms`), else the far end of an edge the question's
   verb names ("how is X *inherited*", `edge_word_target`), else the type whose nodes dominate the question's
   nearest documents (`TargetTypeGuesser`);
2. quoted text and keyword cues ("that mention X", "related to X") → text constraints;
3. attribute values the SKB actually has for the target type ("on chromosome 17") → attribute constraints;
4. constants — longest match of word sequences against every name and alias, then an embedding fallback over
   node names for leftover phrases (`constants`);
5. relations — for each constant, the schema's edges between its type and the target type, or a chain through an
   unnamed node, ranked by the clause's words (`assemble`);
6. the remaining content words → one more text constraint for ranking.
Nothing here is specific to one SKB: types, edges, names, aliases and attribute values all come from the index.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable

import numpy as np

from skbqa.query.context import QueryContext
from skbqa.query.encoder import Encoder
from skbqa.query.structured import AttributeConstraint, StructuredQuery
from skbqa.stages.parse.assemble import QueryAssembler
from skbqa.stages.parse.base import Reading
from skbqa.stages.parse.chains import is_narrower_noun
from skbqa.stages.parse.constants import FUZZY_MIN_COSINE, Constant, ConstantSpotter
from skbqa.stages.parse.cues import TextCue, claim_text_cues
from skbqa.stages.parse.edge_word_target import EdgeWordTarget
from skbqa.stages.parse.question_text import FUNCTION_WORDS, QuestionText
from skbqa.stages.parse.relations import RelationChooser
from skbqa.stages.parse.type_mentions import (
    ARTICLES,
    QUESTION_WORDS,
    TypeMention,
    TypeVocabulary,
    choose_target,
    heads_question,
    noun_lemma,
    qualifies_another,
)
from skbqa.stages.parse.type_synonyms import HeadNoun, TypeSynonyms
from skbqa.stages.parse.type_word_usage import TypeWordUsage
from skbqa.stores.index import IndexStores
from skbqa.stores.lexicon import NameLexicon

# How much each way of finding the target type, and of linking a constant, is to be trusted (parse confidence).
TYPE_CERTAINTY = {"word": 1.0, "synonym": 0.9, "relation": 0.85, "guess": 0.7, "none": 0.0}
UNSUPPORTED_GUESS_CERTAINTY = 0.45
# Nouns that ask for narrower nodes of what follows them ("kinds of X"): English, not any one schema's.
KIND_NOUNS = frozenset({"kind", "type", "sort", "form", "variety", "subtype", "subclass", "category", "example"})
FUZZY_LINK_CERTAINTY = 0.7
NO_CONSTANT_CERTAINTY = 0.5
# (question, node type, whether values without their attribute's name count) → constraints
AttributeSpotter = Callable[[QuestionText, str, bool], list[AttributeConstraint]]
TargetTypeGuesser = Callable[[QueryContext], str | None]


class EncoderParser:
    name = "encoder"

    def __init__(
        self,
        stores: IndexStores,
        lexicon: Callable[[], NameLexicon],
        *,
        attribute_spotter: AttributeSpotter | None = None,
        guess_target_type: TargetTypeGuesser | None = None,
        fuzzy_min_cosine: float = FUZZY_MIN_COSINE,
    ) -> None:
        self._stores = stores
        self._schema = stores.nodes.schema
        self._lexicon = lexicon
        self._synonyms = TypeSynonyms(self._schema, self._word_usage)
        self._types = TypeVocabulary(self._schema, self._synonyms.words_of_one_type())
        self._edge_words = EdgeWordTarget(self._schema)
        self._usage: TypeWordUsage | None = None
        self._spot_attributes = attribute_spotter
        self._guess_target_type = guess_target_type
        self._chooser: RelationChooser | None = None
        self._lock = threading.Lock()
        self._constants = ConstantSpotter(stores, lexicon, self._types, fuzzy_min_cosine=fuzzy_min_cosine)
        self._assembler = QueryAssembler(stores, self._types, self._relations)

    def _relations(self, encoder: Encoder) -> RelationChooser:
        with self._lock:
            if self._chooser is None:
                self._chooser = RelationChooser(self._schema, encoder)
            return self._chooser

    def _word_usage(self) -> TypeWordUsage:
        with self._lock:
            if self._usage is None:
                self._usage = TypeWordUsage(self._stores.nodes)
            return self._usage

    def warm(self, encoder: Encoder) -> None:
        self._word_usage()
        self._relations(encoder).warm()
        self._assembler.warm(encoder)
        self._constants.warm()

    # ------------------------------------------------------------------------------------------------ parse

    def parse(self, query: QueryContext, reading: Reading | None = None) -> StructuredQuery:
        reading = reading or Reading()
        text = QuestionText.of(query.question, is_name=self._is_name if reading.head_noun else None)
        warnings: list[str] = []
        with query.stage("parse.target_type"):
            target_type, type_source = self._target_type(query, text, warnings, reading.head_noun)
        with query.stage("parse.constraints"):
            cues = claim_text_cues(text)
            texts = list(text.quotes) + [
                cue.text for cue in cues if not self._names_a_node(text, cue, target_type)
            ]
            # An attribute only one type has outweighs a guess ("which have EC 3.6.-.-?"); not a synonym: the value
            # may identify a constant ("features recorded for ORPHA:2898").
            if type_source in ("guess", "none") and reading.head_noun:
                attributed = self._type_of_attributes(text)
                if attributed is not None and attributed != target_type:
                    warnings.append(f"target type {attributed!r}: only its nodes have the attribute asked about")
                    target_type, type_source = attributed, "synonym"
            constraints = (
                self._spot_attributes(text, target_type, True) if self._spot_attributes and target_type else []
            )
        with query.stage("parse.constants"):
            constants = self._constants.exact(text, typos=reading.typos)
            constants += self._constants.fuzzy(text, query)
        if type_source in ("word", "synonym") and target_type is not None:
            constants = self._drop_answer_qualifiers(text, constants, target_type, warnings)
        if type_source in ("guess", "none") and reading.head_noun:
            kind = self._kind_of_constant(text, constants)
            if kind is not None and kind != target_type:
                warnings.append(f"target type {kind!r}: the question asks for kinds of a named {kind}")
                target_type, type_source = kind, "synonym"
                constraints = []  # spotted for the guessed type
        with query.stage("parse.relations"):
            parsed = self._assembler.assemble(query, text, target_type, constants, warnings, chains=reading.chains)
        parsed.constraints.extend(constraints)
        parsed.text_constraints.extend(t for t in texts if t)
        leftover = [
            w
            for w in text.leftover_content()
            if w.lower()[:5] not in self._constants.relation_stems and not is_discourse_word(w.lower())
        ]
        if _reads_hierarchy(parsed):  # "a subtype of", "part of some": stated by the chain, not text to match
            leftover = [w for w in leftover if not is_narrower_noun(w.lower())]
        if leftover:
            parsed.text_constraints.append(" ".join(leftover))
        parsed.confidence = self._confidence(text, type_source, constants, parsed)
        return parsed

    def _confidence(
        self,
        text: QuestionText,
        type_source: str,
        constants: list[Constant],
        parsed: StructuredQuery,
    ) -> float:
        """How far the parse can be trusted: how the target type was found, whether the constants were linked
        by name and related to the answer through the schema, and how many of the question's content words the
        parse explains (what is left over became free text)."""
        type_factor = TYPE_CERTAINTY.get(type_source, 0.0)
        related = sum(1 for s in parsed.symbols.values() if s.is_constant)
        if type_source == "guess" and not related:
            type_factor = UNSUPPORTED_GUESS_CERTAINTY  # no related constant corroborates the guessed type
        if constants:
            linked = sum(1.0 if c.exact else FUZZY_LINK_CERTAINTY for c in constants) / len(constants)
            link = linked * related / len(constants)
        else:
            link = NO_CONSTANT_CERTAINTY if not parsed.constraints else 1.0
        content = [i for i, t in enumerate(text.tokens) if t.lower not in FUNCTION_WORDS]
        unexplained = [i for i in content if text.claimed[i] is None and i not in text.relation_tokens]
        unexplained = [i for i in unexplained if text.tokens[i].lower[:5] not in self._constants.relation_stems]
        explained = 1.0 - len(unexplained) / len(content) if content else 0.0
        return round(type_factor * link * (0.6 + 0.4 * max(0.0, explained)), 4)

    def _target_type(
        self, query: QueryContext, text: QuestionText, warnings: list[str], head_noun: bool = True
    ) -> tuple[str | None, str]:
        """The head noun phrase's type: a type word, else a synonym of one, else the nearest nodes' type; and
        which of the three it was."""
        mentions = self._types.mentions(text)
        spans = self._constants.name_spans(text) if head_noun else []
        chosen = choose_target(text, mentions, spans) if head_noun else (mentions[0] if mentions else None)
        head = self._synonyms.head_noun(text, spans) if head_noun else None
        at_head = next((m for m in mentions if head is not None and m.start == head.start), None)
        if at_head is not None and not any(s <= at_head.start < e for s, e in spans):
            chosen = at_head  # the head noun is a type word: "games section *packages* that …"
        if chosen is not None and head_noun and self._types_name_before(text, chosen, spans):
            # "For the hamradio *section*, which programs …": the word types the name before it
            chosen = next((m for m in mentions if m is not chosen and m.start > chosen.end), None)
        if chosen is not None and (
            not head_noun
            or (heads_question(text, chosen, spans) and not _inside_relative_clause(text, head, chosen))
            or (head is not None and head.start == chosen.start)
        ):
            text.claim(chosen.start, chosen.end, "target")
            return chosen.type_name, "word"
        # A head noun that is not a type word comes before the type words further on: "*conditions* associated
        # with genes located in …" asks for diseases, not genes.
        if head is not None and (chosen is None or head.start < chosen.start):
            described = self._synonyms.described_as(text, head)
            if len(described) == 1:  # the schema's own word for one type outranks a stem shared with an edge
                return self._take_synonym(text, head, chosen, next(iter(described)), warnings)
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
            if synonym is not None:
                return self._take_synonym(text, head, chosen, synonym, warnings)
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
        if chosen is not None:
            text.claim(chosen.start, chosen.end, "target")
            return chosen.type_name, "word"
        if self._guess_target_type is None:
            return None, "none"
        guessed = self._guess_target_type(query)
        warnings.append(f"no type word in the question; target type guessed as {guessed!r}")
        return guessed, "guess"

    @staticmethod
    def _take_synonym(
        text: QuestionText, head: HeadNoun, chosen: TypeMention | None, synonym: str, warnings: list[str]
    ) -> tuple[str, str]:
        text.claim(head.start, head.end, "target")
        if chosen is not None and chosen.type_name == synonym:  # "architecture-independent … packages"
            text.claim(chosen.start, chosen.end, "target")
        warnings.append(f"target type {synonym!r} read from {text.span_text(head.start, head.end)!r}")
        return synonym, "synonym"

    def _types_name_before(self, text: QuestionText, mention: TypeMention, spans: list[tuple[int, int]]) -> bool:
        """Whether a name of a node of the mention's type ends right before it ("the hamradio section")."""
        for start, end in spans:
            if end == mention.start:
                return mention.type_name in self._types_named(text, [(start, end)])
        return False

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

    def _is_name(self, quoted: str) -> bool:
        return bool(self._lexicon().positions(quoted, original=quoted).size)

    def _type_of_attributes(self, text: QuestionText) -> str | None:
        """The one type whose attributes the question names with a value ("… with EC 3.2.-.-"), if only one
        type's do: the answer's type when no word names it."""
        if self._spot_attributes is None:
            return None
        having = [
            node_type
            for node_type in self._schema.node_type_names
            if self._spot_attributes(text.copy(), node_type, False)  # a bare value may be a name's word
        ]
        return having[0] if len(having) == 1 else None

    def _drop_answer_qualifiers(
        self, text: QuestionText, constants: list[Constant], target_type: str, warnings: list[str]
    ) -> list[Constant]:
        """A name inside the answer's own noun phrase that the answer type's description uses ("Which *HPO*
        phenotype …" where phenotypes are "Human Phenotype Ontology (HPO) terms", "what *OMIM* diseases …") says
        where the answer comes from, not a node it is related to: it stays text. ("X-linked genes" keeps its
        constant: the gene type's description does not call genes that.)"""
        description = self._schema.node_types[self._schema.node_code(target_type)].description.lower()
        kept: list[Constant] = []
        for constant in constants:
            in_head = (
                constant.end < len(text)
                and text.claimed[constant.end] == "target"
                and all(w in QUESTION_WORDS or w in ARTICLES for w in text.words(0, constant.start))
            )
            if in_head and re.search(rf"(?<!\w){re.escape(constant.surface.lower())}(?!\w)", description):
                text.release(constant.start, constant.end)
                warnings.append(
                    f"{constant.surface!r} is how the schema describes the answer's type; kept as text"
                )
                continue
            kept.append(constant)
        return kept

    def _kind_of_constant(self, text: QuestionText, constants: list[Constant]) -> str | None:
        """ "What kinds of X …", "which forms of X …": the answer is of X's type (its narrower nodes)."""
        for constant in constants:
            before = [
                w for w in text.words(max(0, constant.start - 4), constant.start) if w not in ("the", "a", "an")
            ]
            if len(before) >= 2 and before[-1] == "of" and noun_lemma(before[-2]) in KIND_NOUNS:
                codes = self._stores.nodes.types[constant.positions[:1]]
                return self._schema.node_types[int(codes[0])].name if codes.size else None
        return None

    def _names_a_node(self, text: QuestionText, cue: TextCue, target_type: str | None) -> bool:
        """A weak cue's span that is exactly the name of a node the schema relates to the answer's type in one
        way only is a relation ("papers about <field>": has_topic); with several possible relations ("diseases
        related to <phenotype>": phenotype, clinical feature, inheritance…) the words stay a text constraint."""
        if not cue.weak or target_type is None:
            return False
        positions = self._lexicon().positions(cue.text, original=cue.text)
        if not positions.size:
            return False
        types = {self._schema.node_types[int(c)].name for c in np.unique(self._stores.nodes.types[positions])}
        ways = [
            e
            for e in self._schema.edge_types
            if (e.source == target_type and e.target in types) or (e.target == target_type and e.source in types)
        ]
        if len(ways) != 1:
            return False
        text.claim(cue.start, cue.body_start, "relation")
        text.release(cue.body_start, cue.end)
        return True


# How people ask rather than what they ask about ("*Help me figure out* which …", "*I'd like to know* …", "…? *List
# them please*"): never words an answer's text is to contain. English only, nothing of any one schema.
DISCOURSE_WORDS = frozenset(
    {"help", "figure", "out", "like", "know", "wondering", "curious", "say", "please", "thanks", "them", "ones",
     "so", "if", "just", "only", "also", "take", "first", "then", "else", "exist", "exists", "d", "ll", "m", "s",
     "ve", "re", "i", "you", "we", "can", "could", "would", "will", "should", "may", "might", "must", "let",
     "see", "check", "anything", "something", "stuff", "ideas", "idea", "quick", "q", "hey", "hi", "ok", "okay",
     "other", "others", "among"}
)  # fmt: skip


def is_discourse_word(word: str) -> bool:
    return word in DISCOURSE_WORDS or word in QUESTION_WORDS


RELATIVE_PRONOUNS = frozenset({"that", "which", "who", "whom", "whose", "where"})


def _inside_relative_clause(text: QuestionText, head: HeadNoun | None, mention: TypeMention) -> bool:
    """Whether the type word stands in a relative clause of the head noun ("find *tags* that any *package* … is
    tagged with"): a node on the way to the answer, which the head noun names."""
    if head is None or head.end > mention.start:
        return False
    return any(w in RELATIVE_PRONOUNS for w in text.words(head.end, mention.start))


def _reads_hierarchy(parsed: StructuredQuery) -> bool:
    """Whether a triplet joins two nodes of one type (a hierarchy hop through an unnamed node)."""
    return any(
        t.head in parsed.symbols
        and t.tail in parsed.symbols
        and parsed.symbols[t.head].type == parsed.symbols[t.tail].type
        and not (parsed.symbols[t.head].is_constant and parsed.symbols[t.tail].is_constant)
        for t in parsed.triplets
    )
