"""A head noun that names a relation joining two nodes of one type, for several types: "*antonyms* of the verb
stand" — antonym_of joins nouns to nouns and verbs to verbs, so the answer is of the type the name is, here the
one the type word before it says, or, without one, the type of the name's nodes that have that relation ("lie"
is a noun and a verb; only the verb has opposites). A schema of its own; nothing here is in any question set."""

from __future__ import annotations

import pytest

from skbqa.engine.embedded import EmbeddedEngine
from tests.helpers import engine_over
from tests.unit.test_encoder_parser import edges, parse

SCHEMA = {
    "name": "lexicon",
    "description": "English word senses (nouns and verbs, also called words or terms) and their opposites",
    "node_types": [
        {"name": "noun_sense", "description": "A noun sense: a word or term naming a thing.", "name_attr": "name"},
        {
            "name": "verb_sense",
            "description": "A verb sense: a word or term naming an action.",
            "name_attr": "name",
        },
    ],
    "edge_types": [
        {"name": "antonym_of", "source": t, "target": t, "description": "the sense is an opposite of the target"}
        for t in ("noun_sense", "verb_sense")
    ],
}
WORDS = [
    (1, "noun_sense", "stand", "a small table or rack"),
    (2, "verb_sense", "stand", "be upright on your feet"),
    (3, "verb_sense", "sit", "be seated"),
    (4, "verb_sense", "lie", "be lying flat"),
    (5, "noun_sense", "seat", "a place to sit"),
    (6, "noun_sense", "floor", "the lower surface of a room"),
    (7, "noun_sense", "lie", "a statement that is deliberately untrue"),
]
NODES = [{"id": i, "type": t, "name": n, "text": g} for i, t, n, g in WORDS]
EDGES = [{"src": s, "type": "antonym_of", "dst": d} for s, d in ((2, 3), (3, 2), (2, 4), (4, 2), (1, 6), (6, 1))]


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory, onnx_encoder) -> EmbeddedEngine:
    return engine_over(tmp_path_factory.mktemp("antonyms"), onnx_encoder, SCHEMA, NODES, EDGES)


def test_the_answer_is_of_the_type_the_name_is_said_to_be(engine: EmbeddedEngine) -> None:
    question = "antonyms of the verb stand"
    parsed = parse(engine, question)
    assert parsed.target_type == "verb_sense"
    assert edges(parsed) == {("y", "antonym_of", "c1")}
    assert {item.node_id for item in engine.ask(question, strategy="af").items[:2]} == {3, 4}


def test_without_a_type_word_the_answer_is_of_the_type_whose_nodes_have_the_relation(
    engine: EmbeddedEngine,
) -> None:
    question = "antonyms of lie"
    parsed = parse(engine, question)
    assert parsed.target_type == "verb_sense"
    assert {(t.edge, frozenset((t.head, t.tail))) for t in parsed.triplets} == {
        ("antonym_of", frozenset(["y", "c1"]))
    }
    assert engine.ask(question, strategy="af").items[0].node_id == 2
