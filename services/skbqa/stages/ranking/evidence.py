"""Evidence for grounded answers: which triplets an answer satisfies and through which nodes."""

from __future__ import annotations

from typing import Any

from skbqa.query.grounded import ScopeResult
from skbqa.query.structured import StructuredQuery
from skbqa.stores.index import IndexStores


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
