"""The anonymous knowledge graph (AKG, GRAPE §3.2) of a question, built from the parser's structured query.

Constants (symbols with search names) stay bound to their surface forms; every other symbol becomes an anonymous
variable X1, X2, … that keeps only its node type. The AKG's triplets are the parser's triplets. GRAPE resolves the
target variable: for each constant we take the shortest chain of AKG triplets that leads from it to the target
through variables only (the constraints that path search must satisfy, T_X in the paper), and the beam search
looks for KG paths from the constant's candidate nodes that instantiate that chain.

Texts are *anonymous*: a step is rendered with node types, never entity names ("author writes paper"), so the
same text describes every instantiation of a relation pattern, embeddings can be cached per pattern, and the
trained models see schema-level vocabulary that transfers between SKBs.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, replace
from typing import Literal

from skbqa.query.structured import StructuredQuery

Walk = Literal["out", "in", "any"]
UNKNOWN_RELATION = "related to"


def words(label: str | None) -> str:
    """`gene_participates_in_biological_process` → `gene participates in biological process`."""
    return (label or "").replace("_", " ").strip()


def step_text(from_type: str | None, relation: str | None, to_type: str | None, walk: Walk) -> str:
    """One hop in the edge's own direction, so a hop walked backwards reads like the stored triplet."""
    head, tail = (to_type, from_type) if walk == "in" else (from_type, to_type)
    return f"{words(head) or 'entity'} {words(relation) or UNKNOWN_RELATION} {words(tail) or 'entity'}"


@dataclass(frozen=True)
class AkgNode:
    name: str  # the parser's symbol name
    label: str  # what texts and notes show: the constant's first name, or "X1", "X2", … for a variable
    type: str | None
    names: tuple[str, ...]  # a constant's search strings; empty for an anonymous variable

    @property
    def is_constant(self) -> bool:
        return bool(self.names)


@dataclass(frozen=True)
class AkgTriplet:
    head: str
    relation: str | None  # None: the parser did not name an edge type
    tail: str
    direction: Literal["out", "undirected"] = "out"
    min_hops: int = 1
    max_hops: int = 1


@dataclass(frozen=True)
class ChainStep:
    """One AKG triplet as walked from the constant towards the target."""

    relation: str | None
    walk: Walk
    from_type: str | None
    to_type: str | None
    min_hops: int
    max_hops: int

    @property
    def text(self) -> str:
        return step_text(self.from_type, self.relation, self.to_type, self.walk)


@dataclass(frozen=True)
class Chain:
    constant: AkgNode
    steps: tuple[ChainStep, ...]
    target_type: str | None

    @property
    def min_hops(self) -> int:
        return sum(s.min_hops for s in self.steps)

    @property
    def max_hops(self) -> int:
        return sum(s.max_hops for s in self.steps)

    @property
    def text(self) -> str:
        return "; ".join(s.text for s in self.steps)

    @property
    def relations(self) -> frozenset[str]:
        return frozenset(s.relation for s in self.steps if s.relation)

    @property
    def relation_walks(self) -> frozenset[tuple[str, str]]:
        """(edge, walk) pairs; an undirected AKG triplet admits both walks."""
        pairs: set[tuple[str, str]] = set()
        for s in self.steps:
            if s.relation:
                pairs.update((s.relation, w) for w in (("out", "in") if s.walk == "any" else (s.walk,)))
        return frozenset(pairs)

    @property
    def types(self) -> frozenset[str]:
        """Types of the chain's variables (intermediate ones and the target)."""
        return frozenset(t for s in self.steps for t in (s.to_type,) if t)

    def without_relations(self) -> Chain:
        """The chain as if the parser had named no edge types (training's synonymic-rewrite augmentation)."""
        return replace(self, steps=tuple(replace(s, relation=None) for s in self.steps))

    def untyped(self) -> Chain:
        """The chain with an untyped target (training augmentation: the parser may not know the answer type)."""
        steps = list(self.steps)
        steps[-1] = replace(steps[-1], to_type=None)
        return replace(self, steps=tuple(steps), target_type=None)


@dataclass
class QueryGraph:
    nodes: dict[str, AkgNode]
    triplets: list[AkgTriplet]
    target: str

    @classmethod
    def from_structured(cls, parsed: StructuredQuery) -> QueryGraph:
        nodes: dict[str, AkgNode] = {}
        anonymous = 0
        for name, symbol in parsed.symbols.items():
            if symbol.is_constant:
                nodes[name] = AkgNode(name, symbol.names[0], symbol.type, tuple(symbol.names))
            else:
                anonymous += 1
                nodes[name] = AkgNode(name, f"X{anonymous}", symbol.type, ())
        if parsed.target not in nodes:  # a parse without a target symbol: an untyped anonymous answer
            anonymous += 1
            nodes[parsed.target] = AkgNode(parsed.target, f"X{anonymous}", None, ())
        triplets = [
            AkgTriplet(t.head, t.edge, t.tail, t.direction, t.min_hops, t.max_hops)
            for t in parsed.triplets
            if t.head in nodes and t.tail in nodes and t.head != t.tail
        ]
        return cls(nodes, triplets, parsed.target)

    @property
    def constants(self) -> list[AkgNode]:
        return [n for n in self.nodes.values() if n.is_constant]

    @property
    def target_type(self) -> str | None:
        return self.nodes[self.target].type

    def incident(self, symbol: str) -> list[AkgTriplet]:
        """T_X: the triplets that involve `symbol`."""
        return [t for t in self.triplets if symbol in (t.head, t.tail)]

    def chain(self, constant: str) -> Chain | None:
        """Shortest chain of triplets from `constant` to the target through variables only; None if none."""
        if self.nodes[self.target].is_constant:
            return None
        previous: dict[str, tuple[str, AkgTriplet]] = {}
        queue = deque([constant])
        seen = {constant}
        while queue:
            at = queue.popleft()
            if at == self.target:
                break
            if at != constant and self.nodes[at].is_constant:
                continue  # chains pass through anonymous variables only
            for t in self.triplets:
                if at not in (t.head, t.tail):
                    continue
                other = t.tail if t.head == at else t.head
                if other not in seen:
                    seen.add(other)
                    previous[other] = (at, t)
                    queue.append(other)
        if self.target not in previous:
            return None
        steps: list[ChainStep] = []
        at = self.target
        while at != constant:
            before, t = previous[at]
            walk: Walk = "any" if t.direction == "undirected" else ("out" if t.head == before else "in")
            steps.append(
                ChainStep(t.relation, walk, self.nodes[before].type, self.nodes[at].type, t.min_hops, t.max_hops)
            )
            at = before
        return Chain(self.nodes[constant], tuple(reversed(steps)), self.target_type)

    def chains(self) -> list[Chain]:
        return [c for c in (self.chain(n.name) for n in self.constants) if c is not None]

    def describe(self) -> list[str]:
        """The AKG as lines `Fidiria College -affiliated_with-> X1 (author)` for notes and evidence."""
        out = []
        for t in self.triplets:
            head, tail = self.nodes[t.head], self.nodes[t.tail]
            hops = "" if (t.min_hops, t.max_hops) == (1, 1) else f"*{t.min_hops}..{t.max_hops}"
            arrow = "->" if t.direction == "out" else "-"
            out.append(
                f"{head.label} ({head.type or '?'}) -{t.relation or '?'}{hops}{arrow} {tail.label} ({tail.type or '?'})"
            )
        return out
