"""The encoder parser (the default, LLM-free): steps 1–3 from the question's words, the schema and the SKB's names.

Passes over the question, each claiming the words it uses:
1. target type — from the question's head noun phrase: a type word, a synonym, an edge it names, "who", the far
   end of an edge the verb names, else the type whose nodes dominate the nearest documents (`target_type`);
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

from skbqa.query.context import QueryContext
from skbqa.query.encoder import Encoder
from skbqa.query.structured import AttributeConstraint, StructuredQuery
from skbqa.stages.parse.abbreviations import Abbreviations
from skbqa.stages.parse.anaphors import drop_anaphors
from skbqa.stages.parse.assemble import QueryAssembler
from skbqa.stages.parse.base import Reading
from skbqa.stages.parse.chain_words import (
    RELATIVE_PRONOUNS,
    SHARING_WORDS,
    is_level_noun,
    is_narrower_noun,
)
from skbqa.stages.parse.constants import FUZZY_MIN_COSINE, Constant, ConstantSpotter
from skbqa.stages.parse.cue_reader import CueReader
from skbqa.stages.parse.cues import claim_text_cues
from skbqa.stages.parse.existence import add_existence_triplets
from skbqa.stages.parse.genitive_nouns import of_phrase_for_genitive
from skbqa.stages.parse.head_class import add_head_class, claim_relation_head, names_types
from skbqa.stages.parse.hierarchy_levels import reads_hierarchy, span_two_levels
from skbqa.stages.parse.kind_requests import type_of_kinds_asked
from skbqa.stages.parse.possessives import read_possessives
from skbqa.stages.parse.quantity_nouns import QuantityNouns
from skbqa.stages.parse.question_text import FUNCTION_WORDS, QuestionText, is_discourse_word
from skbqa.stages.parse.reached_types import ReachedTypes
from skbqa.stages.parse.relations import RelationChooser
from skbqa.stages.parse.relative_heads import release_relative_heads
from skbqa.stages.parse.sense_qualifiers import cut_glosses, cut_qualifiers, document_meaning, narrow
from skbqa.stages.parse.sentence_joins import drop_restated_aside, join_sentences, join_topic
from skbqa.stages.parse.target_type import TargetTypeGuesser, TargetTypeReader
from skbqa.stages.parse.text_fields import claim_text_fields, text_nouns
from skbqa.stages.parse.topic_adverbials import lift_topic_adverbial
from skbqa.stages.parse.type_mentions import ARTICLES, QUESTION_WORDS, TypeVocabulary, noun_lemma
from skbqa.stages.parse.type_synonyms import TypeSynonyms
from skbqa.stages.parse.type_word_usage import TypeWordUsage
from skbqa.stores.index import IndexStores
from skbqa.stores.lexicon import NameLexicon

# How much each way of finding the target type, and of linking a constant, is to be trusted (parse confidence).
TYPE_CERTAINTY = {"word": 1.0, "synonym": 0.9, "relation": 0.85, "meaning": 0.75, "guess": 0.7, "none": 0.0}
# Ways of finding the target type a stronger later signal may overrule (an attribute one type has, "kinds of X").
WEAK_TYPE_SOURCES = frozenset({"meaning", "guess", "none"})
UNSUPPORTED_GUESS_CERTAINTY = 0.45
FUZZY_LINK_CERTAINTY = 0.7
NO_CONSTANT_CERTAINTY = 0.5
# (question, node type, whether values without their attribute's name count) → constraints
AttributeSpotter = Callable[[QuestionText, str, bool], list[AttributeConstraint]]


class EncoderParser:
    name = "encoder"

    def __init__(
        self,
        stores: IndexStores,
        lexicon: Callable[[], NameLexicon],
        *,
        attribute_spotter: AttributeSpotter | None = None,
        guess_target_type: TargetTypeGuesser | None = None,
        quantities: QuantityNouns | None = None,
        fuzzy_min_cosine: float = FUZZY_MIN_COSINE,
    ) -> None:
        self._stores = stores
        self._schema = stores.nodes.schema
        self._text_nouns = text_nouns(self._schema)
        self._lexicon = lexicon
        self._cues = CueReader(stores, lexicon)
        synonyms = TypeSynonyms(self._schema, self._word_usage)
        self._types = TypeVocabulary(self._schema, synonyms.words_of_one_type())
        self._usage: TypeWordUsage | None = None
        self._spot_attributes = attribute_spotter
        self._quantities = quantities
        self._chooser: RelationChooser | None = None
        self._lock = threading.Lock()
        self._constants = ConstantSpotter(stores, lexicon, self._types, fuzzy_min_cosine=fuzzy_min_cosine)
        self._assembler = QueryAssembler(stores, self._types, self._relations)
        self._reached = ReachedTypes(stores, self._assembler.roles)
        self._abbreviations = Abbreviations(
            self._schema,
            self._is_name,
            known_word=lambda word: self._constants.knows_word(word) or self._word_usage().knows(word),
        )
        # the knowledge base's own words: its name and description, and the sources its types cite by acronym
        own = re.findall(r"[a-z0-9]+", f"{self._schema.name} {self._schema.description}".lower())
        self._own_words = {w for w in own if w not in FUNCTION_WORDS}  # "and", "of" name nothing of the KB
        self._sources = {
            acronym.lower()
            for t in self._schema.node_types
            for acronym in re.findall(r"(?<![\w-])[A-Z]{2,}(?![\w-])", t.description)
        }
        self._own_words |= self._sources
        self._target = TargetTypeReader(
            stores,
            lexicon,
            synonyms,
            self._types,
            self._constants,
            edge_vectors=lambda encoder: self._relations(encoder).edge_vectors(),
            guess_target_type=guess_target_type,
            context_words=frozenset(self._own_words),
        )

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

    def parse(self, query: QueryContext, reading: Reading | None = None) -> StructuredQuery:
        reading = reading or Reading()
        question, expanded = self._abbreviations.expand(query.question)
        question = self._one_type_pairs(question)
        warnings = [f"{short!r} read as {word!r}" if word else f"{short!r} left out" for short, word in expanded]
        restated = drop_restated_aside(question)
        if restated is not None:
            question = restated
            warnings.append("an opening aside sets aside a node the question names again")
        joined = join_sentences(question) or join_topic(question)
        if joined is not None:
            question = joined
            warnings.append("the question's parts read as one question (a reference to what the first describes)")
        lifted = lift_topic_adverbial(question)
        if lifted is not None:
            question = lifted
            warnings.append("an adverbial's noun read as what the question asks for")
        question, qualifiers = cut_qualifiers(question)
        lexicon = self._lexicon()
        question, qualifiers = cut_glosses(
            question,
            qualifiers,
            lambda name: lexicon.positions(name, original=name),
            self._stores.nodes,
            document_meaning(query.encoder, self._stores.nodes),
        )
        if qualifiers:
            warnings.append(f"{len(qualifiers)} sense qualifier(s) read as which node a name means")
        genitive = of_phrase_for_genitive(
            question, lambda phrase: lexicon.positions(phrase, original=phrase).size > 0
        )
        if genitive is not None:
            question = genitive
            warnings.append("a common noun's noun read as an of-phrase")
        text = QuestionText.of(question, is_name=self._is_name if reading.head_noun else None)
        with query.stage("parse.target_type"):
            target_type, type_source = self._target.read(query, text, warnings, reading.head_noun)
        with query.stage("parse.constraints"):
            claim_text_fields(text, self._text_nouns)  # before the cues: "mention X *in their description*"
            cues = claim_text_cues(text, self._cues.says_an_edge)
            texts = list(text.quotes) + [
                cue.text for cue in cues if not self._cues.names_a_node(text, cue, target_type)
            ]
            # An attribute only one type has outweighs a guess ("which have EC 3.6.-.-?"); not a synonym: the value
            # may identify a constant ("features recorded for ORPHA:2898").
            if type_source in WEAK_TYPE_SOURCES and reading.head_noun:
                attributed = self._type_of_attributes(text)
                if attributed is not None and attributed != target_type:
                    warnings.append(f"target type {attributed!r}: only its nodes have the attribute asked about")
                    target_type, type_source = attributed, "synonym"
            constraints = self._attributes(text, target_type, query.encoder)
        with query.stage("parse.constants"):
            self._claim_knowledge_base_context(text, warnings)
            constants = self._constants.exact(text, typos=reading.typos)
            constants += self._constants.fuzzy(text, query)
            narrowed, afterthought = narrow(text, constants, qualifiers, self._stores.nodes)
            constants = drop_anaphors(text, read_possessives(text, narrowed, self._stores.nodes))
            constants = release_relative_heads(text, constants, self._constants.relation_stems)
        if type_source in ("word", "synonym") and target_type is not None:
            constants = self._drop_answer_qualifiers(text, constants, target_type, warnings)
        if reading.head_noun:
            kind = type_of_kinds_asked(text, constants, self._stores.nodes, type_source, WEAK_TYPE_SOURCES)
            if kind is not None and kind != target_type:
                warnings.append(f"target type {kind!r}: the question asks for kinds of a named {kind}")
                target_type, type_source = kind, "synonym"
                constraints = []  # spotted for the guessed type
        if type_source in ("guess", "none") and reading.head_noun and not constraints:
            # (attribute values the guessed type's nodes have are evidence for it: "filed under adj.pert")
            reached = self._reached.type_for(text, constants, self._relations(query.encoder), query.encoder)
            if reached is not None:  # the graph corroborates the guess or overrules it
                warnings.append(f"target type {reached!r}: where the edge the question names leads in the graph")
                target_type, type_source = reached, "relation"
        said = (
            claim_relation_head(
                text,
                self._stores,
                warnings,
                lambda edges: names_types(text, constants, self._types, self._stores, edges),
            )
            if type_source == "synonym"
            else None
        )
        if said is not None and said != target_type:
            target_type = said
            constraints = self._attributes(text, said, query.encoder)
        with query.stage("parse.relations"):
            parsed = self._assembler.assemble(query, text, target_type, constants, warnings, chains=reading.chains)
        parsed.constraints.extend(constraints)
        if type_source == "synonym":
            add_head_class(
                parsed, text, self._constants.node_words, self._lexicon(), self._stores, warnings, afterthought
            )
        if reading.chains:
            starts = {c.start for c in constants}
            chooser = self._relations(query.encoder)
            add_existence_triplets(parsed, text, self._types.mentions(text), starts, chooser)
        parsed.text_constraints.extend(t for t in texts if t)
        leftover = [
            w
            for w in text.leftover_content()
            if w.lower()[:5] not in self._constants.relation_stems and not is_discourse_word(w.lower())
        ]
        if reads_hierarchy(parsed):  # "a subtype of", "part of some": stated by the chain, not text to match
            # (and "the *parent* classes of X": the level the hop goes to)
            leftover = [w for w in leftover if not is_narrower_noun(w.lower()) and not is_level_noun(w.lower())]
            leftover = span_two_levels(text, parsed, leftover, warnings)
        if (
            any(s.type is not None and not s.is_constant and n != parsed.target for n, s in parsed.symbols.items())
            or len(parsed.constants) > 1
        ):  # "share a disease with X" (a chain), "shared by X and Y" (an intersection): stated, not text
            leftover = [w for w in leftover if w.lower() not in SHARING_WORDS]
        if leftover:
            parsed.text_constraints.append(" ".join(leftover))
        parsed.confidence = self._confidence(text, type_source, constants, parsed)
        parsed.type_named = type_source in ("word", "synonym")
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
            link = NO_CONSTANT_CERTAINTY if not parsed.constraints and not parsed.constants else 1.0
        content = [i for i, t in enumerate(text.tokens) if t.lower not in FUNCTION_WORDS]
        unexplained = [i for i in content if text.claimed[i] is None and i not in text.relation_tokens]
        unexplained = [i for i in unexplained if text.tokens[i].lower[:5] not in self._constants.relation_stems]
        explained = 1.0 - len(unexplained) / len(content) if content else 0.0
        return round(type_factor * link * (0.6 + 0.4 * max(0.0, explained)), 4)

    def _attributes(
        self, text: QuestionText, node_type: str | None, encoder: Encoder
    ) -> list[AttributeConstraint]:
        found = self._spot_attributes(text, node_type, True) if self._spot_attributes and node_type else []
        if self._quantities is not None and node_type:  # after the named ones: "a population under 1 million"
            found += self._quantities(text, node_type, encoder, found)
        return found

    def _is_name(self, quoted: str) -> bool:
        return bool(self._lexicon().positions(quoted, original=quoted).size)

    def _type_of_attributes(self, text: QuestionText) -> str | None:
        """The one type whose attributes the question names with a value ("… with EC 3.2.-.-"), if only one
        type's do: the answer's type when no word names it."""
        if self._spot_attributes is None:
            return None
        spot = self._spot_attributes
        types = self._schema.node_type_names
        having = [t for t in types if spot(text.copy(), t, False)]  # a bare value may be a name's word
        if not having:
            # but not an acronym as stored, free in the question ("*DECIPHER* entries that list X")
            acronyms = [
                t.text
                for i, t in enumerate(text.tokens)
                if text.free(i, i + 1) and t.text.isupper() and t.text.isalpha()
            ]
            having = [t for t in types if acronyms and spot(QuestionText.of(" ".join(acronyms)), t, True)]
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

    def _one_type_pairs(self, question: str) -> str:
        """ "a *person or team* who …", "*genes/proteins* that …": two words for one type are one noun (the "or"
        would otherwise split the clause the chain is read from)."""

        def merge(match: re.Match[str]) -> str:
            first = self._types.word_type(match.group(1).lower())
            same = first is not None and first == self._types.word_type(match.group(2).lower())
            return match.group(1) if same else match.group(0)

        return _TYPE_WORD_PAIR.sub(merge, question)

    def _claim_knowledge_base_context(self, text: QuestionText, warnings: list[str]) -> None:
        """ "… the nginx package *in Debian*?", "… subtypes of tachycardia *in HPO*": a place named by the knowledge
        base's own name or description, or a source its type descriptions cite by acronym, is where every answer
        is, not a node the answer is related to; claimed before names are looked up, so it never becomes one."""
        for i in range(len(text)):
            word = text.tokens[i].lower
            if word not in self._own_words or not text.free(max(i - 1, 0), i + 1):
                continue
            if i + 1 < len(text) and text.gap_before(i + 1).strip() == ":":
                continue  # "ORPHA:2898": the start of a code
            closing = (
                i + 1 == len(text)
                or text.boundary_before(i + 1)
                or text.is_boundary_word(i + 1)
                or text.tokens[i + 1].lower in RELATIVE_PRONOUNS  # "anything *in HPO* that counts as …"
            )
            # "in HPO", "in *the* HPO" (a written name: "on the packages" is no place)
            named = not text.tokens[i].text.islower()
            before = i - 2 if named and i > 1 and text.tokens[i - 1].lower in ARTICLES else i - 1
            if before >= 0 and text.tokens[before].lower in KB_CONTEXT_PREPOSITIONS and closing:
                text.claim(before, i + 1, "context")
            elif (  # "What *HPO* terms …", "*HPO* terms two levels below …": the source qualifies the answer's noun
                word in self._sources
                and (i == 0 or text.tokens[i - 1].lower in QUESTION_WORDS | ARTICLES)
                and i + 1 < len(text)
                # a plural noun: "an *EC number*" names an attribute, "*EC numbers*" after "with" too
                and noun_lemma(text.tokens[i + 1].lower) not in (None, text.tokens[i + 1].lower)
                and not self._stored_value(text.tokens[i].text)  # "*DECIPHER* entries": the source it comes from
            ):
                text.claim(i, i + 1, "context")
            else:
                continue
            warnings.append(f"{text.tokens[i].text!r} names the knowledge base itself; not a constraint")

    def _stored_value(self, word: str) -> bool:
        """Whether the word alone, as written, is a value of some type's small-vocabulary attribute."""
        spot = self._spot_attributes
        return spot is not None and any(spot(QuestionText.of(word), t, True) for t in self._schema.node_type_names)


_TYPE_WORD_PAIR = re.compile(r"(?<![\w-])([A-Za-z]+)(?:\s+(?:or|and)\s+|\s*/\s*)([A-Za-z]+)(?![\w-])")
KB_CONTEXT_PREPOSITIONS = frozenset({"in", "within", "on", "from", "across", "for"})
