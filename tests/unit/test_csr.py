from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from skbqa.stores.graph.csr import CsrGraph


def _random_graph(seed: int = 0, n: int = 200, m: int = 1500, types: int = 3):
    rng = np.random.default_rng(seed)
    src = rng.integers(0, n, m)
    dst = rng.integers(0, n, m)
    etype = rng.integers(0, types, m).astype(np.int16)
    names = [f"e{i}" for i in range(types)]
    return n, names, src, dst, etype


def _reference(nodes, src, dst, etype, code, direction):
    out = set()
    for s, d, t in zip(src, dst, etype, strict=True):
        if code is not None and t != code:
            continue
        if direction in ("out", "both") and s in nodes:
            out.add(int(d))
        if direction in ("in", "both") and d in nodes:
            out.add(int(s))
    return sorted(out)


@pytest.mark.parametrize("direction", ["out", "in", "both"])
@pytest.mark.parametrize("edge", [None, "e0", "e2"])
def test_neighbours_match_a_plain_python_reference(direction: str, edge: str | None) -> None:
    n, names, src, dst, etype = _random_graph()
    graph = CsrGraph.build(n, names, src, dst, etype)
    rng = np.random.default_rng(1)
    for _ in range(20):
        batch = rng.choice(n, size=int(rng.integers(1, 30)), replace=False)
        code = None if edge is None else names.index(edge)
        expected = _reference(set(batch.tolist()), src, dst, etype, code, direction)
        assert graph.neighbours(batch, edge, direction).tolist() == expected


def test_pairs_keep_one_row_per_edge_and_degree_counts_them() -> None:
    graph = CsrGraph.build(4, ["a"], np.array([0, 0, 1, 0]), np.array([1, 2, 2, 1]), np.zeros(4, np.int16))
    sources, targets = graph.neighbour_pairs(np.array([0, 1]), "a", "out")
    assert sorted(zip(sources.tolist(), targets.tolist(), strict=True)) == [(0, 1), (0, 1), (0, 2), (1, 2)]
    assert graph.degree(np.array([0, 1, 2]), "a", "out").tolist() == [3, 1, 0]
    assert graph.degree(np.array([2]), "a", "in").tolist() == [2]


def test_empty_batch_and_isolated_nodes() -> None:
    graph = CsrGraph.build(3, ["a"], np.array([0]), np.array([1]), np.zeros(1, np.int16))
    assert graph.neighbours(np.array([], np.int64)).size == 0
    assert graph.neighbours(np.array([2])).size == 0


def test_unknown_edge_and_bad_direction_are_refused() -> None:
    graph = CsrGraph.build(2, ["a"], np.array([0]), np.array([1]), np.zeros(1, np.int16))
    with pytest.raises(KeyError, match="unknown edge type"):
        graph.neighbours(np.array([0]), "nope")
    with pytest.raises(ValueError, match="direction"):
        graph.neighbours(np.array([0]), "a", "sideways")  # type: ignore[arg-type]


def test_save_and_load_round_trip(tmp_path: Path) -> None:
    n, names, src, dst, etype = _random_graph(seed=3)
    graph = CsrGraph.build(n, names, src, dst, etype)
    graph.save(tmp_path / "g")
    loaded = CsrGraph.load(tmp_path / "g")
    batch = np.arange(0, n, 7)
    for edge in names:
        assert loaded.neighbours(batch, edge, "both").tolist() == graph.neighbours(batch, edge, "both").tolist()
    assert loaded.num_edges == graph.num_edges == src.size


def test_packed_key_build_equals_lexsort_per_type_with_duplicates_and_empty_types() -> None:
    rng = np.random.default_rng(4)
    n, m = 300, 4000
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    src[:50], dst[:50] = src[50:100], dst[50:100]  # duplicate edges are kept, as the bundle has them
    etype = rng.choice([0, 2, 3], m).astype(np.int16)  # type 1 has no edge
    names = ["a", "b", "c", "d"]
    graph = CsrGraph.build(n, names, src, dst, etype)
    for code in range(len(names)):
        mask = etype == code
        for direction, (a, b) in (("out", (src[mask], dst[mask])), ("in", (dst[mask], src[mask]))):
            order = np.lexsort((b, a))
            indptr = np.zeros(n + 1, np.int64)
            np.cumsum(np.bincount(a, minlength=n), out=indptr[1:])
            np.testing.assert_array_equal(graph._arrays[f"{code}.{direction}.indices"], b[order])
            np.testing.assert_array_equal(graph._arrays[f"{code}.{direction}.indptr"], indptr)
    assert graph.num_edges == m
