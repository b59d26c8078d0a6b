"""A verb right after the wh-word, its object following ("what *makes* something fall"), makes the wh-word the
verb's subject: the verb is no head noun naming the answer's class, though English also has it as a plural noun;
and a preposition that ends the question after its verb ("brought *about*") is a particle of the relation, no text
cue. A schema of its own; nothing here is in any question set."""

from __future__ import annotations

import pytest

from skbqa.engine.embedded import EmbeddedEngine
from skbqa.stages.parse.cues import claim_text_cues
from skbqa.stages.parse.question_text import QuestionText
from tests.helpers import edge_type, engine_over, node_type, nodes_of
from tests.unit.test_encoder_parser import parse

SCHEMA = {
    "name": "happenings",
    "description": "Actions people and things do, and the products people buy",
    "node_types": [
        node_type("action", "A verb naming an action."),
        node_type("product", "A noun naming a product or a brand of products."),
    ],
    "edge_types": [
        edge_type("causes", "action", "action", "the action causes the target action, it brings it about"),
        edge_type("made_by", "product", "product", "the product is made by the target brand"),
    ],
}
NODES = nodes_of(
    [
        (1, "action", "fall", "descend freely under the force of gravity"),
        (2, "action", "push", "move something away by pressing it"),
        (3, "action", "trip", "catch the foot and stumble"),
        (4, "product", "make", "a brand of a product, as in what make of car is it"),
        (5, "product", "roadster", "an open two-seater car"),
    ]
)
EDGES = [{"src": s, "type": t, "dst": d} for s, t, d in [(2, "causes", 1), (3, "causes", 1), (5, "made_by", 4)]]


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory, onnx_encoder) -> EmbeddedEngine:
    return engine_over(tmp_path_factory.mktemp("happenings"), onnx_encoder, SCHEMA, NODES, EDGES)


def test_a_verb_after_the_wh_word_is_no_head_noun(engine: EmbeddedEngine) -> None:
    parsed = parse(engine, "what makes something fall?")
    assert parsed.target_type == "action"
    assert not any("read from 'makes'" in w for w in parsed.warnings)


def test_a_cue_word_that_ends_the_question_is_a_particle() -> None:
    text = QuestionText.of("By which verbs is falling brought about?")
    assert claim_text_cues(text) == []
    assert text.claimed[-1] is None  # "about": free, a word of the relation's clause


def test_a_cue_word_with_its_object_is_a_cue() -> None:
    assert [cue.text for cue in claim_text_cues(QuestionText.of("Which papers are about graphs?"))] == ["graphs"]
