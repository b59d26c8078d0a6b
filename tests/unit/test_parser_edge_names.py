"""An edge's own words in a question, on a schema of its own (dishes; nothing here is in the development data):
a node named like an edge ("Place of origin", the root of a vocabulary of places) is the relation when the
question says it, and a plural type word before a name of another type opens a clause ("the dishes Marta Rossi
created"), it does not type the name."""

from __future__ import annotations

import pytest

from skbqa.engine.embedded import EmbeddedEngine
from tests.helpers import engine_over
from tests.unit.test_encoder_parser import edges, parse

SCHEMA = {
    "name": "dishes",
    "description": "dishes, where they come from and who created them",
    "node_types": [
        {"name": "dish", "description": "a recipe that can be cooked"},
        {"name": "region", "description": "a part of a country"},
        {"name": "cook", "description": "a person who creates recipes"},
    ],
    "edge_types": [
        {
            "name": "dish_has_place_of_origin",
            "source": "dish",
            "target": "region",
            "description": "where it began",
        },
        {"name": "created_by", "source": "dish", "target": "cook", "description": "who created the dish"},
        {"name": "part_of", "source": "region", "target": "region", "description": "the region lies in the other"},
    ],
}
NODES = [
    {"id": 1, "type": "region", "name": "Place of origin", "text": "the root of the places"},
    {"id": 2, "type": "region", "name": "Campania", "text": "a region of southern Italy"},
    {"id": 3, "type": "region", "name": "Liguria", "text": "a region of northern Italy"},
    {"id": 10, "type": "dish", "name": "pizza", "text": "flat bread with tomato"},
    {"id": 11, "type": "dish", "name": "pesto", "text": "a green sauce"},
    {"id": 20, "type": "cook", "name": "Marta Rossi", "text": "a cook"},
]
EDGES = [
    {"src": 2, "type": "part_of", "dst": 1},
    {"src": 3, "type": "part_of", "dst": 1},
    {"src": 10, "type": "dish_has_place_of_origin", "dst": 2},
    {"src": 11, "type": "dish_has_place_of_origin", "dst": 3},
    {"src": 10, "type": "created_by", "dst": 20},
]


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory, onnx_encoder) -> EmbeddedEngine:
    return engine_over(tmp_path_factory.mktemp("dishes"), onnx_encoder, SCHEMA, NODES, EDGES)


@pytest.mark.parametrize("question", ["what is the place of origin of pesto", "places of origin of pesto"])
def test_a_name_that_says_an_edges_name_is_the_relation(engine: EmbeddedEngine, question: str) -> None:
    parsed = parse(engine, question)
    assert parsed.target_type == "region"
    assert edges(parsed) == {("c1", "dish_has_place_of_origin", "y")}
    assert engine.ask(question, strategy="af").items[0].node_id == 3


def test_a_plural_type_word_before_a_name_of_another_type_opens_a_clause(engine: EmbeddedEngine) -> None:
    question = "places of origin of the dishes Marta Rossi created"
    parsed = parse(engine, question)
    assert parsed.symbols["c1"].type == "cook"
    assert edges(parsed) == {("m1", "created_by", "c1"), ("m1", "dish_has_place_of_origin", "y")}
    assert engine.ask(question, strategy="af").items[0].node_id == 2


def test_how_asks_for_the_far_end_of_the_last_verbs_edge(engine: EmbeddedEngine) -> None:
    # "how is <subject> <verb>": the subject (dishes) is on the way; "originated" names the edge to the answer
    question = "How are the dishes created by Marta Rossi originated?"
    parsed = parse(engine, question)
    assert parsed.target_type == "region"
    assert engine.ask(question, strategy="af").items[0].node_id == 2
