"""A word that labels the next name is a noun after an article or a possessive, though English also has it as a
verb: "what is *the reverse* of hot" asks for hot's opposite, the word stays in its clause and names the relation.
A schema of its own; nothing here is in any question set."""

from __future__ import annotations

import pytest

from skbqa.engine.embedded import EmbeddedEngine
from tests.helpers import edge_type, engine_over, node_type, nodes_of
from tests.unit.test_encoder_parser import constants, parse

SCHEMA = {
    "name": "terms",
    "description": "Terms of everyday English and how their meanings relate",
    "node_types": [
        node_type("term", "A term of everyday English naming a thing or quality."),
        node_type("action", "A verb of everyday English naming an action."),
    ],
    "edge_types": [
        edge_type("opposite_of", "term", "term", "the term means the opposite of the target term, its contrary"),
        edge_type("kind_of", "term", "term", "the term is a more specific kind of the target term"),
    ],
}
NODES = nodes_of(
    [
        (1, "term", "hot", "having a high temperature"),
        (2, "term", "cold", "having a low temperature"),
        (3, "term", "warm", "pleasantly hot"),
        (4, "term", "reverse", "the gear that makes a vehicle go backwards"),
        (5, "term", "scorching", "hot enough to burn"),
        (6, "action", "reverse", "turn something the other way round"),
        (7, "action", "heat", "make hot"),
    ]
)
EDGES = [
    {"src": s, "type": t, "dst": d}
    for s, t, d in [(1, "opposite_of", 2), (2, "opposite_of", 1), (3, "kind_of", 1), (5, "kind_of", 1)]
]


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory, onnx_encoder) -> EmbeddedEngine:
    return engine_over(tmp_path_factory.mktemp("terms"), onnx_encoder, SCHEMA, NODES, EDGES)


def test_a_labelling_word_after_an_article_names_the_relation(engine: EmbeddedEngine) -> None:
    question = "What is the reverse of hot?"
    parsed = parse(engine, question)
    assert [names for _, names in constants(parsed).values()] == [("hot",)]
    assert {t.edge for t in parsed.triplets} == {"opposite_of"}
    assert engine.ask(question, strategy="af").items[0].node_id == 2
