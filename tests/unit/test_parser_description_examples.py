"""Examples a schema's descriptions give ("such as otter", "e.g. otter is in raft") are nodes, not words for a type
or a relation: a question naming one links it as a name. A schema of its own; nothing here is in any question
set."""

from __future__ import annotations

import pytest

from skbqa.engine.embedded import EmbeddedEngine
from skbqa.stages.parse.schema_examples import without_examples
from tests.helpers import edge_type, engine_over, node_type, nodes_of
from tests.unit.test_encoder_parser import edges, parse

SCHEMA = {
    "name": "zoo",
    "description": "Animals and the groups they live in",
    "node_types": [
        node_type("creature", "An animal kind, such as otter / sea otter."),
        node_type("collective", "A group that animals live in."),
    ],
    "edge_types": [
        edge_type(
            "member_of",
            "creature",
            "collective",
            "the creature belongs to the target group, e.g. otter is in raft.",
        )
    ],
}
NODES = nodes_of(
    [
        (1, "creature", "otter", "a playful swimming mammal"),
        (2, "collective", "raft", "otters floating together"),
        (3, "creature", "heron", "a long-legged wading bird"),
        (4, "collective", "siege", "herons standing together"),
    ]
)
EDGES = [{"src": 1, "type": "member_of", "dst": 2}, {"src": 3, "type": "member_of", "dst": 4}]


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory, onnx_encoder) -> EmbeddedEngine:
    return engine_over(tmp_path_factory.mktemp("zoo"), onnx_encoder, SCHEMA, NODES, EDGES)


def test_examples_are_cut_to_the_end_of_their_clause() -> None:
    assert without_examples("An animal kind, such as otter / sea otter. Named by its keeper.").split() == [
        "An",
        "animal",
        "kind,",
        "Named",
        "by",
        "its",
        "keeper.",
    ]
    assert without_examples(
        "filed in a domain, e.g. dog is in noun.animal and run is in verb.motion."
    ).split() == [
        "filed",
        "in",
        "a",
        "domain,",
    ]


def test_a_name_a_description_gives_as_an_example_is_linked(engine: EmbeddedEngine) -> None:
    question = "What does the otter belong to?"
    parsed = parse(engine, question)
    assert edges(parsed) == {("c1", "member_of", "y")}
    assert engine.ask(question, strategy="af").items[0].node_id == 2
