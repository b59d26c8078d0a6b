"""The `GraphStore` contract: every adapter must pass this one suite.

Adapters: `CsrGraph` (always) and `NebulaGraph` when ``SKBQA_NEBULA_ADDR=host:port`` names a running graphd (the
small graph below is loaded into a fresh space with `nebula_loader`, which is dropped afterwards; credentials from
SKBQA_NEBULA_USER / SKBQA_NEBULA_PASSWORD, default root / nebula).

The graph is small but awkward on purpose: four node types (one, ``gene/protein``, is no valid NebulaGraph name),
an edge name used for two (source, target) type pairs (and containing a space), a parallel edge, reciprocal
citations, nodes with only in-edges, isolated nodes, and names/attributes full of quotes, backslashes, newlines,
backticks, NUL and non-ASCII text. No self-loops. Answers are checked against a plain-Python oracle over the edge
list, including the row order of `neighbour_pairs` (blocks by edge code, out before in; input order; neighbours
ascending), which `ingest.documents` and `reranker.descriptions` rely on.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from skbqa.skb.schema import Schema
from skbqa.stores.graph.base import GraphStore
from skbqa.stores.graph.csr import CsrGraph
from skbqa.stores.nodes import NodeTable

NEBULA_ADDR = os.environ.get("SKBQA_NEBULA_ADDR", "")
NEBULA_SKIP = "NebulaGraph not reachable: set SKBQA_NEBULA_ADDR=host:port"
needs_nebula = pytest.mark.skipif(not NEBULA_ADDR, reason=NEBULA_SKIP)

SCHEMA: dict[str, Any] = {
    "name": "contract",
    "description": "papers, authors, fields, genes",
    "node_types": [
        {"name": "paper"},
        {"name": "author"},
        {"name": "field"},
        {"name": "gene/protein"},
    ],
    "edge_types": [
        {"name": "written_by", "source": "paper", "target": "author"},
        {"name": "cites", "source": "paper", "target": "paper"},
        {"name": "related to", "source": "paper", "target": "field"},
        {"name": "related to", "source": "author", "target": "field"},
        {"name": "interacts", "source": "gene/protein", "target": "gene/protein"},
        {"name": "mentions", "source": "paper", "target": "gene/protein"},
    ],
}

# (type, name, attrs); position = index, external id = 1000 + 7 * position (sorted, as NodeTable requires).
NODES: list[tuple[str, str, dict[str, Any]]] = [
    ("paper", 'Graph "neural" nets', {"year": 2019, "score": 0.5, "open": True}),  # 0
    ("paper", 'Retrieval"; DROP SPACE x; "', {"year": 2022, "tags": "a`b", "score": 2}),  # 1
    ("paper", "Protein\nfolding\\attention", {"year": 2021, "note": None}),  # 2
    ("paper", "An isolated paper", {}),  # 3 isolated
    ("author", "Ada \\ Lovelace", {"country": "UK"}),  # 4
    ("author", "Alan Turing", {"country": "UK", "born-year": 1912}),  # 5
    ("author", "Nobody `at` all", {}),  # 6 isolated
    ("field", "chemistry", {}),  # 7 in-edges only
    ("field", "information retrieval ✓", {"code": "I\x007"}),  # 8 in-edges only
    ("gene/protein", "TP53", {"chromosome": 17}),  # 9
    ("gene/protein", "BRCA1 é\t\x01", {"chromosome": "17q21"}),  # 10 in-edges only
]
P0, P1, P2, P3, A0, A1, A2, F0, F1, G0, G1 = range(len(NODES))

EDGES: list[tuple[int, str, int]] = [
    (P0, "written_by", A0),
    (P0, "written_by", A0),  # a parallel edge: two rows, in every adapter
    (P1, "written_by", A1),
    (P2, "written_by", A0),
    (P2, "written_by", A1),
    (P1, "cites", P0),
    (P2, "cites", P0),
    (P2, "cites", P1),
    (P0, "cites", P2),  # reciprocal with P2 → P0
    (P0, "related to", F0),
    (P1, "related to", F1),
    (A1, "related to", F1),  # the same edge name from another source type
    (A0, "related to", F0),
    (G0, "interacts", G1),
    (P2, "mentions", G0),
]

BATCHES: list[list[int]] = [
    list(range(len(NODES))),  # everything
    [P2],
    [A1, P0, P0, G1],  # unsorted, with a duplicate
    [P3, A2],  # isolated only
    [F1, F0, P1, F1, A0],  # in-edge-only nodes, duplicates
    [G1, G0, P2, A1, F0, P1, P0],  # more than the Nebula chunk size (3)
]


@dataclass
class SmallGraph:
    nodes: NodeTable
    graph: CsrGraph
    edge_names: list[str]
    edges: list[tuple[int, int, int]]  # (src, dst, edge code)


def small_graph() -> SmallGraph:
    schema = Schema.from_dict(SCHEMA)
    ids = np.asarray([1000 + 7 * i for i in range(len(NODES))], np.int64)
    types = np.asarray([schema.node_code(t) for t, _, _ in NODES], np.int16)
    names = [name for _, name, _ in NODES]
    attrs = [dict(a) for _, _, a in NODES]
    nodes = NodeTable(schema, ids, types, names, [f"text of {n}" for n in names], attrs)
    edges = [(s, d, schema.edge_code(e)) for s, e, d in EDGES]
    src, dst, etype = (np.asarray(column, np.int64) for column in zip(*edges, strict=True))
    graph = CsrGraph.build(len(NODES), schema.edge_names, src, dst, etype.astype(np.int16))
    return SmallGraph(nodes, graph, schema.edge_names, edges)


def stored_attr(key: str, value: Any) -> Any:
    """An attribute as NebulaGraph gives it back: one type per column, so a column mixing ints and doubles holds
    doubles, and one mixing ints and strings holds strings (see nebula_loader.infer_kind)."""
    if key == "score":
        return float(value)
    if key == "chromosome":
        return str(value)
    return value


def oracle_pairs(
    small: SmallGraph, nodes: list[int], edge: str | None, direction: str
) -> tuple[list[int], list[int]]:
    codes = range(len(small.edge_names)) if edge is None else [small.edge_names.index(edge)]
    directions = ("out", "in") if direction == "both" else (direction,)
    sources: list[int] = []
    targets: list[int] = []
    for code in codes:
        for d in directions:
            for v in nodes:
                if d == "out":
                    found = sorted(t for s, t, c in small.edges if c == code and s == v)
                else:
                    found = sorted(s for s, t, c in small.edges if c == code and t == v)
                sources += [v] * len(found)
                targets += found
    return sources, targets


# -- adapters ---------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def small() -> SmallGraph:
    return small_graph()


@pytest.fixture(scope="module")
def nebula_store(small: SmallGraph) -> Iterator[GraphStore]:
    from skbqa.stores.graph.nebula import NebulaGraph
    from skbqa.stores.graph.nebula_loader import drop_nebula_space, load_graph_into_nebula

    user = os.environ.get("SKBQA_NEBULA_USER", "root")
    password = os.environ.get("SKBQA_NEBULA_PASSWORD", "nebula")
    space = f"skbqa_contract_{secrets.token_hex(4)}"
    report = load_graph_into_nebula(
        small.nodes,
        small.graph,
        NEBULA_ADDR,
        space,
        user=user,
        password=password,
        batch_size=4,  # several INSERT batches even for this graph
        partitions=3,
        recreate=True,
    )
    assert report["nodes"] == len(NODES) and report["edges"] == len(EDGES)
    store = NebulaGraph(NEBULA_ADDR, space, user=user, password=password, chunk_size=3)
    try:
        yield store
    finally:
        store.close()
        drop_nebula_space(NEBULA_ADDR, space, user=user, password=password)


@pytest.fixture(params=["csr", pytest.param("nebula", marks=needs_nebula)])
def store(request: pytest.FixtureRequest, small: SmallGraph) -> GraphStore:
    if request.param == "csr":
        return small.graph
    return request.getfixturevalue("nebula_store")


EDGE_CHOICES = [None, "written_by", "cites", "related to", "interacts", "mentions"]
DIRECTIONS = ["out", "in", "both"]


# -- the contract -----------------------------------------------------------------------------------------------


def test_is_a_graph_store(store: GraphStore, small: SmallGraph) -> None:
    assert isinstance(store, GraphStore)
    assert store.num_nodes == len(NODES)
    assert store.edge_names == small.edge_names == ["written_by", "cites", "related to", "interacts", "mentions"]


@pytest.mark.parametrize("direction", DIRECTIONS)
@pytest.mark.parametrize("edge", EDGE_CHOICES)
def test_neighbours(store: GraphStore, small: SmallGraph, edge: str | None, direction: str) -> None:
    for batch in BATCHES:
        got = store.neighbours(np.asarray(batch), edge, direction)  # type: ignore[arg-type]
        want = sorted(set(oracle_pairs(small, batch, edge, direction)[1]))
        assert got.dtype == np.int64
        assert got.tolist() == want, (batch, edge, direction)


@pytest.mark.parametrize("direction", DIRECTIONS)
@pytest.mark.parametrize("edge", EDGE_CHOICES)
def test_neighbour_pairs(store: GraphStore, small: SmallGraph, edge: str | None, direction: str) -> None:
    for batch in BATCHES:
        sources, targets = store.neighbour_pairs(np.asarray(batch), edge, direction)  # type: ignore[arg-type]
        want_sources, want_targets = oracle_pairs(small, batch, edge, direction)
        assert sources.dtype == np.int64 and targets.dtype == np.int64
        assert (sources.tolist(), targets.tolist()) == (want_sources, want_targets), (batch, edge, direction)


@pytest.mark.parametrize("direction", DIRECTIONS)
@pytest.mark.parametrize("edge", EDGE_CHOICES)
def test_degree(store: GraphStore, small: SmallGraph, edge: str | None, direction: str) -> None:
    for batch in BATCHES:
        got = store.degree(np.asarray(batch), edge, direction)  # type: ignore[arg-type]
        sources, _ = oracle_pairs(small, batch, edge, direction)
        want = [sources.count(v) // batch.count(v) for v in batch]  # oracle rows repeat per duplicate input
        assert got.dtype == np.int64
        assert got.tolist() == want, (batch, edge, direction)


def test_known_values(store: GraphStore) -> None:
    """A few answers written out by hand, so the oracle itself is checked too."""
    assert store.neighbours(np.asarray([P0]), "written_by").tolist() == [A0]
    pairs = store.neighbour_pairs(np.asarray([P0]), "written_by")
    assert [p.tolist() for p in pairs] == [[P0, P0], [A0, A0]]  # the parallel edge, twice
    assert store.degree(np.asarray([P0, A0, A1]), "written_by", "both").tolist() == [2, 3, 2]
    assert store.neighbours(np.asarray([F1]), "related to", "in").tolist() == [P1, A1]
    assert store.neighbours(np.asarray([P0]), None, "both").tolist() == [P1, P2, A0, F0]
    assert store.degree(np.asarray([P3, A2]), None, "both").tolist() == [0, 0]


def test_empty_input(store: GraphStore) -> None:
    empty = np.zeros(0, np.int64)
    for edge in (None, "cites"):
        for direction in DIRECTIONS:
            got = store.neighbours(empty, edge, direction)  # type: ignore[arg-type]
            assert got.size == 0 and got.dtype == np.int64
            sources, targets = store.neighbour_pairs(empty, edge, direction)  # type: ignore[arg-type]
            assert sources.size == targets.size == 0
            assert sources.dtype == targets.dtype == np.int64
            degree = store.degree(empty, edge, direction)  # type: ignore[arg-type]
            assert degree.size == 0 and degree.dtype == np.int64
    assert store.neighbours(np.asarray([], dtype=np.int32)).size == 0  # any integer dtype, even empty


def test_isolated_nodes(store: GraphStore) -> None:
    isolated = np.asarray([P3, A2, P3])
    for direction in DIRECTIONS:
        assert store.neighbours(isolated, None, direction).size == 0  # type: ignore[arg-type]
        assert store.neighbour_pairs(isolated, None, direction)[0].size == 0  # type: ignore[arg-type]
        assert store.degree(isolated, None, direction).tolist() == [0, 0, 0]  # type: ignore[arg-type]


def test_duplicates_in_input(store: GraphStore) -> None:
    once = store.neighbour_pairs(np.asarray([P2]), "cites")
    twice = store.neighbour_pairs(np.asarray([P2, P2]), "cites")
    assert once[1].tolist() == [P0, P1]
    assert twice[0].tolist() == [P2] * 4 and twice[1].tolist() == [P0, P1, P0, P1]
    assert store.neighbours(np.asarray([P2, P2]), "cites").tolist() == [P0, P1]
    assert store.degree(np.asarray([P2, P0, P2]), "cites").tolist() == [2, 1, 2]


def test_integer_dtypes_are_accepted(store: GraphStore) -> None:
    for dtype in (np.int16, np.int32, np.int64):
        assert store.neighbours(np.asarray([P2], dtype=dtype), "cites").tolist() == [P0, P1]


def test_unknown_edge_name_is_a_key_error(store: GraphStore) -> None:
    """CsrGraph raises KeyError("unknown edge type ...") whatever the input, so every adapter must."""
    for nodes in (np.asarray([P0, A0]), np.zeros(0, np.int64)):
        with pytest.raises(KeyError, match="unknown edge type 'nope'"):
            store.neighbours(nodes, "nope")
        with pytest.raises(KeyError, match="unknown edge type 'nope'"):
            store.neighbour_pairs(nodes, "nope", "in")
        with pytest.raises(KeyError, match="unknown edge type 'nope'"):
            store.degree(nodes, "nope", "both")
    with pytest.raises(KeyError, match="unknown edge type"):
        store.neighbours(np.asarray([P0]), "related_to")  # near misses are not matched


def test_bad_direction_is_a_value_error(store: GraphStore) -> None:
    for call in (store.neighbours, store.neighbour_pairs, store.degree):
        with pytest.raises(ValueError, match="direction"):
            call(np.asarray([P0]), "cites", "sideways")  # type: ignore[operator]


# -- NebulaGraph only: node properties survive the round trip ------------------------------------------------


@needs_nebula
def test_nebula_node_properties_round_trip(nebula_store: Any, small: SmallGraph) -> None:
    records = nebula_store.fetch_nodes(np.arange(len(NODES)))
    assert sorted(records) == list(range(len(NODES)))
    for position, (type_name, name, attrs) in enumerate(NODES):
        record = records[position]
        assert record.type_name == type_name
        assert record.node_id == int(small.nodes.ids[position])
        assert record.name == name  # quotes, backslashes, newlines, NUL, non-ASCII: unchanged
        for key, value in attrs.items():
            assert record.attrs[key] == stored_attr(key, value), (position, key)
