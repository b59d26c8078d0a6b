"""Evidence for `af` answers: which triplets an answer satisfies, through which nodes, and the parse behind it."""

from __future__ import annotations

from typing import Any

from skbqa.grounding.scope import ScopeResult
from skbqa.parser.query import StructuredQuery
from skbqa.stores.index import IndexStores


def parse_summary(parsed: StructuredQuery) -> dict[str, Any]:
    """The structured query as plain data (for `ask --explain`, eval notes and the API)."""
    return {
        "target": parsed.target,
        "target_type": parsed.target_type,
        "predicted_type": parsed.predicted_type,
        "symbols": {
            name: {"type": s.type, **({"names": list(s.names)} if s.names else {})}
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


def _describe(parsed: StructuredQuery, symbol: str) -> str:
    s = parsed.symbols.get(symbol)
    if s is None:
        return symbol
    if s.names:
        return " | ".join(repr(n) for n in s.names)
    return "answer" if symbol == parsed.target else f"a {s.type or 'node'}"


def grounded_evidence(
    stores: IndexStores, parsed: StructuredQuery, scope: ScopeResult, position: int
) -> dict[str, Any]:
    nodes = stores.nodes
    triplets: list[dict[str, Any]] = []
    neighbours: list[int] = []
    if scope.result is not None:
        for index, others in scope.result.evidence_for(position).items():
            t = parsed.triplets[index]
            other = t.tail if t.head == parsed.target else t.head
            via = [int(p) for p in others]
            neighbours.extend(via)
            triplets.append(
                {
                    "pattern": f"({_describe(parsed, t.head)})-[{t.edge or 'any'}]->({_describe(parsed, t.tail)})",
                    "symbol": other,
                    "through": [
                        {"id": int(nodes.ids[p]), "name": nodes.names[p], "type": nodes.type_name(p)} for p in via
                    ],
                }
            )
    constraints = [f"{c.attribute} {c.op} {c.value}" for c in parsed.constraints if c.symbol == parsed.target]
    return {
        "strand": "grounded (steps 4–6)",
        "triplets": triplets,
        "constraints": constraints,
        "grounded_neighbours": neighbours,
    }
