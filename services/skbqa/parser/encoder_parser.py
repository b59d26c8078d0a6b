"""The encoder parser (the default, LLM-free): steps 1–3 from the question's words, the schema and the SKB's names.

Passes over the question, each claiming the words it uses:
1. target type — the first node-type word ("Which *genes* …"); without one, the type whose nodes dominate the
   question's nearest documents (`TargetTypeGuesser`);
2. quoted text and keyword cues ("that mention X", "related to X") → text constraints;
3. attribute values the SKB actually has for the target type ("on chromosome 17") → attribute constraints;
4. constants — longest match of word sequences against every name and alias (`NameLexicon`), then an embedding
   fallback over node names for leftover phrases (a dropped word, a synonym);
5. relations — for each constant, the schema's edge types between its type and the target type (or a two-hop
   path), ranked by the clause's connecting words (`RelationChooser`);
6. the remaining content words → one more text constraint for ranking.
Nothing here is specific to one SKB: types, edges, names, aliases and attribute values all come from the index.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from skbqa.models.encoder import Encoder
from skbqa.parser.cues import TextCue, claim_text_cues
from skbqa.parser.query import AttributeConstraint, StructuredQuery, Symbol, Triplet
from skbqa.parser.question_text import FUNCTION_WORDS, QuestionText
from skbqa.parser.relations import RelationChooser, RelationOption, stems
from skbqa.parser.type_mentions import TypeMention, TypeVocabulary
from skbqa.stores.index import IndexStores
from skbqa.strategies.base import QueryContext
from skbqa.symbols.lexicon import NAME, NameLexicon

TARGET = "y"
FUZZY_MIN_COSINE = 0.86  # a leftover phrase links to a node name only when the name vectors are this close
MIN_SINGLE_WORD_CHARS = 3
MIN_FUZZY_WORDS = 2

# Words naming the broader end of a hierarchy: "parents of X" means X is_a answer.
INVERSE_WORDS = frozenset(
    {
        "parent",
        "parents",
        "superclass",
        "superclasses",
        "supertype",
        "supertypes",
        "ancestor",
        "ancestors",
        "broader",
    }
)
_RELATIVE_PRONOUNS = frozenset({"that", "which", "whom", "who"})
# Words that may end a question after the last constant without making it a subject ("… are there?").
_CLAUSE_TAIL = frozenset({"are", "is", "there", "exist", "exists", "s"})

AttributeSpotter = Callable[[QuestionText, str], list[AttributeConstraint]]
TargetTypeGuesser = Callable[[QueryContext], str | None]


@dataclass
class _Constant:
    start: int
    end: int
    surface: str
    positions: np.ndarray  # matching nodes (names first), all types
    exact: bool  # found in the lexicon (False: embedding fallback)


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
        self._types = TypeVocabulary(self._schema)
        self._spot_attributes = attribute_spotter
        self._guess_target_type = guess_target_type
        self._fuzzy_min_cosine = fuzzy_min_cosine
        self._chooser: RelationChooser | None = None
        self._lock = threading.Lock()
        self._edge_name_stems = set().union(*(stems(e.name.replace("_", " ")) for e in self._schema.edge_types))
        self._relation_stems = set().union(*(stems(e.name + " " + e.description) for e in self._schema.edge_types))

    def _relations(self, encoder: Encoder) -> RelationChooser:
        with self._lock:
            if self._chooser is None:
                self._chooser = RelationChooser(self._schema, encoder)
            return self._chooser

    def warm(self, encoder: Encoder) -> None:
        self._relations(encoder).warm()

    # ------------------------------------------------------------------------------------------------ parse

    def parse(self, query: QueryContext) -> StructuredQuery:
        text = QuestionText.of(query.question)
        warnings: list[str] = []
        with query.stage("parse.target_type"):
            mentions = self._types.mentions(text)
            target_type: str | None = None
            if mentions:
                target_type = mentions[0].type_name
                text.claim(mentions[0].start, mentions[0].end, "target")
            elif self._guess_target_type is not None:
                target_type = self._guess_target_type(query)
                warnings.append(f"no type word in the question; target type guessed as {target_type!r}")
        with query.stage("parse.constraints"):
            cues = claim_text_cues(text)
            texts = list(text.quotes) + [
                cue.text for cue in cues if not self._names_a_node(text, cue, target_type)
            ]
            constraints = self._spot_attributes(text, target_type) if self._spot_attributes and target_type else []
        with query.stage("parse.constants"):
            constants = self._exact_constants(text)
            constants += self._fuzzy_constants(text, query)
        with query.stage("parse.relations"):
            parsed = self._assemble(query, text, target_type, constants, warnings)
        parsed.constraints.extend(constraints)
        parsed.text_constraints.extend(t for t in texts if t)
        leftover = [w for w in text.leftover_content() if w.lower()[:5] not in self._relation_stems]
        if leftover:
            parsed.text_constraints.append(" ".join(leftover))
        return parsed

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

    # ------------------------------------------------------------------------------------------------ constants

    def _exact_constants(self, text: QuestionText) -> list[_Constant]:
        lexicon = self._lexicon()
        found: list[_Constant] = []
        i = 0
        while i < len(text):
            hit: _Constant | None = None
            if text.claimed[i] is None:
                for n in range(min(lexicon.max_words, len(text) - i), 0, -1):
                    if not text.free(i, i + n) or not self._may_be_name(text, i, i + n):
                        continue
                    surface = text.span_text(i, i + n)
                    positions = lexicon.positions(surface, original=surface)
                    if positions.size:
                        hit = _Constant(i, i + n, surface, positions, True)
                        break
            if hit:
                found.append(hit)
                text.claim(hit.start, hit.end, "constant")
                i = hit.end
            else:
                i += 1
        return self._drop_relation_labels(text, found)

    def _drop_relation_labels(self, text: QuestionText, found: list[_Constant]) -> list[_Constant]:
        """A name that only labels the relation of the next name is not a constant: "with the *mode of
        inheritance* Autosomal dominant …", "whose *inheritance* is …", "*localised* to the site of …". It is
        followed by the next name with at most two function words between, and is either made of an edge type's
        name words or is a single word (some SKBs have nodes called "Mode of inheritance" or "Localized")."""
        kept: list[_Constant] = []
        for i, constant in enumerate(found):
            nxt = found[i + 1] if i + 1 < len(found) else None
            if nxt is not None and self._labels_next(text, constant, nxt):
                text.claim(constant.start, constant.end, "relation")
                continue
            kept.append(constant)
        return kept

    def _labels_next(self, text: QuestionText, constant: _Constant, nxt: _Constant) -> bool:
        between = text.words(constant.end, nxt.start)
        if len(between) > 2 or any(w not in FUNCTION_WORDS for w in between):
            return False
        if any(text.boundary_before(i) for i in range(constant.end, nxt.start + 1)):
            return False
        words = stems(constant.surface)
        return bool(words) and (words <= self._edge_name_stems or constant.end - constant.start == 1)

    def _may_be_name(self, text: QuestionText, start: int, end: int) -> bool:
        words = text.words(start, end)
        if all(w in FUNCTION_WORDS for w in words):
            return False
        if end - start == 1 and len(words[0]) < MIN_SINGLE_WORD_CHARS:
            return False
        # A bare type word ("gene", "diseases") is a type hint, not a node name.
        return not self._types.is_form(words)

    def _fuzzy_constants(self, text: QuestionText, query: QueryContext) -> list[_Constant]:
        """Leftover phrases with content words: link to the closest node name if it is close enough."""
        runs = []
        for start, end in text.free_runs():
            # Trim connecting words at the edges ("participating in …"): they name the relation, not the node.
            while start < end and self._connecting(text.tokens[start].lower):
                start += 1
            while end > start and self._connecting(text.tokens[end - 1].lower):
                end -= 1
            content = [w for w in text.words(start, end) if not self._connecting(w) and not w.isdigit()]
            # One leftover word is a verb or a number far more often than a misspelt name, and the lexicon
            # already tried it exactly: the embedding fallback is for phrases.
            if len(content) >= MIN_FUZZY_WORDS and not self._types.occurs_in(text.words(start, end)):
                runs.append((start, end))
        if not runs:
            return []
        names = self._stores.vectors["name"]
        vectors = query.encode_with_question([text.span_text(s, e) for s, e in runs])
        found: list[_Constant] = []
        for (start, end), vector in zip(runs, vectors, strict=True):
            hits = names.search(vector[None, :], 5)[0]
            if hits.keys.size and float(hits.scores[0]) >= self._fuzzy_min_cosine:
                keep = hits.keys[hits.scores >= self._fuzzy_min_cosine]
                found.append(_Constant(start, end, self._stores.nodes.names[int(keep[0])], keep, False))
                text.claim(start, end, "constant")
        return found

    def _connecting(self, word: str) -> bool:
        return word in FUNCTION_WORDS or word[:5] in self._relation_stems

    # ------------------------------------------------------------------------------------------------ relations

    def _assemble(
        self,
        query: QueryContext,
        text: QuestionText,
        target_type: str | None,
        constants: list[_Constant],
        warnings: list[str],
    ) -> StructuredQuery:
        parsed = StructuredQuery(TARGET, {TARGET: Symbol(TARGET, target_type)}, warnings=warnings)
        if not constants:
            return parsed
        if target_type is None:
            warnings.append("no target type: constants cannot be related to the answer")
            return parsed
        chooser = self._relations(query.encoder)
        hints = self._types.mentions(text)
        node_types = self._stores.nodes.types
        plans: list[tuple[_Constant, str, list[tuple[str, np.ndarray, list[RelationOption]]]]] = []
        for constant in constants:
            hinted = _hint_before(hints, constant.start, text)
            subject = self._constant_is_subject(text, constant)
            by_type = []
            for type_code in _types_in_order(constant.positions, node_types):
                type_name = self._schema.node_types[type_code].name
                if hinted is not None and type_name != hinted:
                    continue
                nodes = constant.positions[node_types[constant.positions] == type_code][:5]
                options = chooser.options(type_name, target_type, constant_is_subject=subject)
                if options:
                    by_type.append((type_name, nodes, options))
            plans.append((constant, self._phrase(text, constant), by_type))
        # Phrases are embedded only for constants whose relation is ambiguous (several options), in one call.
        ambiguous = [i for i, (_, _, by_type) in enumerate(plans) if sum(len(o) for _, _, o in by_type) > 1]
        vectors = query.encode_with_question([plans[i][1] or plans[i][0].surface for i in ambiguous])
        phrase_vectors = {i: vectors[j] for j, i in enumerate(ambiguous)}
        for index, (constant, phrase, by_type) in enumerate(plans):
            name = f"c{index + 1}"
            best: tuple[float, str, RelationOption] | None = None
            for type_name, nodes, options in by_type:
                ranked = chooser.rank(
                    options, phrase, phrase_vectors.get(index), graph=self._stores.graph, constant_nodes=nodes
                )
                if ranked and (best is None or ranked[0].score > best[0]):
                    best = (ranked[0].score, type_name, ranked[0])
            if best is None:
                # Nothing in the schema links this name to the answer: keep its words for ranking instead.
                parsed.text_constraints.append(constant.surface)
                warnings.append(f"{constant.surface!r} cannot be related to a {target_type}: used as text")
                continue
            _, type_name, option = best
            parsed.symbols[name] = Symbol(name, type_name, (constant.surface,))
            via = None
            if option.via is not None:
                via = f"m{index + 1}"
                parsed.symbols[via] = Symbol(via, option.via)
            parsed.triplets.extend(option.triplets(name, TARGET, via))
        return parsed

    def _clause_words(self, text: QuestionText, constant: _Constant) -> tuple[list[str], list[str]]:
        """The words of the constant's clause before and after it (the clause extends over free tokens only, so
        the constant's own claim does not stop it)."""
        left, right = text.clause(constant.start, constant.end)
        return text.words(left, constant.start), text.words(constant.end, right)

    def _phrase(self, text: QuestionText, constant: _Constant) -> str:
        """The clause's words around the constant, without it: what the question says links it to the answer."""
        before, after = self._clause_words(text, constant)
        return " ".join(before + after)

    def _constant_is_subject(self, text: QuestionText, constant: _Constant) -> bool:
        """English relative clauses: the constant is the subject when a relative pronoun introduces it ("… that X
        is a kind of", "of which X is a subtype") or content words follow it in its clause ("… that have X as a
        part"); otherwise the answer is ("… that cite X", "… that are subtypes of X")."""
        before_words, after_words = self._clause_words(text, constant)
        before = [w for w in before_words if w not in ("the", "a", "an")]
        after = [w for w in after_words if w not in FUNCTION_WORDS and w not in _CLAUSE_TAIL]
        subject = bool(before and before[-1] in _RELATIVE_PRONOUNS) or bool(after)
        # "… that are parents of X": words for the broader end of a hierarchy turn the relation around.
        inverse = any(w in INVERSE_WORDS for w in before_words)
        return subject != inverse


def _hint_before(hints: Sequence[TypeMention], start: int, text: QuestionText) -> str | None:
    """A type word just before a constant ("the gene BCS1L", "with the phenotype Anhidrosis")."""
    for mention in hints:
        between = text.words(mention.end, start)
        if mention.end <= start and all(w in ("the", "a", "an") for w in between):
            return mention.type_name
    return None


def _types_in_order(positions: np.ndarray, node_types: np.ndarray) -> list[int]:
    """Distinct type codes of the matching nodes, in order of first appearance (names come before aliases)."""
    codes = node_types[positions]
    _, first = np.unique(codes, return_index=True)
    return [int(codes[i]) for i in sorted(first)]


__all__ = ["NAME", "EncoderParser", "Triplet"]
