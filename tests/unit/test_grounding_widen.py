"""A name of a node that contains others ("countries in *Africa*", where countries link to their subregion and
subregions are part of a continent) is reached through its type's one hierarchy when the answers are not found at
its best-matched node; a type with several edges among its own nodes has no one hierarchy. Over a small knowledge
base of its own, through the af steps with a scripted parse."""

from __future__ import annotations

import pytest

from skbqa.engine.embedded import EmbeddedEngine
from skbqa.query.structured import StructuredQuery, Symbol, Triplet
from skbqa.skb.schema import Schema
from skbqa.stages.grounding.widen import hierarchies, widenings
from tests.helpers import engine_over
from tests.unit.test_grounding_relax import grounded_names

SCHEMA = {
    "name": "atlas",
    "description": "countries and regions",
    "node_types": [
        {"name": "territory", "description": "a country"},
        {"name": "region", "description": "a continent or subregion"},
    ],
    "edge_types": [
        {"name": "located_in", "source": "territory", "target": "region", "description": "lies in the region"},
        {"name": "part_of", "source": "region", "target": "region", "description": "a subregion of the region"},
    ],
}
_NAMES = [
    ("region", "Africa"),
    ("region", "Western Africa"),
    ("region", "Southern Africa"),
    ("region", "Europe"),
    ("territory", "Ghana"),
    ("territory", "Namibia"),
    ("territory", "Norway"),
]
NODES = [{"id": i, "type": t, "name": n, "text": f"{n}: a {t}"} for i, (t, n) in enumerate(_NAMES)]
EDGES = [
    {"src": 1, "type": "part_of", "dst": 0},
    {"src": 2, "type": "part_of", "dst": 0},
    {"src": 4, "type": "located_in", "dst": 1},
    {"src": 5, "type": "located_in", "dst": 2},
    {"src": 6, "type": "located_in", "dst": 3},
]


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory, onnx_encoder) -> EmbeddedEngine:
    return engine_over(tmp_path_factory.mktemp("atlas-regions"), onnx_encoder, SCHEMA, NODES, EDGES)


def located_in(region: str) -> StructuredQuery:
    symbols = {"y": Symbol("y", "territory"), "c1": Symbol("c1", "region", (region,))}
    return StructuredQuery("y", symbols, [Triplet("y", "located_in", "c1")], confidence=0.9, type_named=True)


def test_the_answers_link_to_what_lies_within_the_named_node(engine: EmbeddedEngine) -> None:
    answers, notes = grounded_names(engine, located_in("Africa"))
    assert answers == {"Ghana", "Namibia"}
    assert notes["widened"] == {"constant": ["Africa"]}
    # a node the answers link to directly is read as it stands
    answers, notes = grounded_names(engine, located_in("Europe"))
    assert "Norway" in answers and "widened" not in notes


def test_only_a_type_with_one_edge_among_its_own_nodes_has_a_hierarchy() -> None:
    assert hierarchies(Schema.from_dict(SCHEMA)) == {"region": "part_of"}
    two = {
        **SCHEMA,
        "edge_types": [*SCHEMA["edge_types"], {"name": "borders", "source": "region", "target": "region"}],
    }
    assert hierarchies(Schema.from_dict(two)) == {}
    (name, reading), *_ = widenings(located_in("Africa"), {"region": "part_of"})
    assert name == "c1" and Triplet("w_c1", "part_of", "c1", min_hops=1, max_hops=2) in reading.triplets
