"""The structured query every parser produces (AF-Retriever steps 1–3) and every later step consumes.

Symbols are the query's variables; a *constant* is a symbol with searchable names (the Cypher
`(d:disease {name: "asthma"})`), which step 4 resolves to candidate nodes. Triplets connect symbols by edge type;
attribute constraints filter a symbol's nodes; text constraints are leftover free text for ranking. Parsers
never raise on bad input: what cannot be used is dropped and recorded in `warnings`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Scalar = str | int | float | bool
Operator = Literal["=", "<>", "<", "<=", ">", ">=", "CONTAINS", "STARTS WITH", "ENDS WITH", "IN", "=~"]
Direction = Literal["out", "undirected"]


@dataclass(frozen=True)
class Symbol:
    name: str  # the variable as written in the query ("p"); anonymous nodes get generated names ("_1")
    type: str | None = None  # node type (label); None when the query gives none
    names: tuple[str, ...] = ()  # search strings for a constant (several from `IN [...]`); empty for a variable
    # words that say which of the nodes bearing the name is meant ("bank (*as in: a financial institution*)")
    sense: tuple[str, ...] = ()

    @property
    def is_constant(self) -> bool:
        return bool(self.names)


@dataclass(frozen=True)
class Triplet:
    """`head -[edge]-> tail` (direction "out"), or either way round ("undirected"); hops bound multi-hop paths."""

    head: str
    edge: str | None  # edge type; None = any edge type
    tail: str
    direction: Direction = "out"
    min_hops: int = 1
    max_hops: int = 1


@dataclass(frozen=True)
class AttributeConstraint:
    symbol: str
    attribute: str
    op: Operator
    value: Scalar | tuple[Scalar, ...]  # a tuple only for IN
    case_insensitive: bool = False  # `=~ '(?i)...'` patterns and CONTAINS-style text filters


@dataclass
class StructuredQuery:
    target: str  # the symbol whose nodes answer the question
    symbols: dict[str, Symbol] = field(default_factory=dict)
    triplets: list[Triplet] = field(default_factory=list)
    constraints: list[AttributeConstraint] = field(default_factory=list)
    text_constraints: list[str] = field(default_factory=list)
    # An OR in WHERE becomes alternative queries whose answers are united; each alternative is complete.
    alternatives: list[StructuredQuery] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # The target type a separate step predicted (the LLM parser's step 1). The vector strand filters by it; the
    # target symbol keeps the type the Cypher returned, which may differ. None when no such step ran.
    predicted_type: str | None = None
    # How much of the question this parse explains, in [0, 1] (its words, constants and edges, checked against the
    # graph); None when the parser does not assess itself. Steps 6–7 combine the grounded and vector strands by it.
    confidence: float | None = None
    # Whether the question's own words name the target type (its name, or a word its description gives it), not
    # the relations the parse chose or a guess: a type that stands when the graph has no answer to the parse.
    type_named: bool = False

    @property
    def target_type(self) -> str | None:
        symbol = self.symbols.get(self.target)
        return symbol.type if symbol else None

    @property
    def constants(self) -> list[Symbol]:
        return [s for s in self.symbols.values() if s.is_constant]


def parse_summary(parsed: StructuredQuery) -> dict[str, Any]:
    """The structured query as plain data (for `ask --explain`, eval notes and the API)."""
    return {
        "target": parsed.target,
        "target_type": parsed.target_type,
        "predicted_type": parsed.predicted_type,
        "confidence": parsed.confidence,
        "type_named": parsed.type_named,
        "symbols": {
            name: {
                "type": s.type,
                **({"names": list(s.names)} if s.names else {}),
                **({"sense": list(s.sense)} if s.sense else {}),
            }
            for name, s in parsed.symbols.items()
        },
        "triplets": [
            {
                "head": t.head,
                "edge": t.edge,
                "tail": t.tail,
                "direction": t.direction,
                "hops": [t.min_hops, t.max_hops],
            }
            for t in parsed.triplets
        ],
        "constraints": [
            {"symbol": c.symbol, "attribute": c.attribute, "op": c.op, "value": c.value}
            for c in parsed.constraints
        ],
        "text": list(parsed.text_constraints),
        "warnings": list(parsed.warnings),
        "alternatives": len(parsed.alternatives),
    }


def linked_to(target: str, triplets: list[Triplet]) -> set[str]:
    """The symbols the triplets link to `target`, directly or through others (`target` included)."""
    adjacency: dict[str, set[str]] = {}
    for triplet in triplets:
        adjacency.setdefault(triplet.head, set()).add(triplet.tail)
        adjacency.setdefault(triplet.tail, set()).add(triplet.head)
    seen = {target}
    stack = [target]
    while stack:
        for nxt in adjacency.get(stack.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return seen
