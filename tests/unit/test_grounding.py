from __future__ import annotations

import itertools
import random
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pytest

from skbqa.query.grounded import GroundingResult, ScopeResult
from skbqa.query.structured import StructuredQuery, Symbol, Triplet
from skbqa.stages.grounding.algorithm import ground_triplets
from skbqa.stages.grounding.scope import candidates_per_constant, expand_scope
from skbqa.stores.graph.csr import CsrGraph

EDGES = ["x", "y", "z"]
TYPES = {"paper": 0, "author": 1, "venue": 2}


def _graph(n: int, edges: Sequence[tuple[int, str, int]], names: Sequence[str] = EDGES) -> CsrGraph:
    src = np.array([e[0] for e in edges], np.int64)
    dst = np.array([e[2] for e in edges], np.int64)
    etype = np.array([list(names).index(e[1]) for e in edges], np.int16)
    return CsrGraph.build(n, list(names), src, dst, etype)


def _query(
    target: str, symbols: Mapping[str, tuple[str | None, bool]], triplets: Sequence[Triplet]
) -> StructuredQuery:
    """symbols: name → (type, is_constant)."""
    syms = {name: Symbol(name, typ, (name,) if const else ()) for name, (typ, const) in symbols.items()}
    return StructuredQuery(target=target, symbols=syms, triplets=list(triplets))


def _ground(
    query: StructuredQuery,
    candidates: Mapping[str, Sequence[int]],
    graph: CsrGraph,
    node_types: Sequence[int] | None = None,
    **kwargs: Any,
) -> GroundingResult:
    types = np.zeros(graph.num_nodes, np.int64) if node_types is None else np.asarray(node_types, np.int64)
    cands = {k: np.asarray(v, np.int64) for k, v in candidates.items()}
    return ground_triplets(query, cands, graph, node_types=types, type_codes=TYPES, **kwargs)


def _sets(result: GroundingResult) -> dict[str, list[int] | None]:
    return {k: (None if v is None else v.tolist()) for k, v in result.sets.items()}


# ------------------------------------------------------------------------------------------ single triplets


def test_one_triplet_outgoing_restricts_the_tail_and_keeps_supported_heads() -> None:
    graph = _graph(6, [(0, "x", 1), (0, "x", 2), (3, "x", 4), (0, "y", 5)])
    query = _query("b", {"a": (None, True), "b": (None, False)}, [Triplet("a", "x", "b")])
    result = _ground(query, {"a": [0, 3, 5]}, graph)
    assert result.candidates.tolist() == [1, 2, 4]
    assert _sets(result) == {"a": [0, 3], "b": [1, 2, 4]}  # 5 has no x edge out
    assert result.converged and result.rounds == 2


def test_one_triplet_with_the_constant_at_the_tail_walks_backwards() -> None:
    graph = _graph(6, [(0, "x", 2), (1, "x", 2), (2, "x", 3), (4, "y", 2)])
    query = _query("b", {"a": (None, True), "b": (None, False)}, [Triplet("b", "x", "a")])
    result = _ground(query, {"a": [2]}, graph)
    assert result.candidates.tolist() == [0, 1]


def test_undirected_triplet_accepts_either_orientation() -> None:
    graph = _graph(7, [(0, "x", 1), (6, "x", 0), (2, "x", 3), (0, "y", 4)])
    query = _query("b", {"a": (None, True), "b": (None, False)}, [Triplet("a", "x", "b", direction="undirected")])
    assert _ground(query, {"a": [0]}, graph).candidates.tolist() == [1, 6]
    out_only = _query("b", {"a": (None, True), "b": (None, False)}, [Triplet("a", "x", "b")])
    assert _ground(out_only, {"a": [0]}, graph).candidates.tolist() == [1]


def test_chain_through_a_variable_needs_a_second_round_to_prune_the_first_constant() -> None:
    # (a)-[x]->(v)<-[y]-(c): a1=0 -x-> v1=2, a2=1 -x-> v2=3, c1=4 -y-> v1=2.
    # Round 1: triplet 1 gives v={2,3}, a={0,1}; triplet 2 prunes v to {2}. Round 2 prunes a to {0}.
    graph = _graph(5, [(0, "x", 2), (1, "x", 3), (4, "y", 2)])
    query = _query(
        "a",
        {"a": (None, True), "v": (None, False), "c": (None, True)},
        [Triplet("a", "x", "v"), Triplet("c", "y", "v")],
    )
    one_round = _ground(query, {"a": [0, 1], "c": [4]}, graph, max_rounds=1)
    assert _sets(one_round) == {"a": [0, 1], "v": [2], "c": [4]}
    assert not one_round.converged
    result = _ground(query, {"a": [0, 1], "c": [4]}, graph)
    assert _sets(result) == {"a": [0], "v": [2], "c": [4]}
    assert result.candidates.tolist() == [0]
    assert result.rounds == 3 and result.converged  # two pruning rounds and one that confirms the fixpoint


def test_two_constants_intersect_on_the_target() -> None:
    graph = _graph(9, [(0, "x", 2), (0, "x", 3), (0, "x", 4), (1, "z", 3), (1, "z", 4), (1, "z", 5), (8, "z", 6)])
    query = _query(
        "y",
        {"a": (None, True), "b": (None, True), "y": (None, False)},
        [Triplet("a", "x", "y"), Triplet("b", "z", "y")],
    )
    result = _ground(query, {"a": [0], "b": [1, 8]}, graph)
    assert result.candidates.tolist() == [3, 4]
    assert _sets(result)["b"] == [1]  # 8 reaches no y that a reaches


@pytest.mark.parametrize(
    ("hops", "expected"),
    [((1, 1), [1, 4]), ((1, 2), [1, 2, 4, 5]), ((2, 2), [2, 5]), ((2, 3), [2, 3, 5]), ((0, 1), [0, 1, 4])],
)
def test_multi_hop_unions_the_levels_between_min_and_max(hops: tuple[int, int], expected: list[int]) -> None:
    # 0 -> 1 -> 2 -> 3, 0 -> 4 -> 5, and a y edge 1 -> 6 that x-paths must not use.
    graph = _graph(7, [(0, "x", 1), (1, "x", 2), (2, "x", 3), (0, "x", 4), (4, "x", 5), (1, "y", 6)])
    query = _query(
        "b", {"a": (None, True), "b": (None, False)}, [Triplet("a", "x", "b", min_hops=hops[0], max_hops=hops[1])]
    )
    result = _ground(query, {"a": [0]}, graph)
    assert result.candidates.tolist() == expected


def test_multi_hop_propagates_backwards_too() -> None:
    graph = _graph(7, [(0, "x", 1), (1, "x", 2), (2, "x", 3), (0, "x", 4), (4, "x", 5), (6, "x", 1)])
    query = _query("b", {"a": (None, True), "b": (None, False)}, [Triplet("b", "x", "a", min_hops=2, max_hops=2)])
    assert _ground(query, {"a": [2, 5]}, graph).candidates.tolist() == [0, 6]
    one_to_two = _query("b", {"a": (None, True), "b": (None, False)}, [Triplet("b", "x", "a", max_hops=2)])
    assert _ground(one_to_two, {"a": [2]}, graph).candidates.tolist() == [0, 1, 6]
    # The constant side is pruned by the multi-hop triplet as well: 3 has no x-path of length 2 from a variable.
    two = _query("a", {"a": (None, True), "b": (None, False)}, [Triplet("b", "x", "a", min_hops=2, max_hops=2)])
    assert _ground(two, {"a": [2, 6]}, graph).candidates.tolist() == [2]


# ------------------------------------------------------------------------------------------ strictness


def test_node_types_filter_in_strict_mode_and_not_when_type_filtering_is_off() -> None:
    # 0 (author) -x-> 1 (paper), 2 (venue), 3 (paper); 4 is a paper-typed constant candidate with the same edges.
    node_types = [1, 0, 2, 0, 0]
    graph = _graph(5, [(0, "x", 1), (0, "x", 2), (0, "x", 3), (4, "x", 1)])
    query = _query("p", {"a": ("author", True), "p": ("paper", False)}, [Triplet("a", "x", "p")])
    strict = _ground(query, {"a": [0, 4]}, graph, node_types)
    assert strict.candidates.tolist() == [1, 3]
    assert _sets(strict)["a"] == [0]  # 4 is not an author
    lenient = _ground(query, {"a": [0, 4]}, graph, node_types, strict_types=False)
    assert lenient.candidates.tolist() == [1, 2, 3]
    assert _sets(lenient)["a"] == [0, 4]
    # strict=False alone only drops edge filtering; node types are still respected.
    assert _ground(query, {"a": [0, 4]}, graph, node_types, strict=False).candidates.tolist() == [1, 3]


def test_edge_types_filter_in_strict_mode_and_not_in_lenient_mode() -> None:
    graph = _graph(4, [(0, "x", 1), (0, "y", 2), (3, "z", 0)])
    query = _query("b", {"a": (None, True), "b": (None, False)}, [Triplet("a", "x", "b")])
    assert _ground(query, {"a": [0]}, graph).candidates.tolist() == [1]
    assert _ground(query, {"a": [0]}, graph, strict=False).candidates.tolist() == [1, 2]
    assert _ground(query, {"a": [0]}, graph, strict_edges=False).candidates.tolist() == [1, 2]
    assert _ground(query, {"a": [0]}, graph, strict=False, strict_edges=True).candidates.tolist() == [1]


def test_unknown_edge_and_type_names_are_ignored_with_a_warning() -> None:
    graph = _graph(3, [(0, "x", 1), (0, "y", 2)])
    query = _query("b", {"a": (None, True), "b": ("gadget", False)}, [Triplet("a", "likes", "b")])
    result = _ground(query, {"a": [0]}, graph)
    assert result.candidates.tolist() == [1, 2]
    assert len(result.warnings) == 2


# ------------------------------------------------------------------------------------------ empty results


def test_a_constant_without_candidates_gives_an_empty_result_at_once() -> None:
    graph = _graph(3, [(0, "x", 1)])
    query = _query(
        "b",
        {"a": (None, True), "b": (None, False), "c": (None, True)},
        [Triplet("a", "x", "b"), Triplet("c", "x", "b")],
    )
    for candidates in ({"a": [0], "c": []}, {"a": [0]}):
        result = _ground(query, candidates, graph)
        assert result.empty and result.rounds == 0
        assert all(v is not None and v.size == 0 for v in result.sets.values())
        assert result.evidence == []


def test_a_wipe_out_during_propagation_empties_every_set() -> None:
    graph = _graph(4, [(0, "x", 1), (2, "y", 3)])
    query = _query(
        "b",
        {"a": (None, True), "b": (None, False), "c": (None, True), "d": (None, False)},
        [Triplet("a", "x", "b"), Triplet("c", "x", "d")],  # c has no x edge: the query has no match at all
    )
    result = _ground(query, {"a": [0], "c": [2]}, graph)
    assert result.empty and all(v is not None and v.size == 0 for v in result.sets.values())


def test_unconstrained_symbols_stay_lazy_and_variable_only_parts_are_materialised() -> None:
    graph = _graph(6, [(0, "x", 1), (2, "y", 3), (4, "y", 3)])
    query = _query(
        "b",
        {"a": (None, True), "b": (None, False), "u": (None, False), "w": (None, False), "free": ("venue", False)},
        [Triplet("a", "x", "b"), Triplet("u", "y", "w")],  # u, w: no constant; free: in no triplet
    )
    result = _ground(query, {"a": [0]}, graph)
    assert _sets(result) == {"a": [0], "b": [1], "u": [2, 4], "w": [3], "free": None}


# ------------------------------------------------------------------------------------------ evidence


def test_evidence_lists_supporting_neighbours_per_answer_and_triplet_capped() -> None:
    # Target y: 10 and 11. a-candidates 0..4 all -x-> 10; 0 -x-> 11. b-candidate 5 -z-> 10, 11; 6 -z-> 11.
    edges = [(i, "x", 10) for i in range(5)] + [(0, "x", 11), (5, "z", 10), (5, "z", 11), (6, "z", 11)]
    graph = _graph(12, edges)
    query = _query(
        "y",
        {"a": (None, True), "b": (None, True), "y": (None, False)},
        [Triplet("a", "x", "y"), Triplet("y", "z", "b", direction="undirected")],
    )
    result = _ground(query, {"a": [0, 1, 2, 3, 4], "b": [5, 6]}, graph, max_evidence=3)
    assert result.candidates.tolist() == [10, 11]
    assert [ev.triplet_index for ev in result.evidence] == [0, 1]
    assert [ev.other_symbol for ev in result.evidence] == ["a", "b"]
    ev10 = {i: v.tolist() for i, v in result.evidence_for(10).items()}
    ev11 = {i: v.tolist() for i, v in result.evidence_for(11).items()}
    assert ev10 == {0: [0, 1, 2], 1: [5]}  # five a-neighbours, capped at three (lowest positions)
    assert ev11 == {0: [0], 1: [5, 6]}
    assert all(v.size == 0 for v in result.evidence_for(7).values())  # not an answer: no evidence


def test_multi_hop_evidence_names_the_far_end() -> None:
    graph = _graph(5, [(0, "x", 1), (1, "x", 2), (3, "x", 2), (4, "x", 3)])
    query = _query("y", {"a": (None, True), "y": (None, False)}, [Triplet("a", "x", "y", min_hops=2, max_hops=2)])
    result = _ground(query, {"a": [0, 4]}, graph)
    assert result.candidates.tolist() == [2]
    assert result.evidence_for(2)[0].tolist() == [0, 4]


# ------------------------------------------------------------------------------------------ scope expansion


def _scope_fixture(right_degree: int) -> tuple[CsrGraph, StructuredQuery]:
    # Constant a: ranked candidates 0 (wrong: no x edge), 1 (one answer), 2 (the right one: `right_degree`
    # answers), then 3, 4, 5 (one answer each). Answers are nodes 100.. ; b's first candidate 50 links to all.
    n = 100 + right_degree + 10
    edges = [(1, "x", 100)] + [(2, "x", 100 + i) for i in range(right_degree)]
    edges += [(3 + i, "x", 100 + right_degree + i) for i in range(3)]
    edges += [(50, "z", v) for v in range(100, n)]
    query = _query(
        "y",
        {"a": (None, True), "b": (None, True), "y": (None, False)},
        [Triplet("a", "x", "y"), Triplet("b", "z", "y")],
    )
    return _graph(n, edges), query


def _scope(
    graph: CsrGraph, query: StructuredQuery, ranked: Mapping[str, Sequence[int]], **kwargs: Any
) -> ScopeResult:
    types = np.zeros(graph.num_nodes, np.int64)
    cands = {k: np.asarray(v, np.int64) for k, v in ranked.items()}
    return expand_scope(query, cands, graph, node_types=types, type_codes=TYPES, **kwargs)


def test_candidates_per_constant_rounds_half_up_and_caps() -> None:
    assert [candidates_per_constant(x, 100) for x in (1.0, 1.5, 2.337, 4.07, 8.71, 26.2)] == [1, 2, 2, 4, 9, 26]
    assert candidates_per_constant(134.6, 100) == 100


def test_scope_grows_until_k_answers_and_records_the_trace() -> None:
    graph, query = _scope_fixture(right_degree=6)
    result = _scope(graph, query, {"a": [0, 1, 2, 3, 4, 5], "b": [50, 51, 52, 53]}, k=5, l_max=100)
    assert result.grounded
    ls = [round(level, 3) for level, _ in result.iterations]
    sizes = [size for _, size in result.iterations]
    assert ls == [1.0, 1.5, 2.337, 4.073]
    # l=2.337 still takes 2 per constant; l=4.07 takes a's first 4: 1 → 100, 2 → 100..105, 3 → 106.
    assert sizes == [0, 1, 1, 7]
    assert result.per_constant == 4 and result.scope == pytest.approx(4.0729, abs=1e-3)
    assert result.candidates.tolist() == [100, 101, 102, 103, 104, 105, 106]
    assert result.result is not None and result.result.candidates is result.candidates


def test_scope_stops_at_the_first_l_with_enough_answers() -> None:
    graph, query = _scope_fixture(right_degree=6)
    result = _scope(graph, query, {"a": [2, 0, 1], "b": [50]}, k=5)
    assert result.iterations == [(1.0, 6)]


def test_scope_clamps_the_last_try_to_l_max() -> None:
    graph, query = _scope_fixture(right_degree=6)
    ranked = {"a": [0, 1, 7, 2, 3, 4, 5], "b": [50]}  # the right candidate is fourth
    capped = _scope(graph, query, ranked, k=5, l_max=3)
    assert [round(level, 3) for level, _ in capped.iterations] == [1.0, 1.5, 2.337, 3.0]
    assert [size for _, size in capped.iterations] == [0, 1, 1, 1]
    assert capped.per_constant == 3 and capped.candidates.tolist() == [100]
    single = _scope(graph, query, ranked, k=5, l_max=1)
    assert single.iterations == [(1.0, 0)] and single.grounded and single.candidates.size == 0


def test_scope_stops_when_every_ranked_list_is_exhausted() -> None:
    graph, query = _scope_fixture(right_degree=2)
    result = _scope(graph, query, {"a": [0, 1, 2], "b": [50]}, k=20)
    assert [round(level, 3) for level, _ in result.iterations] == [1.0, 1.5, 2.337, 4.073]
    assert result.candidates.tolist() == [100, 101]


def test_ungrounded_queries_fall_back() -> None:
    graph, query = _scope_fixture(right_degree=2)
    no_triplets = StructuredQuery(target="y", symbols=dict(query.symbols))
    no_constants = _query("y", {"a": (None, False), "y": (None, False)}, [Triplet("a", "x", "y")])
    detached = _query(
        "y",
        {"a": (None, True), "b": (None, False), "y": (None, False), "w": (None, False)},
        [Triplet("a", "x", "b"), Triplet("y", "x", "w")],
    )
    for q, ranked in ((no_triplets, {"a": [1]}), (no_constants, {}), (detached, {"a": [1]})):
        result = _scope(graph, q, ranked)
        assert not result.grounded and result.reason and result.candidates.size == 0 and result.result is None
    assert not _scope(graph, query, {"a": [1], "b": [50]}, l_max=0).grounded


def test_a_query_without_constants_grounds_once_from_its_filtered_sets() -> None:
    # "genes on chromosome 21 with some disease": the filtered set is used whole, once, and the triplet keeps the
    # answers that have such a neighbour
    graph, _ = _scope_fixture(right_degree=2)
    query = _query("y", {"a": (None, False), "y": (None, False)}, [Triplet("a", "x", "y")])
    result = _scope(graph, query, {"a": [1, 2]})  # filtered: a is 1 or 2; y is what they reach over x
    assert result.grounded and result.iterations == [(0.0, 2)]
    assert result.candidates.tolist() == [100, 101]
    assert result.levels.tolist() == [1] * result.candidates.size
    narrowed = _scope(graph, query, {"a": [1, 2], "y": [101, 105]})  # and the answer's own filter with it
    assert narrowed.candidates.tolist() == [101]


# ------------------------------------------------------------------------------------------ randomized reference


def _reference_arc_consistency(
    n: int,
    edges: list[tuple[int, str, int]],
    node_types: list[int],
    query: StructuredQuery,
    candidates: Mapping[str, list[int]],
    strict_types: bool,
    strict_edges: bool,
) -> tuple[dict[str, set[int]], dict[str, set[int]], list[dict[str, int]], list[set[tuple[int, int]]]]:
    """Plain-Python AC-3 over the triplet relations, the starting domains, and every full solution."""
    domains: dict[str, set[int]] = {}
    for name, sym in query.symbols.items():
        dom = set(candidates[name]) if name in candidates else (set() if sym.is_constant else set(range(n)))
        if strict_types and sym.type is not None:
            dom = {v for v in dom if node_types[v] == TYPES[sym.type]}
        domains[name] = dom
    start = {k: set(v) for k, v in domains.items()}

    relations = []
    for tp in query.triplets:
        edge = tp.edge if strict_edges else None
        step = {(s, d) for s, e, d in edges if edge is None or e == edge}
        if tp.direction == "undirected":
            step |= {(d, s) for s, d in step}
        level = {(v, v) for v in range(n)}
        rel: set[tuple[int, int]] = set()
        for hop in range(tp.max_hops + 1):
            if hop >= tp.min_hops:
                rel |= level
            level = {(a, c) for a, b in level for b2, c in step if b == b2}
        relations.append(rel)

    changed = True
    while changed:
        changed = False
        for tp, rel in zip(query.triplets, relations, strict=True):
            h, t = tp.head, tp.tail
            if h == t:
                new_h = {v for v in domains[h] if (v, v) in rel}
                new_t = new_h
            else:
                new_t = {y for y in domains[t] if any((x, y) in rel for x in domains[h])}
                new_h = {x for x in domains[h] if any((x, y) in rel for y in new_t)}
            if new_t != domains[t] or new_h != domains[h]:
                domains[t], domains[h] = new_t, new_h
                changed = True
    if any(not d for d in domains.values()):
        domains = {k: set() for k in domains}

    names = list(query.symbols)
    solutions = []
    for values in itertools.product(*(sorted(start[s]) for s in names)):
        assignment = dict(zip(names, values, strict=True))
        if all(
            (assignment[tp.head], assignment[tp.tail]) in rel
            for tp, rel in zip(query.triplets, relations, strict=True)
        ):
            solutions.append(assignment)
    return domains, start, solutions, relations


@pytest.mark.parametrize("seed", range(6))
def test_fixpoint_equals_reference_arc_consistency_and_contains_every_solution(seed: int) -> None:
    rng = random.Random(seed)
    hop_choices = [(1, 1), (1, 1), (1, 2), (2, 2), (0, 1), (0, 2), (2, 3)]
    for _case in range(40):
        n = rng.randint(3, 12)
        node_types = [rng.randrange(2) for _ in range(n)]
        node_types[:2] = [0, 1]  # both types occur
        edges = [(rng.randrange(n), rng.choice("xy"), rng.randrange(n)) for _ in range(rng.randint(0, 3 * n))]
        names = [f"s{i}" for i in range(rng.choice([1, 2, 3, 3]))]
        symbols: dict[str, tuple[str | None, bool]] = {
            s: (rng.choice([None, "paper", "author"]), rng.random() < 0.5) for s in names
        }
        candidates: dict[str, list[int]] = {}
        for s, (_, const) in symbols.items():
            if const or rng.random() < 0.2:
                candidates[s] = rng.sample(range(n), rng.randint(1 if rng.random() < 0.9 else 0, min(n, 4)))
        triplets = []
        for _ in range(rng.randint(1, 3)):
            lo, hi = rng.choice(hop_choices)
            head = rng.choice(names)
            others = [s for s in names if s != head]
            tail = rng.choice(others) if others and rng.random() < 0.85 else head  # some self-loop triplets
            edge = rng.choice(["x", "y", None])
            triplets.append(Triplet(head, edge, tail, rng.choice(["out", "undirected"]), lo, hi))
        query = _query(rng.choice(names), symbols, triplets)
        strict_types, strict_edges = rng.random() < 0.5, rng.random() < 0.5
        graph = _graph(n, edges, ["x", "y"])
        result = _ground(
            query, candidates, graph, node_types, strict_types=strict_types, strict_edges=strict_edges
        )
        expected, start, solutions, relations = _reference_arc_consistency(
            n, edges, node_types, query, candidates, strict_types, strict_edges
        )
        assert result.converged
        got = {
            s: set(start[s]) if v is None else set(v.tolist()) for s, v in result.sets.items()
        }  # None = never restricted: the starting domain
        assert got == expected, (seed, _case, query, candidates, edges)
        assert set(result.candidates.tolist()) == expected[query.target]
        for s in names:
            assert {sol[s] for sol in solutions} <= got[s]
        for (
            ev
        ) in result.evidence:  # every answer has 1..3 evidence rows, each a real connection into the final set
            rel = relations[ev.triplet_index]
            assert set(ev.target.tolist()) == got[query.target]
            assert all(c <= 3 for c in np.unique(ev.target, return_counts=True)[1])
            for t, o in zip(ev.target.tolist(), ev.other.tolist(), strict=True):
                assert o in got[ev.other_symbol]
                assert ((t, o) if ev.triplet.head == query.target else (o, t)) in rel


# ------------------------------------------------------------------------------------------ scale sanity


def test_a_three_triplet_query_grounds_on_a_200k_node_graph() -> None:
    rng = np.random.default_rng(0)
    n, m = 200_000, 1_000_000
    graph = CsrGraph.build(
        n, ["e0", "e1", "e2"], rng.integers(0, n, m), rng.integers(0, n, m), rng.integers(0, 3, m).astype(np.int16)
    )
    node_types = rng.integers(0, 3, n)
    query = _query(
        "y",
        {"a": ("paper", True), "v": ("author", False), "y": ("venue", False), "c": ("paper", True)},
        [Triplet("a", "e0", "v"), Triplet("v", "e1", "y"), Triplet("c", "e2", "y", direction="undirected")],
    )
    candidates = {
        "a": np.flatnonzero(node_types == 0)[:1000],
        "c": np.flatnonzero(node_types == 0)[-1000:],
    }
    result = ground_triplets(query, candidates, graph, node_types=node_types, type_codes=TYPES)
    assert result.converged and result.candidates.size > 0
    assert (node_types[result.candidates] == TYPES["venue"]).all()
    assert result.sets["v"] is not None and result.sets["v"].size < n // 3
