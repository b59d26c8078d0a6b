"""Which edge types link a constant to the target (encoder parser, no LLM).

Options come from the schema: every edge signature between the constant's type and the target type (direct),
or, when there is none, every path through one intermediate type (two-hop phrasing: "papers by authors at X").
They are ranked by how well the question's connecting words (the constant's clause without the constant) match
the edge's name and description — embedding cosine plus a lexical bonus for shared word stems — after dropping
options the constant's own nodes have no edge of (the data says the phrase cannot mean them).

Direction: the schema fixes it when the two types differ. For an edge between nodes of the same type ("is_a"),
English word order decides: when the clause continues after the constant ("… that X is a kind of", "of which X
is a subtype") the constant is the subject, i.e. the edge's source; otherwise ("… that are subtypes of X") the
answer is.
"""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np
import snowballstemmer

from skbqa.query.encoder import Encoder
from skbqa.query.structured import Triplet
from skbqa.skb.schema import EdgeType, Schema
from skbqa.stages.parse.question_text import FUNCTION_WORDS
from skbqa.stores.graph.base import Direction, GraphStore

LEXICAL_WEIGHT = 0.5
TWO_HOP_PENALTY = 0.2  # prefer a direct edge: a two-hop reading is the fallback when the words fit it better
AMBIGUITY_MARGIN = 0.05  # options this close both stay possible: the hop accepts either edge type
_WORD = re.compile(r"[a-z0-9]+")
# With no words of its own, a relation is read as the edge named only by its two types ("*phenotypes of* X" is
# disease_has_phenotype, not disease_has_mode_of_inheritance): by more than AMBIGUITY_MARGIN.
PLAIN_EDGE_BONUS = 0.1
# Of two edges the clause names alike ("*used*": uses_currency, formerly_used), the one whose name adds a word the
# clause does not say ("*formerly*", "*regional*") is the narrower reading: each such word costs this much.
UNSAID_NAME_WORD_PENALTY = 0.1
_LINKING_WORDS = frozenset({"has", "have", "with", "of", "to", "in"})
_AUXILIARIES = frozenset({"is", "are", "be", "was", "were", "been", "being", "gets", "get"})
_NOUN_PHRASE_WORDS = 3  # how far back a description's subject is looked for
_STEMMER = snowballstemmer.stemmer("english")
_STEMMER_LOCK = threading.Lock()


def stems(text: str) -> set[str]:
    """Stems of content words, cut to 5 letters: the Porter2 stem joins a word's inflections and derivations
    ("*means*" ~ "*meaning*", "*causes*" ~ "*causing*", "*ways* to" ~ "a particular *way*"), and the cut joins
    what the stemmer keeps apart ("*classified*" ~ "*classification*", "*antonym*" ~ "*antonymy*")."""
    return {_stem(w) for w in _WORD.findall(text.lower()) if w not in FUNCTION_WORDS and len(w) > 2}


def stem_weights(edges: Sequence[EdgeType]) -> dict[str, float]:
    """How much sharing each stem says about which edge is meant: a stem in the words of one edge name of n says
    all (1.0), one in every edge's description ("the *concept* is … the *target* concept") next to nothing.
    An inverse document frequency over the schema's edge names, scaled to [0, 1]."""
    by_name: dict[str, set[str]] = {}
    for edge in edges:
        by_name.setdefault(edge.name, set()).update(stems(edge_text(edge)))
    count = len(by_name)
    frequency: dict[str, int] = {}
    for words in by_name.values():
        for stem in words:
            frequency[stem] = frequency.get(stem, 0) + 1
    return {stem: math.log((count + 1) / n) / math.log(count + 1) for stem, n in frequency.items()}


def shared_weight(words: set[str], edge_stems: set[str], weights: dict[str, float]) -> float:
    """The weight of the words' stems the edge's name and description share."""
    return sum(weights.get(stem, 1.0) for stem in words & edge_stems)


@lru_cache(maxsize=1 << 16)
def _stem(word: str) -> str:
    with _STEMMER_LOCK:  # a Snowball stemmer keeps state while it stems: one word at a time
        return str(_STEMMER.stemWord(word))[:5]


def is_plain(edge: EdgeType) -> bool:
    """Whether the edge's name says nothing but its two types ("disease_has_phenotype"), between two types."""
    words = set(_WORD.findall(edge.name.replace("_", " ").lower()))
    types = set(_WORD.findall(f"{edge.source} {edge.target}".replace("_", " ").lower()))
    return edge.source != edge.target and not (words - types - FUNCTION_WORDS - _LINKING_WORDS)


def both_ways(edges: Sequence[EdgeType], a: str, b: str) -> set[str]:
    """The names of the edges the schema has from type a to type b and from b to a (two types, not one)."""
    if a == b:
        return set()
    forward = {e.name for e in edges if e.source == a and e.target == b}
    return forward & {e.name for e in edges if e.source == b and e.target == a}


def edge_text(edge: EdgeType) -> str:
    return f"{edge.name.replace('_', ' ')}: {edge.description}".strip(": ")


@dataclass(frozen=True)
class Hop:
    edge: EdgeType
    from_constant_side: bool  # True: the hop's source is on the constant's side of the path
    any_edge: bool = False  # the words did not separate this hop's edge from a rival: accept any edge type here


@dataclass(frozen=True)
class RelationOption:
    hops: tuple[Hop, ...]  # from the constant towards the target
    vias: tuple[str, ...]  # the intermediate node types, from the constant's side (one fewer than the hops)
    score: float = 0.0
    any_edge: bool = False  # the words did not separate this option from a rival: accept any edge type

    def triplets(self, constant: str, target: str, via_symbols: Sequence[str]) -> list[Triplet]:
        chain = [constant, *via_symbols, target]
        out: list[Triplet] = []
        for hop, left, right in zip(self.hops, chain, chain[1:], strict=False):
            head, tail = (left, right) if hop.from_constant_side else (right, left)
            out.append(Triplet(head, None if self.any_edge or hop.any_edge else hop.edge.name, tail))
        return out


class RelationChooser:
    def __init__(self, schema: Schema, encoder: Encoder) -> None:
        self._schema = schema
        self._encoder = encoder
        self._edges = list(schema.edge_types)
        self._edge_vectors: np.ndarray | None = None  # embedded lazily: no model work in the constructor
        self._edge_stems = [stems(edge_text(e)) for e in self._edges]
        self._name_stems = [stems(e.name.replace("_", " ")) - stems(f"{e.source} {e.target}") for e in self._edges]
        self._stem_weights = stem_weights(self._edges)
        self._target_verbs = [
            _verbs_of_the_target(e) if e.source == e.target else frozenset() for e in self._edges
        ]

    def _vectors(self) -> np.ndarray:
        if self._edge_vectors is None:
            self._edge_vectors = self._encoder.encode([edge_text(e) for e in self._edges])
        return self._edge_vectors

    def warm(self) -> None:
        self._vectors()

    def edge_vectors(self) -> np.ndarray:
        """The embedded text of every edge type, in the schema's order."""
        return self._vectors()

    def links_itself(self, node_type: str) -> bool:
        """Whether some edge type joins two nodes of this type."""
        return any(e.source == e.target == node_type for e in self._edges)

    def options(
        self, constant_type: str, target_type: str, *, constant_is_subject: bool, clause: Sequence[str] = ()
    ) -> list[RelationOption]:
        """Schema paths from the constant's type to the target type: direct ones, else through one type.
        `clause`: the words of the constant's clause (a verb whose subject an edge's description makes the target
        turns that edge's direction: "coffee is *made* of Y" for "… of which the target concept is *made*")."""
        said = stems(" ".join(clause)) if clause else set()
        direct = self._direct(constant_type, target_type, constant_is_subject, said)
        if direct:
            return direct
        paths: list[RelationOption] = []
        for middle in self._schema.node_type_names:
            if middle in (constant_type, target_type):
                continue
            for first in self._direct(constant_type, middle, constant_is_subject, said):
                for second in self._direct(middle, target_type, True, set()):
                    paths.append(RelationOption(first.hops + second.hops, (middle,)))
        return paths

    def _direct(
        self, from_type: str, to_type: str, constant_is_subject: bool, said: set[str]
    ) -> list[RelationOption]:
        found: list[RelationOption] = []
        # an edge the schema has both ways between the two types ("imports": module to package, package to module)
        # leaves its direction to the clause, as one between two nodes of one type does
        both = both_ways(self._edges, from_type, to_type)
        for edge, target_verbs in zip(self._edges, self._target_verbs, strict=True):
            # the clause's subject is the edge's source, unless the description says the clause's verb of the target
            source_side = constant_is_subject != bool(target_verbs & said)
            by_types = from_type != to_type and edge.name not in both
            if edge.source == from_type and edge.target == to_type and (by_types or source_side):
                found.append(RelationOption((Hop(edge, True),), ()))
            elif edge.source == to_type and edge.target == from_type and (by_types or not source_side):
                found.append(RelationOption((Hop(edge, False),), ()))
        return found

    def rank(
        self,
        options: list[RelationOption],
        phrase: str,
        phrase_vector: np.ndarray | None,
        *,
        graph: GraphStore | None = None,
        constant_nodes: np.ndarray | None = None,
    ) -> list[RelationOption]:
        """Options best first; those the constant's nodes have no first-hop edge for go last."""
        if not options:
            return []
        index = {id(e): i for i, e in enumerate(self._edges)}
        vectors = self._vectors()
        words = stems(phrase)
        scored: list[tuple[float, int, RelationOption]] = []
        # words that name none of the options' edges leave the plain edge the reading ("what traits does X have")
        unnamed = not any(
            set().union(*(self._edge_stems[index[id(h.edge)]] for h in option.hops)) & words for option in options
        )
        for order, option in enumerate(options):
            rows = [index[id(h.edge)] for h in option.hops]
            cosine = float(np.mean(vectors[rows] @ phrase_vector)) if phrase_vector is not None else 0.0
            shared = shared_weight(words, set().union(*(self._edge_stems[r] for r in rows)), self._stem_weights)
            lexical = shared / max(1, len(words))
            score = cosine + LEXICAL_WEIGHT * lexical - TWO_HOP_PENALTY * (len(option.hops) - 1)
            if shared:
                score -= UNSAID_NAME_WORD_PENALTY * sum(len(self._name_stems[r] - words) for r in rows)
            if unnamed and all(is_plain(h.edge) for h in option.hops):
                score += PLAIN_EDGE_BONUS
            if graph is not None and constant_nodes is not None and constant_nodes.size:
                first = option.hops[0]
                direction: Direction = "out" if first.from_constant_side else "in"
                if int(graph.degree(constant_nodes, first.edge.name, direction).sum()) == 0:
                    score -= 10.0  # the data rules it out; kept last in case the graph is incomplete
            scored.append((score, order, option))
        scored.sort(key=lambda item: (-item[0], item[1]))
        ranked = [RelationOption(o.hops, o.vias, s) for s, _, o in scored]
        if len(ranked) > 1 and _rivals(ranked[0], ranked[1]):
            ranked[0] = RelationOption(ranked[0].hops, ranked[0].vias, ranked[0].score, any_edge=True)
        elif len(ranked) > 1 and (hop := _rival_hop(ranked[0], ranked[1])) is not None:
            # "phenotypic features of X-associated diseases": the words pick the way, not the last hop's edge
            best = ranked[0]
            hops = tuple(replace(h, any_edge=True) if k == hop else h for k, h in enumerate(best.hops))
            ranked[0] = RelationOption(hops, best.vias, best.score)
        return ranked


def _verbs_of_the_target(edge: EdgeType) -> frozenset[str]:
    """Stems of the verbs an edge's description makes the target the subject of: "… of which *the target concept*
    is *made*". A passive with its agent ("the target is implied *by* it") says the agent's act, so it is none."""
    words = _WORD.findall(edge.description.lower())
    found: set[str] = set()
    for k, word in enumerate(words):
        if k < 2 or word in FUNCTION_WORDS or words[k - 1] not in _AUXILIARIES or words[k + 1 : k + 2] == ["by"]:
            continue
        subject: list[str] = []
        for before in reversed(words[max(0, k - 1 - _NOUN_PHRASE_WORDS) : k - 1]):
            if before in FUNCTION_WORDS and before != "the":
                break
            subject.append(before)
        if "target" in subject:
            found.add(_stem(word))
    return frozenset(found)


def _rival_hop(best: RelationOption, second: RelationOption) -> int | None:
    """The one hop where two paths through the same types differ only by its edge, when the words score them
    within AMBIGUITY_MARGIN of each other."""
    if len(best.hops) < 2 or len(best.hops) != len(second.hops) or best.vias != second.vias:
        return None
    if not _close_scores(best, second):
        return None
    pairs = list(zip(best.hops, second.hops, strict=True))
    if any(a.from_constant_side != b.from_constant_side for a, b in pairs):
        return None
    differing = [k for k, (a, b) in enumerate(pairs) if a.edge is not b.edge]
    return differing[0] if len(differing) == 1 else None


def _rivals(best: RelationOption, second: RelationOption) -> bool:
    """Two direct options, same direction, that the words score within AMBIGUITY_MARGIN of each other."""
    return (
        len(best.hops) == len(second.hops) == 1
        and best.hops[0].from_constant_side == second.hops[0].from_constant_side
        and _close_scores(best, second)
    )


def _close_scores(best: RelationOption, second: RelationOption) -> bool:
    """The words score the two within AMBIGUITY_MARGIN, and the data allows the second too."""
    return best.score - second.score < AMBIGUITY_MARGIN and second.score > -5.0
