"""A name of a node that contains others (a continent, a broad class) is often not where the answers link: "countries
in *Africa*" when countries link to their subregion and subregions are part of a continent. When the parse's
answers are not found at the names' best-matched nodes, the question is read again with the name's node reached
through one or two edges of its type's one hierarchy (the one edge type among its own nodes): the answers link to
a node that is part of (or a kind of) the named one. Edges are read source → the wider node, as "part of", "is a",
"located in" are written; nothing here knows any one schema.
"""

from __future__ import annotations

from dataclasses import replace

from skbqa.query.structured import StructuredQuery, Symbol, Triplet
from skbqa.skb.schema import Schema
from skbqa.stages.grounding.relax import RELAXED_SHARE

MAX_HIERARCHY_HOPS = 2


def hierarchies(schema: Schema) -> dict[str, str]:
    """Each node type with exactly one edge type among its own nodes → that edge type."""
    own: dict[str, set[str]] = {}
    for edge in schema.edge_types:
        if edge.source == edge.target:
            own.setdefault(edge.source, set()).add(edge.name)
    return {node_type: next(iter(names)) for node_type, names in own.items() if len(names) == 1}


def widenings(parsed: StructuredQuery, hierarchy: dict[str, str]) -> list[tuple[str, StructuredQuery]]:
    """(constant, the parse with the constant's node reached through its type's hierarchy), for each constant
    related by a named edge to a node of another type."""
    found: list[tuple[str, StructuredQuery]] = []
    for name, symbol in parsed.symbols.items():
        edge = hierarchy.get(symbol.type or "")
        if not symbol.is_constant or name == parsed.target or edge is None:
            continue
        crossing = [
            k
            for k, t in enumerate(parsed.triplets)
            if name in (t.head, t.tail)
            and t.edge is not None
            and _other_type(parsed, t, name) not in (None, symbol.type)
        ]
        if not crossing:
            continue
        inner = f"w_{name}"
        while inner in parsed.symbols:
            inner += "_"
        triplets = [_renamed(t, name, inner) if k in crossing else t for k, t in enumerate(parsed.triplets)]
        triplets.append(Triplet(inner, edge, name, min_hops=1, max_hops=MAX_HIERARCHY_HOPS))
        confidence = None if parsed.confidence is None else round(parsed.confidence * RELAXED_SHARE, 4)
        warning = (
            f"the answers link to what is {edge!r} of {symbol.names[0][:60]!r} within {MAX_HIERARCHY_HOPS} steps"
        )
        reading = replace(
            parsed,
            symbols={**parsed.symbols, inner: Symbol(inner, symbol.type)},
            triplets=triplets,
            warnings=[*parsed.warnings, warning],
            confidence=confidence,
        )
        found.append((name, reading))
    return found


def _other_type(parsed: StructuredQuery, triplet: Triplet, name: str) -> str | None:
    other = parsed.symbols.get(triplet.tail if triplet.head == name else triplet.head)
    return other.type if other is not None else None


def _renamed(triplet: Triplet, name: str, inner: str) -> Triplet:
    return replace(
        triplet,
        head=inner if triplet.head == name else triplet.head,
        tail=inner if triplet.tail == name else triplet.tail,
    )
