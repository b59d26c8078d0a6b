"""A question that asks for kinds of a named node ("some *examples of* a sea battle") has the answer of that node's
type, also when the kind noun is itself taken for a synonym of another type (here the verb type's description
mentions example sentences), on a schema of its own (nothing here is in the development data)."""

from __future__ import annotations

import pytest

from skbqa.engine.embedded import EmbeddedEngine
from tests.helpers import engine_over
from tests.unit.test_encoder_parser import parse

SCHEMA = {
    "name": "naval lexicon",
    "description": "senses of English words about the sea",
    "node_types": [
        {"name": "noun_sense", "description": "A noun sense: one meaning of a noun"},
        {"name": "verb_sense", "description": "A verb sense: one meaning of a verb, with its example sentences"},
    ],
    "edge_types": [
        {
            "name": "instance_of",
            "source": "noun_sense",
            "target": "noun_sense",
            "description": "the sense is a particular instance of the target class",
        },
        {
            "name": "related_form",
            "source": "noun_sense",
            "target": "verb_sense",
            "description": "the noun and the verb are forms of one word",
        },
    ],
}
NODES = [
    {"id": 1, "type": "noun_sense", "name": "sea battle", "text": "a battle fought between fleets at sea"},
    {"id": 2, "type": "noun_sense", "name": "Battle of Lissa", "text": "an ironclad engagement in the Adriatic"},
    {"id": 3, "type": "noun_sense", "name": "Battle of Svolder", "text": "a Viking-age fight in the Baltic"},
    {"id": 10, "type": "verb_sense", "name": "battle", "text": "fight against: example: they battled the storm"},
]
EDGES = [
    {"src": 2, "type": "instance_of", "dst": 1},
    {"src": 3, "type": "instance_of", "dst": 1},
    {"src": 1, "type": "related_form", "dst": 10},
]


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory, onnx_encoder) -> EmbeddedEngine:
    return engine_over(tmp_path_factory.mktemp("naval"), onnx_encoder, SCHEMA, NODES, EDGES)


@pytest.mark.parametrize(
    "question",
    ["what are some examples of sea battles", "examples of sea battles", "list examples of a sea battle"],
)
def test_examples_of_a_named_node_are_of_its_type(engine: EmbeddedEngine, question: str) -> None:
    assert parse(engine, question).target_type == "noun_sense"
    top = {item.node_id for item in engine.ask(question, strategy="af", k=2).items[:2]}
    assert top == {2, 3}
