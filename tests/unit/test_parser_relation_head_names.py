"""A head noun that is a word of an edge's own name says that relation even when a type's description uses the
word in passing: in "which *parts* does a bank have", part_of is asked for, though the domain type is "one part
of speech or a field". A schema of its own; nothing here is in any question set."""

from __future__ import annotations

import pytest

from skbqa.engine.embedded import EmbeddedEngine
from tests.helpers import edge_type, engine_over, node_type, nodes_of
from tests.unit.test_encoder_parser import edges, parse

SCHEMA = {
    "name": "senses",
    "description": "Word senses of English, the wholes they belong to and their topical domains",
    "node_types": [
        node_type("concept", "A concept: one sense of a word naming a thing."),
        node_type("domain", "A topical domain of concepts: one part of speech, or a field of study."),
    ],
    "edge_types": [
        edge_type("part_of", "concept", "concept", "the concept is a component of the target whole"),
        edge_type("in_domain", "concept", "domain", "the concept is used in the target domain"),
    ],
}
NODES = nodes_of(
    [
        (1, "concept", "bank", "a financial institution that takes deposits"),
        (2, "concept", "vault", "a strongroom where money is kept"),
        (3, "concept", "teller", "the counter where a clerk serves customers"),
        (4, "concept", "finance", "the commercial activity of providing funds"),
        (5, "domain", "economics", "the field of study of production and trade"),
        (6, "domain", "noun", "the part of speech naming things"),
    ]
)
EDGES = [
    {"src": s, "type": t, "dst": d}
    for s, t, d in [
        (2, "part_of", 1),
        (3, "part_of", 1),
        (1, "in_domain", 5),
        (1, "in_domain", 6),
        (4, "in_domain", 5),
    ]
]


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory, onnx_encoder) -> EmbeddedEngine:
    return engine_over(tmp_path_factory.mktemp("parts"), onnx_encoder, SCHEMA, NODES, EDGES)


def test_a_word_of_an_edge_name_says_the_relation_over_a_type_description(engine: EmbeddedEngine) -> None:
    question = "which parts does a bank have"
    parsed = parse(engine, question)
    assert parsed.target_type == "concept"
    assert edges(parsed) == {("y", "part_of", "c1")}
    assert {item.node_id for item in engine.ask(question, strategy="af").items[:2]} == {2, 3}


@pytest.mark.parametrize("question", ["Which parts of a bank are there?", "which parts of a bank have two names"])
def test_a_noun_after_an_indefinite_article_before_the_main_verb_is_a_name(
    engine: EmbeddedEngine, question: str
) -> None:
    """ "parts of *a bank* are there": nothing qualifies the noun (no "of", "that" or participle after it), so it
    names a node rather than introducing an unnamed one."""
    assert edges(parse(engine, question)) == {("y", "part_of", "c1")}
