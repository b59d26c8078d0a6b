"""Triplet grounding (AF-Retriever step 5): Algorithm 2 GROUND_TRIPLETS (the scope loop of Algorithm 1 is in scope.py).

`ground_triplets` gives every symbol a candidate set and narrows the sets against each other until nothing changes:
for a triplet (h, e, t) the tail keeps only nodes reached from the head's set over e, and the head keeps only nodes
that reach the tail's set. The fixpoint is *arc consistency* over the triplets: a superset of the nodes that occur
in some complete match of the pattern (every true answer survives; a few non-answers may too, e.g. in cycles).

Reading of the paper's Algorithm 2 (Appendix A.3). As printed, lines 4–7 intersect S(h) with the neighbours of
S(h) itself, and lines 9–12 likewise for t; with NEIGHBORS(·, −) being the out-neighbours and (·, +) the
in-neighbours (section 3.1), the evident intent, stated in section 3.2 ("propagating constraints bidirectionally"),
is S(t) ← S(t) ∩ out(S(h)) followed by S(h) ← S(h) ∩ in(S(t)). That is what is implemented, in that order, per
triplet, round after round until no set changes (the paper recurses; here a loop, bounded by `max_rounds`).

Set representation
    A symbol's set is a `Domain`: either an explicit sorted unique int64 array of node positions, or *lazy* —
    "every node" or "every node of type T" — held as a predicate over `node_types` and never materialised while
    it is lazy. Variables without attribute-filtered candidates start lazy. A triplet with one explicit side
    turns its lazy side explicit by walking from the explicit side (this is the only place a big set can appear,
    and only when the graph really has that many neighbours). A triplet whose two sides are both lazy (a part of
    the pattern not connected to any constant) is deferred; if the fixpoint is reached with such triplets left,
    the smaller of the lazy sets (by type count) is materialised and the loop continues, so the result is exact
    arc consistency in every case. Symbols in no triplet and with no candidates stay lazy and are reported as
    None in `GroundingResult.sets` (the target is always materialised).

Revising one side (X ← X ∩ walk(Y)) has two equivalent strategies; the cheaper one is chosen per call:
    forward  — walk from Y (`graph.neighbours`, hop by hop) and intersect the reached nodes with X; needs Y
               explicit; cost ~ edges incident to Y.
    support  — walk from X in the reverse direction tracking each origin (`graph.neighbour_pairs`), keep the
               origins that reach a member of Y; needs X explicit; cost ~ edges incident to X. Y may be lazy
               (membership is a type test). Self-loop triplets (h == t) always use it (the walk must return to
               its origin).
    When both are explicit the summed degrees (`graph.degree`) of the two sides decide — estimated from an even
    sample of a large side: the choice only changes the cost, never the result.

Intersections and membership tests use sorted arrays (`np.searchsorted` against the sorted set: O(n log m), no
allocation proportional to the graph) while the arrays involved are small, and a boolean bitmap over
`num_nodes` once they exceed num_nodes/16 in total (then the O(num_nodes) bitmap is cheaper than the searches).
There is no Python loop over nodes: loops run over triplets, rounds and hops only.

Multi-hop triplets (min_hops..max_hops) use walk semantics (nodes and edges may repeat, unlike Cypher's
relationship isomorphism): exact hop levels are computed up to min_hops, then the union of levels min..max is
grown breadth-first from the newly reached nodes only, which is exact for a union of consecutive levels. Every
hop uses the triplet's edge type (any edge type when edge filtering is off); intermediate nodes are untyped.
Undirected triplets walk both directions at every hop.

Strictness (paper section 3.2 step 4 and Appendix A.6.2): `strict_edges` filters triplets by their edge type;
`strict_types` filters every symbol's set (constants' candidates included) by the symbol's node type. `strict`
sets the default of `strict_edges`; `strict_types` defaults to True whatever `strict` is, so `strict=False` is
the paper's best hybrid ("filter constants by node types", edges ignored) and `strict=False, strict_types=False`
the fully lenient mode. Unknown type or edge names (not in `type_codes` / `graph.edge_names`) are ignored with a
warning rather than emptying the result.

Any set that becomes empty means no match exists, so grounding stops at once and every set is reported empty (as
AC-3 does on a domain wipe-out); in particular a constant with no candidates gives an empty result without
touching the graph.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np

from skbqa.query.grounded import GroundingResult, TripletEvidence
from skbqa.query.structured import StructuredQuery, Symbol
from skbqa.stages.grounding.sets import (
    EMPTY,
    REVERSE,
    Arc,
    Domain,
    cap_per_group,
    image,
    sorted_unique,
    walk_cost,
    walk_pairs,
)
from skbqa.stores.graph.base import Direction, GraphStore

# ---------------------------------------------------------------------------------------------------- results


def _resolve_flags(strict: bool, strict_types: bool | None, strict_edges: bool | None) -> tuple[bool, bool]:
    return (True if strict_types is None else strict_types), (strict if strict_edges is None else strict_edges)


def ground_triplets(
    query: StructuredQuery,
    candidates: Mapping[str, np.ndarray],
    graph: GraphStore,
    *,
    node_types: np.ndarray,
    type_codes: Mapping[str, int],
    strict: bool = True,
    strict_types: bool | None = None,
    strict_edges: bool | None = None,
    max_rounds: int = 50,
    max_evidence: int = 3,
) -> GroundingResult:
    """Algorithm 2: narrow every symbol's candidate set over the triplets to a fixpoint (see the module doc).

    `candidates` gives the starting set of each constant (step 4's positions; a constant without an entry has
    none, so the result is empty) and, optionally, of variables already narrowed by attribute filters; any
    other variable starts as every node (of its type under `strict_types`), held lazily.
    """
    use_types, use_edges = _resolve_flags(strict, strict_types, strict_edges)
    num_nodes = graph.num_nodes
    node_types = np.asarray(node_types)
    if node_types.shape != (num_nodes,):
        raise ValueError(f"node_types has shape {node_types.shape}, the graph has {num_nodes} nodes")
    if max_rounds < 1:
        raise ValueError("max_rounds must be at least 1")
    warnings: list[str] = []
    symbols = _symbols(query)
    known_edges = set(graph.edge_names)

    # Starting sets.
    domains: dict[str, Domain] = {}
    wiped = False
    for name, symbol in symbols.items():
        code: int | None = None
        if use_types and symbol.type is not None:
            if symbol.type in type_codes:
                code = int(type_codes[symbol.type])
            else:
                warnings.append(f"unknown node type {symbol.type!r} of {name!r}: not filtered by type")
        given = candidates.get(name)
        if given is None and symbol.is_constant:
            warnings.append(f"constant {name!r} has no candidates")
            given = EMPTY
        if given is None:
            domains[name] = Domain(None, code)
            continue
        nodes = sorted_unique(given)
        if nodes.size and (nodes[0] < 0 or nodes[-1] >= num_nodes):
            raise ValueError(f"candidates of {name!r} hold positions outside 0..{num_nodes - 1}")
        if code is not None:
            nodes = nodes[node_types[nodes] == code]
        domains[name] = Domain(nodes, code)
        wiped = wiped or nodes.size == 0

    arcs: list[Arc] = []
    for i, tp in enumerate(query.triplets):
        edge = tp.edge if use_edges else None
        if edge is not None and edge not in known_edges:
            warnings.append(f"unknown edge type {edge!r} in triplet {i}: any edge type accepted")
            edge = None
        if tp.min_hops < 0 or tp.max_hops < tp.min_hops:
            raise ValueError(f"triplet {i} has invalid hops {tp.min_hops}..{tp.max_hops}")
        step: Direction = "out" if tp.direction == "out" else "both"
        arcs.append(Arc(i, tp, tp.head, tp.tail, edge, step, tp.min_hops, tp.max_hops))

    def wiped_result(rounds: int) -> GroundingResult:
        return GroundingResult(query.target, EMPTY, {s: EMPTY for s in domains}, rounds, True, [], warnings)

    if wiped:
        return wiped_result(0)

    version = dict.fromkeys(domains, 0)
    last_seen: dict[int, tuple[int, int]] = {}

    def update(name: str, nodes: np.ndarray) -> bool:
        dom = domains[name]
        if dom.nodes is not None and nodes.size == dom.nodes.size:
            return False
        domains[name] = Domain(nodes, dom.type_code)
        version[name] += 1
        return True

    def revise(arc: Arc, to_tail: bool) -> np.ndarray:
        """The new set of the tail (to_tail) or of the head: itself ∩ the walk from the other side."""
        x_name, y_name = (arc.tail, arc.head) if to_tail else (arc.head, arc.tail)
        x, y = domains[x_name], domains[y_name]
        forward_dir = arc.step if to_tail else REVERSE[arc.step]  # walking from y to x
        if x_name == y_name:
            use_forward = False
        elif x.nodes is None:
            use_forward = True
        elif y.nodes is None:
            use_forward = False
        else:
            forward_cost = walk_cost(graph, y.nodes, arc.edge, forward_dir)
            support_cost = walk_cost(graph, x.nodes, arc.edge, REVERSE[forward_dir])
            use_forward = forward_cost <= support_cost
        if use_forward:
            assert y.nodes is not None
            reached = image(graph, y.nodes, arc.edge, forward_dir, arc.min_hops, arc.max_hops)
            return x.restrict(reached, node_types, num_nodes)
        assert x.nodes is not None
        accept = _self_accept if x_name == y_name else _domain_accept(y, node_types, num_nodes)
        origins, _ = walk_pairs(
            graph, x.nodes, arc.edge, REVERSE[forward_dir], arc.min_hops, arc.max_hops, accept, cap=1
        )
        return np.unique(origins)  # a subset of x.nodes (an origin may have several accepted ends)

    rounds = 0
    converged = False
    while rounds < max_rounds:
        rounds += 1
        changed = False
        deferred: list[Arc] = []
        for arc in arcs:
            if last_seen.get(arc.index) == (version[arc.head], version[arc.tail]):
                continue  # neither side changed since this arc was last made consistent
            if domains[arc.head].lazy and domains[arc.tail].lazy:
                deferred.append(arc)
                continue
            for to_tail in (True, False):
                new = revise(arc, to_tail)
                if new.size == 0:
                    return wiped_result(rounds)
                changed |= update(arc.tail if to_tail else arc.head, new)
            last_seen[arc.index] = (version[arc.head], version[arc.tail])
        if changed:
            continue
        if deferred:  # a part of the pattern with no explicit set: materialise its smallest lazy set
            lazy = {s for arc in deferred for s in (arc.head, arc.tail)}
            pick = min(sorted(lazy), key=lambda s: domains[s].size(node_types, num_nodes))
            nodes = domains[pick].materialise(node_types, num_nodes)
            if nodes.size == 0:
                return wiped_result(rounds)
            update(pick, nodes)
            continue
        converged = True
        break

    sets: dict[str, np.ndarray | None] = {name: dom.nodes for name, dom in domains.items()}
    target_dom = domains.get(query.target)
    target_nodes = target_dom.materialise(node_types, num_nodes) if target_dom is not None else EMPTY
    sets[query.target] = target_nodes
    evidence = _evidence(graph, arcs, query.target, domains, target_nodes, node_types, max_evidence)
    return GroundingResult(query.target, target_nodes, sets, rounds, converged, evidence, warnings)


def _self_accept(origins: np.ndarray, ends: np.ndarray) -> np.ndarray:
    return origins == ends


def _domain_accept(
    dom: Domain, node_types: np.ndarray, num_nodes: int
) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    def accept(origins: np.ndarray, ends: np.ndarray) -> np.ndarray:
        return dom.contains(ends, node_types, num_nodes)

    return accept


def _symbols(query: StructuredQuery) -> dict[str, Symbol]:
    """The query's symbols plus any named only by a triplet or as the target (untyped variables)."""
    symbols = dict(query.symbols)
    for name in [query.target, *(s for tp in query.triplets for s in (tp.head, tp.tail))]:
        symbols.setdefault(name, Symbol(name))
    return symbols


def _evidence(
    graph: GraphStore,
    arcs: Sequence[Arc],
    target: str,
    domains: Mapping[str, Domain],
    target_nodes: np.ndarray,
    node_types: np.ndarray,
    cap: int,
) -> list[TripletEvidence]:
    out: list[TripletEvidence] = []
    num_nodes = graph.num_nodes
    for arc in arcs:
        if target not in (arc.head, arc.tail):
            continue
        other = arc.tail if arc.head == target else arc.head
        direction = arc.step if arc.head == target else REVERSE[arc.step]
        accept = _self_accept if other == target else _domain_accept(domains[other], node_types, num_nodes)
        if cap < 1 or target_nodes.size == 0:
            t, o = EMPTY, EMPTY
        else:
            t, o = walk_pairs(graph, target_nodes, arc.edge, direction, arc.min_hops, arc.max_hops, accept, cap)
            t, o = cap_per_group(t, o, cap)
        out.append(TripletEvidence(arc.index, arc.triplet, other, t, o))
    return out
