"""A contracted "is" ("what*'s* made of glass") is read as "is": the verb after it is the question's relation, not
a name, even where a node bears that word as its name; a possessive "'s" stays one. A schema of its own; nothing
here is in any question set."""

from __future__ import annotations

import pytest

from skbqa.engine.embedded import EmbeddedEngine
from skbqa.stages.parse.question_text import QuestionText
from tests.helpers import edge_type, engine_over, node_type, nodes_of
from tests.unit.test_encoder_parser import constants, edges, parse

SCHEMA = {
    "name": "materials",
    "description": "Things and the materials they are made of",
    "node_types": [node_type("thing", "A thing or a material, named by a common noun or adjective.")],
    "edge_types": [
        edge_type("substance_of", "thing", "thing", "the thing is a material of which the target thing is made"),
    ],
}
NODES = nodes_of(
    [
        (1, "thing", "glass", "a brittle transparent solid"),
        (2, "thing", "window", "a framed pane of glass in a wall"),
        (3, "thing", "bottle", "a vessel with a narrow neck"),
        (4, "thing", "made", "produced by a manufacturing process"),
        (5, "thing", "wood", "the hard fibrous substance of trees"),
        (6, "thing", "table", "a piece of furniture with a flat top"),
    ]
)
EDGES = [{"src": s, "type": "substance_of", "dst": d} for s, d in ((1, 2), (1, 3), (5, 6))]


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory, onnx_encoder) -> EmbeddedEngine:
    return engine_over(tmp_path_factory.mktemp("materials"), onnx_encoder, SCHEMA, NODES, EDGES)


@pytest.mark.parametrize(
    ("question", "words"),
    [
        ("what's made of glass", ["what", "is", "made", "of", "glass"]),
        ("Who’s there", ["who", "is", "there"]),
        ("the window's frame", ["the", "window", "s", "frame"]),  # a possessive
    ],
)
def test_a_contracted_is_reads_as_is(question: str, words: list[str]) -> None:
    assert [token.lower for token in QuestionText.of(question).tokens] == words


def test_the_verb_after_a_contracted_is_states_the_relation(engine: EmbeddedEngine) -> None:
    question = "what's made out of glass?"
    parsed = parse(engine, question)
    assert [names for _, names in constants(parsed).values()] == [("glass",)]
    assert edges(parsed) == {("c1", "substance_of", "y")}
    assert {item.node_id for item in engine.ask(question, strategy="af").items[:2]} == {2, 3}
