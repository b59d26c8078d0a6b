"""A number said with a noun that names no attribute ("fewer than 5000 *people*"), on a schema of its own (nothing
here is in the development data): the numeric attribute whose name means the noun is compared, when the data lets
the number separate the answers; a noun that names a type, or a number no value is on both sides of, is no such
amount."""

from __future__ import annotations

import pytest

from skbqa.engine.embedded import EmbeddedEngine
from skbqa.query.structured import AttributeConstraint
from tests.helpers import engine_over
from tests.unit.test_encoder_parser import parse

SCHEMA = {
    "name": "atlas",
    "description": "towns and the districts they lie in",
    "node_types": [
        {"name": "town", "description": "a settlement; attributes give its population and postal code"},
        {"name": "district", "description": "an administrative area that holds towns"},
    ],
    "edge_types": [
        {
            "name": "lies_in",
            "source": "town",
            "target": "district",
            "description": "the town lies in the district",
        },
    ],
}
_TOWNS = [
    ("Ashford", 1200, 101),
    ("Brindle", 45000, 102),
    ("Corrow", 3100, 103),
    ("Dunmere", 2500000, 104),
    ("Elsby", 800, 105),
    ("Farleigh", 760000, 106),
]
NODES = [
    {"id": i, "type": "town", "name": name, "text": "a town", "attrs": {"population": people, "postal_code": code}}
    for i, (name, people, code) in enumerate(_TOWNS)
] + [
    {"id": 6, "type": "district", "name": "Westvale", "text": "a district in the west"},
    {"id": 7, "type": "district", "name": "Eastmoor", "text": "a district in the east"},
]
EDGES = [{"src": i, "type": "lies_in", "dst": 6 if i < 3 else 7} for i in range(6)]  # Westvale: the first three


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory, onnx_encoder) -> EmbeddedEngine:
    return engine_over(tmp_path_factory.mktemp("atlas"), onnx_encoder, SCHEMA, NODES, EDGES)


@pytest.mark.parametrize(
    ("question", "op", "value"),
    [
        ("Which towns have fewer than 5000 people?", "<", 5000),
        ("towns with more than one million inhabitants", ">", 1000000),
        ("Which towns in Westvale have at least 2000 residents?", ">=", 2000),
    ],
)
def test_a_noun_after_a_number_names_the_attribute_it_means(
    engine: EmbeddedEngine, question: str, op: str, value: int
) -> None:
    assert parse(engine, question).constraints == [AttributeConstraint("y", "population", op, value)]  # type: ignore[arg-type]


def test_the_answers_are_the_nodes_the_comparison_keeps(engine: EmbeddedEngine) -> None:
    answers = engine.ask("Which towns in Westvale have fewer than 5000 people?", strategy="af").items
    assert {item.node_id for item in answers[:2]} == {
        0,
        2,
    }  # Brindle is in Westvale but large; Elsby small but east


@pytest.mark.parametrize(
    "question",
    [
        "towns in more than 1 district",  # a type word: a count of nodes, not an amount
        "towns with more than 5 billion people",  # no town is that large: the number separates nothing
        "towns with more than 3000 stars",  # "stars" means no attribute the towns have
    ],
)
def test_no_attribute_when_the_noun_or_the_number_cannot_mean_one(engine: EmbeddedEngine, question: str) -> None:
    assert parse(engine, question).constraints == []
