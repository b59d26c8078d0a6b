"""A gerund as the object of a verb or a preposition names its plain verb's node ("which verbs entail *sleeping*"),
also when the gerund is a name of its own ("*swimming*", an adjective): the relation read from the clause picks.
A verb the schema states a relation with, right after a word for a type, is no name ("verbs *entail* …"). A
schema of its own; nothing here is in any question set."""

from __future__ import annotations

import pytest

from skbqa.engine.embedded import EmbeddedEngine
from tests.helpers import edge_type, engine_over, node_type, nodes_of
from tests.unit.test_encoder_parser import edges, parse

SCHEMA = {
    "name": "verbs",
    "description": "English verbs and adjectives and how verbs relate",
    "node_types": [
        node_type("verb", "A verb sense: a word naming an action."),
        node_type("adjective", "An adjective sense: a word describing a thing."),
    ],
    "edge_types": [
        edge_type("entails", "verb", "verb", "doing the verb entails doing the target verb"),
        edge_type("kind_of", "verb", "verb", "the verb is a particular way of doing the target verb"),
    ],
}
NODES = nodes_of(
    [
        (1, "verb", "snore", "breathe noisily during sleep"),
        (2, "verb", "sleep", "be asleep"),
        (3, "verb", "swim", "travel through water"),
        (4, "verb", "crawl", "swim with the crawl stroke"),
        (5, "adjective", "swimming", "filled with tears"),
        (6, "verb", "entail", "impose, involve or imply as a necessary accompaniment"),
    ]
)
EDGES = [{"src": 1, "type": "entails", "dst": 2}, {"src": 4, "type": "kind_of", "dst": 3}]


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory, onnx_encoder) -> EmbeddedEngine:
    return engine_over(tmp_path_factory.mktemp("verbs"), onnx_encoder, SCHEMA, NODES, EDGES)


def test_a_gerund_after_a_verb_names_the_plain_verb(engine: EmbeddedEngine) -> None:
    question = "Which verbs entail sleeping?"
    parsed = parse(engine, question)
    assert edges(parsed) == {("y", "entails", "c1")}
    assert engine.ask(question, strategy="af").items[0].node_id == 1


def test_a_gerund_that_is_a_name_also_names_the_plain_verb(engine: EmbeddedEngine) -> None:
    question = "Which verbs are kinds of swimming?"
    parsed = parse(engine, question)
    assert edges(parsed) == {("y", "kind_of", "c1")}
    assert engine.ask(question, strategy="af").items[0].node_id == 4


def test_a_gerund_as_a_do_questions_subject_names_the_plain_verb(engine: EmbeddedEngine) -> None:
    question = "What does snoring entail?"
    parsed = parse(engine, question)
    assert edges(parsed) == {("c1", "entails", "y")}
    assert engine.ask(question, strategy="af").items[0].node_id == 2
