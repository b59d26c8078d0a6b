"""Chains through an unnamed node: "genes associated with *a disease that* presents with X", "diseases with *a
phenotype that is a subtype of* Y", "genes located in *a part of* Z".

Two readings are tried for a constant, both from the schema and the clause's words:
- a type word between the answer and the constant, followed by words of its own ("a disease *that presents
  with*"), names the intermediate node: the words before it choose the edge to the answer, the words after it the
  edge to the constant;
- without one, an indefinite noun phrase next to the constant may name an edge that joins nodes of the
  constant's own type (a hierarchy: is_a, part_of, regulates) while the rest of the clause names the edge to the
  answer ("located in | a part of Z"); that reading is taken only when it explains the words clearly better than
  a single edge.
Which end of an edge between two nodes of one type each side sits on follows the clause: "regulated by X" and
"broader than X" make X the source, "a subtype of X" makes the other side the source. Every edge the chain ends
with must exist on the constant's own nodes.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from skbqa.query.encoder import Encoder
from skbqa.skb.schema import EdgeType, Schema
from skbqa.stages.parse.chain_words import (
    INDEFINITE,
    RELATING_PREPOSITIONS,
    RELATIVE_PRONOUNS,
    content_words,
    copula_of_the_answer,
    far_is_subject,
    is_level_noun,
    names_narrower,
    narrower_tail,
    shares_the_node,
    without_name_article,
)
from skbqa.stages.parse.question_text import is_discourse_word
from skbqa.stages.parse.relations import (
    PLAIN_EDGE_BONUS,
    Hop,
    RelationOption,
    both_ways,
    edge_text,
    is_plain,
    shared_weight,
    stem_weights,
    stems,
)
from skbqa.stages.parse.type_mentions import TypeMention, noun_lemma
from skbqa.stores.graph.base import Direction, GraphStore

LEXICAL_WEIGHT = 1.0
COSINE_WEIGHT = 0.5
# how much worse than the best single edge the rest of a hierarchy reading may name its edge
HIERARCHY_MARGIN = 0.15
AMBIGUITY_MARGIN = 0.05  # two edges of a hop this close both stay possible
MIN_HIERARCHY_COSINE = 0.2
# What a taxonomy's edge says, in English: the one edge of a type that words for its levels mean ("the *parents*
# of", "*directly above*", "its *children*") is the one whose name and description read most like this.
TAXONOMY_PHRASE = "is a more specific kind of: a subtype, subclass or child of its parent"
LEVEL_WORDS = frozenset({"above", "below", "beneath", "broader", "narrower", "level", "levels"})


@dataclass(frozen=True)
class Part:
    """Words of the clause that state one hop, and whether the far (constant-side) node is that hop's subject."""

    words: tuple[str, ...]
    far_is_subject: bool


class ChainReader:
    def __init__(self, schema: Schema, encoder: Encoder) -> None:
        self._schema = schema
        self._encoder = encoder
        self._edges = list(schema.edge_types)
        # A type's name inside an edge's name ("gene_located_in_cellular_*component*") is no evidence for that
        # edge: "located in *a component* of X" names a hierarchy hop, not the answer's edge twice.
        type_stems = set().union(*(stems(t.name.replace("_", " ")) for t in schema.node_types))
        self._edge_stems = {id(e): stems(edge_text(e)) - type_stems for e in self._edges}
        self._stem_weights = stem_weights(self._edges)
        self._edge_vectors: dict[int, np.ndarray] | None = None
        self._taxonomies: dict[str, str | None] | None = None

    def _vectors(self) -> dict[int, np.ndarray]:
        if self._edge_vectors is None:
            vectors = self._encoder.encode([edge_text(e) for e in self._edges])
            self._edge_vectors = {id(e): v for e, v in zip(self._edges, vectors, strict=True)}
        return self._edge_vectors

    def warm(self) -> None:
        self._vectors()

    def taxonomy(self, type_name: str) -> str | None:
        """The name of the edge among the type's own nodes that reads most like a taxonomy (None: no such edge)."""
        if self._taxonomies is None:  # every type's at once: one encoding of the phrase
            (phrase,) = self._encoder.encode([TAXONOMY_PHRASE])
            # its words ("a *kind* of", "more *specific*") and its meaning, weighed as any hop's words are
            words = re.findall(r"[a-z]+", TAXONOMY_PHRASE.lower())
            self._taxonomies = {}
            for node_type in self._schema.node_types:
                own = self.between(node_type.name, node_type.name)
                best = max(own, key=lambda e: self.score(words, e, phrase)) if own else None
                self._taxonomies[node_type.name] = best.name if best is not None else None
        return self._taxonomies.get(type_name)

    def between(self, a: str, b: str) -> list[EdgeType]:
        return [e for e in self._edges if {e.source, e.target} == {a, b}]

    def evidence(self, words: Sequence[str], edge: EdgeType, vector: np.ndarray | None) -> tuple[float, float]:
        """(share of the words' content stems the edge's name and description share, cosine of words and edge)."""
        content = content_words(words)
        if not content:
            return 0.0, 0.0
        shared = shared_weight(stems(" ".join(content)), self._edge_stems[id(edge)], self._stem_weights)
        lexical = shared / len(content)
        cosine = float(self._vectors()[id(edge)] @ vector) if vector is not None else 0.0
        return lexical, cosine

    def score(self, words: Sequence[str], edge: EdgeType, vector: np.ndarray | None) -> float:
        lexical, cosine = self.evidence(words, edge, vector)
        return LEXICAL_WEIGHT * lexical + COSINE_WEIGHT * cosine

    def hop(self, near_type: str, far_type: str, part: Part, vector: np.ndarray | None) -> list[tuple[float, Hop]]:
        """Edges between the two types that the part's words can mean, best first, as hops seen from the far side
        (the one nearer the constant)."""
        found: list[tuple[float, Hop]] = []
        edges = self.between(near_type, far_type)
        both = both_ways(edges, near_type, far_type)  # "imports" module to package and back: as the words say
        edges = [e for e in edges if e.name not in both or (e.source == far_type) == part.far_is_subject]
        evidence = [self.evidence(part.words, edge, vector) for edge in edges]
        # words that name none of the edges ("phenotypes *occur in* diseases …") leave the plain edge the reading
        unnamed = not any(lexical for lexical, _ in evidence)
        # words for a hierarchy's levels between two nodes of one type mean its taxonomy ("the *parents* of …")
        levels = near_type == far_type and unnamed and _speaks_of_levels(part.words)
        taxonomy = self.taxonomy(near_type) if levels else None
        for edge, (lexical, cosine) in zip(edges, evidence, strict=True):
            far_source = part.far_is_subject if near_type == far_type else edge.source == far_type
            plain = PLAIN_EDGE_BONUS if (unnamed and is_plain(edge)) or edge.name == taxonomy else 0.0
            score = LEXICAL_WEIGHT * lexical + COSINE_WEIGHT * cosine + plain
            found.append((score, Hop(edge, far_source)))
        found.sort(key=lambda item: -item[0])
        return found

    def via_mentions(
        self,
        clause: tuple[list[str], list[str]],
        mentions: Sequence[TypeMention],
        offsets: Sequence[int],
        target_type: str,
        constant_type: str,
        encode: dict[str, np.ndarray],
        graph: GraphStore,
        constant_nodes: np.ndarray,
    ) -> RelationOption | None:
        """The chain answer –(words before the first type word)– intermediate –(words up to the next)– … –(words
        after the last)– constant, through one intermediate node per type word ("phenotypes of *diseases*
        associated with *genes* located at X"). `offsets`: where each type word starts in the clause's words."""
        before, after = clause
        cuts = [0]
        for mention, offset in zip(mentions, offsets, strict=True):
            cuts += [offset, offset + (mention.end - mention.start)]
        parts_words = [before[cuts[k] : cuts[k + 1]] for k in range(0, len(cuts) - 1, 2)]
        parts_words.append(before[cuts[-1] :] + after)
        # "tags that [any package built from X] *is tagged with*": a relative clause whose object is the answer
        # ends in its verb, after the constant; that verb is the answer's hop, with the nearer node its subject
        relative = False  # "the packages *that X recommends*": X, the far node, is the last verb's subject
        # the word that opens the constant's own clause, past its article ("the genus *that* the horse belongs to")
        opener = (without_name_article(before[cuts[-1] :]) or [""])[-1]
        gap = (
            not content_words(parts_words[0])
            and bool(content_words(after))
            and bool(content_words(before[cuts[-1] :]))
        )
        if gap:
            parts_words[0] = parts_words[0] + after
            parts_words[-1] = before[cuts[-1] :]
        elif not content_words(parts_words[0]) and opener in RELATIVE_PRONOUNS and len(content_words(after)) >= 2:
            # "what do the packages *that* X *maintains* | *depend on*": the relative clause's verb is the last
            # hop; the main verb after it is the answer's
            split = after.index(content_words(after)[0]) + 1
            parts_words[0] = parts_words[0] + after[split:]
            parts_words[-1] = before[cuts[-1] :] + after[:split]
            gap = relative = True
        elif (not opener or opener in RELATIVE_PRONOUNS) and content_words(after):
            # "the packages (*that*) X *recommends*", "the stuff X *depends on*": its one verb, with X its subject;
            # "… that X is suggested *by*": a passive, whose agent is the nearer node (what follows is the main
            # clause's: "which sections are [the packages that X is suggested by] *in*")
            relative = True
            if "by" in after:
                parts_words[-1] = before[cuts[-1] :] + after[: after.index("by") + 1]
        for k, (mention, offset) in enumerate(zip(mentions, offsets, strict=True)):
            if mention.says_kind and k + 1 < len(parts_words):  # "members of the *genus* | *genus* that X …"
                kind = before[offset : offset + mention.end - mention.start]
                parts_words[k + 1] = kind + parts_words[k + 1]
                if not gap:
                    parts_words[k] = parts_words[k] + kind
        shared = len(mentions) == 1 and shares_the_node(parts_words[0], parts_words[-1])
        if shared:
            # "genes that *share* a disease *with* X", "diseases with a phenotype *in common with* X": one relation
            # on both sides of the shared node, named by the words of either side
            parts_words[0] = parts_words[-1] = parts_words[0] + parts_words[-1]
        if any(not content_words(words) and not RELATING_PREPOSITIONS & set(words) for words in parts_words[1:]):
            # "diseases like X": a type word that only introduces what follows ("tracks *on* X" relates)
            return None
        types = [target_type, *(m.type_name for m in mentions), constant_type]
        # "a disease that has *a subtype of* X as a feature": one more, unnamed node of X's type next to X
        tail = narrower_tail(before[cuts[-1] :])
        narrower: list[tuple[float, Hop]] = []
        type_word_is_narrower = False
        if tail:
            tail_words = before[len(before) - tail :]
            narrower = self._hierarchy_hops(tail_words, constant_type, types[-2], None, graph, constant_nodes)
            if narrower:
                rest = before[cuts[-1] : len(before) - tail] + after
                # "an *activity* that is a more specific form of X": the type word's node is the narrower one
                type_word_is_narrower = types[-2] == constant_type and not content_words(rest)
                if type_word_is_narrower:
                    parts_words.pop()
                else:
                    parts_words[-1] = rest
        ranked: list[list[tuple[float, Hop]]] = []
        for k, words in enumerate(parts_words):
            # "… that X *depends on*": X, the far node, is the subject unless the verb is passive
            subject_is_far = far_is_subject(words) != (
                (gap and k == 0) or (relative and k == len(parts_words) - 1)
            )
            part = Part(tuple(words), subject_is_far)
            ranked.append(self.hop(types[k], types[k + 1], part, encode.get(" ".join(words))))
        if not narrower:
            ranked[-1] = [item for item in ranked[-1] if _exists(graph, constant_nodes, item[1])]
        if shared and ranked[-1]:  # both sides of a shared node by the one edge the constant has
            ranked[0] = [item for item in ranked[0] if item[1].edge.name == ranked[-1][0][1].edge.name]
        if not all(ranked):
            return None
        score = sum(hops[0][0] for hops in ranked) / len(ranked) * 2  # per hop, on the scale of a two-hop chain
        # a hop whose words do not separate its two best edges accepts any edge; the others keep theirs
        hops = tuple(replace(found[0][1], any_edge=_close(found)) for found in reversed(ranked))
        vias = tuple(m.type_name for m in reversed(mentions))
        if type_word_is_narrower:
            hops = (replace(narrower[0][1], any_edge=_close(narrower)), *hops)
        elif narrower:
            hops, vias = (replace(narrower[0][1], any_edge=_close(narrower)), *hops), (constant_type, *vias)
        return RelationOption(hops, vias, score)

    def hierarchy(
        self,
        before: list[str],
        target_type: str,
        constant_type: str,
        encode: dict[str, np.ndarray],
        graph: GraphStore,
        constant_nodes: np.ndarray,
    ) -> RelationOption | None:
        """The chain answer –(left words)– node of the constant's type –(hierarchy words)– constant, when it
        explains the clause clearly better than any single edge between the two types."""
        best = self._answer_side_hierarchy(before, target_type, constant_type, encode, graph, constant_nodes)
        if not self.between(constant_type, constant_type):
            return best
        before = without_name_article(before)  # "for the parts of | *the* ear"
        same_type = constant_type == target_type
        whole = encode.get(" ".join(before))
        singles = {e.name: self.score(before, e, whole) for e in self.between(target_type, constant_type)}
        for cut in range(1, len(before)):
            left, right = before[:cut], before[cut:]
            # of the answer's own type, the rest must say something besides the request ("*list* the subtypes …")
            asked = [w for w in content_words(left) if not is_discourse_word(w)]
            if right[0] not in INDEFINITE or not content_words(right) or (same_type and not asked):
                continue  # an unnamed node is introduced as one: "located in *a part of* X", not "take part in X"
            if not set(right) & (RELATING_PREPOSITIONS | RELATIVE_PRONOUNS):
                continue  # "belong to *the region* Wales": a noun that labels the name, not a node before it
            if copula_of_the_answer(left, same_type):
                continue  # "what things *are a kind of* X": the answer is that narrower node, one edge from X
            right_vector = encode.get(" ".join(right))
            hierarchy = self._hierarchy_hops(
                right, constant_type, target_type, right_vector, graph, constant_nodes
            )
            # the answer's own edge reads its direction from its words: "regulated by | a subtype of X"
            to_answer = self.hop(
                target_type, constant_type, Part(tuple(left), far_is_subject(left)), encode.get(" ".join(left))
            )
            if not hierarchy or not to_answer:
                continue
            # The hierarchy words must have their own evidence (checked above) and the rest must still name the edge
            # to the answer about as well as the whole clause names a single edge, unless English names the
            # narrower node outright ("show *a subtype of* X"): then the rest only chooses among the edges.
            named = narrower_tail(right) == len(right)
            score = hierarchy[0][0] + to_answer[0][0]
            # a single edge the whole clause reads best only through the hierarchy's own words ("… a word that is
            # *the opposite of* X") is no rival: the rest is measured against every other edge
            single = max((v for k, v in singles.items() if k != hierarchy[0][1].edge.name), default=0.0)
            if (named or to_answer[0][0] >= single - HIERARCHY_MARGIN) and (best is None or score > best.score):
                answer_hop = to_answer[0][1]
                if named and _close(to_answer):  # the hierarchy hop stays exact; the answer's edge is any of them
                    answer_hop = replace(answer_hop, any_edge=True)
                best = RelationOption(
                    (hierarchy[0][1], answer_hop), (constant_type,), score, any_edge=_close(hierarchy)
                )
        return best

    def _answer_side_hierarchy(
        self,
        before: list[str],
        target_type: str,
        constant_type: str,
        encode: dict[str, np.ndarray],
        graph: GraphStore,
        constant_nodes: np.ndarray,
    ) -> RelationOption | None:
        """The chain answer –hierarchy– node of the answer's type –(right words)– constant, when the answer is
        said to be a narrower node of an unnamed one: "phenotypes that are *subtypes of a* feature recorded for
        X", "processes that are *part of some* process regulated by X"."""
        if not self.between(target_type, target_type):
            return None
        best: RelationOption | None = None
        for cut in range(2, len(before)):
            left, right = before[:cut], before[cut:]
            if left[-1] != "of" or not names_narrower(left, len(left) - 2) or right[0] not in INDEFINITE:
                continue
            if not content_words(right):
                continue
            near = Part(tuple(left), far_is_subject(left))
            hierarchy = self.hop(target_type, target_type, near, encode.get(" ".join(left)))
            far = Part(tuple(right), far_is_subject(right))
            to_constant = [
                item
                for item in self.hop(target_type, constant_type, far, encode.get(" ".join(right)))
                if _exists(graph, constant_nodes, item[1])
            ]
            if not hierarchy or not to_constant:
                continue
            score = hierarchy[0][0] + to_constant[0][0]
            if best is None or score > best.score:
                best = RelationOption(
                    (to_constant[0][1], hierarchy[0][1]),
                    (target_type,),
                    score,
                    any_edge=_close(hierarchy) or _close(to_constant),
                )
        return best

    def _hierarchy_hops(
        self,
        words: list[str],
        constant_type: str,
        target_type: str,
        vector: np.ndarray | None,
        graph: GraphStore,
        constant_nodes: np.ndarray,
    ) -> list[tuple[float, Hop]]:
        """Edges among the constant's type that the words name, best first: by a shared stem, or by a cosine that
        is both fair in itself and above the words' cosine to every edge between answer and constant (so "a part
        of" reads as part_of, while "associated with" stays the answer's own edge)."""
        # English "sub-" before a noun ("a *sub*process of", "a *sub*type of"), or a kind or part noun before "of",
        # names a narrower node of the same kind: a hierarchy hop, whichever edge the rest of the words fit best.
        narrower = any(w.startswith("sub") and noun_lemma(w[3:]) is not None for w in content_words(words))
        narrower = narrower or narrower_tail(words) > 0
        if vector is None and not narrower:
            return []
        vectors = self._vectors()
        rival = (
            max((float(vectors[id(e)] @ vector) for e in self.between(target_type, constant_type)), default=0.0)
            if vector is not None
            else 0.0
        )
        far = Part(tuple(words), far_is_subject(words))
        found: list[tuple[float, Hop]] = []
        for edge in self.between(constant_type, constant_type):
            lexical, cosine = self.evidence(words, edge, vector)
            hop = Hop(edge, far.far_is_subject)
            named = lexical > 0 or narrower or (cosine >= MIN_HIERARCHY_COSINE and cosine > rival)
            if named and _exists(graph, constant_nodes, hop):
                found.append((LEXICAL_WEIGHT * lexical + COSINE_WEIGHT * cosine, hop))
        found.sort(key=lambda item: -item[0])
        return found


def _speaks_of_levels(words: Sequence[str]) -> bool:
    return any(w in LEVEL_WORDS or is_level_noun(w) for w in words)


def _close(ranked: list[tuple[float, Hop]]) -> bool:
    """The words do not separate the two best edges of a hop (same direction): the hop accepts either."""
    return (
        len(ranked) > 1
        and ranked[0][1].from_constant_side == ranked[1][1].from_constant_side
        and ranked[0][0] - ranked[1][0] < AMBIGUITY_MARGIN
    )


def _exists(graph: GraphStore, nodes: np.ndarray, hop: Hop) -> bool:
    """Whether the constant's nodes have the hop's edge on their side (the data rules the reading out otherwise)."""
    if not nodes.size:
        return True
    direction: Direction = "out" if hop.from_constant_side else "in"
    return int(graph.degree(nodes, hop.edge.name, direction).sum()) > 0
