"""Types named by a word and a suffix every one of them shares ("adjective_entry", "adverb_entry"), on a small
lexicon of its own (nothing here is in the development data): the first word names the type ("*adjectives*
similar to X" is a node on the way); a type word that types the name after a preposition ("related to the
*adjective* X") is not the answer; and "adverbs *that are adverbs* derived from X" says the answer's type again
rather than naming a node on the way."""

from __future__ import annotations

import pytest

from skbqa.engine.embedded import EmbeddedEngine
from skbqa.skb.schema import Schema
from skbqa.stages.parse.question_text import QuestionText
from skbqa.stages.parse.type_mentions import TypeMention, choose_target, head_word_forms
from tests.helpers import engine_over
from tests.unit.test_encoder_parser import edges, parse

_ENTRY = "an entry of the lexicon: one sense shared by synonymous words"
SCHEMA = {
    "name": "lexicon",
    "description": "word senses and how they relate",
    "node_types": [
        {"name": "noun_entry", "description": f"a noun sense, {_ENTRY}"},
        {"name": "adjective_entry", "description": f"an adjective sense, {_ENTRY}"},
        {"name": "adverb_entry", "description": f"an adverb sense, {_ENTRY}"},
    ],
    "edge_types": [
        {
            "name": "similar_to",
            "source": "adjective_entry",
            "target": "adjective_entry",
            "description": "the adjective is similar in meaning to the target adjective",
        },
        {
            "name": "derived_from",
            "source": "adverb_entry",
            "target": "adjective_entry",
            "description": "the adverb is derived from the target adjective",
        },
        {
            "name": "opposite_of",
            "source": "adverb_entry",
            "target": "adverb_entry",
            "description": "the adverb is the opposite of the target adverb",
        },
        {
            "name": "related_to",
            "source": "noun_entry",
            "target": "adjective_entry",
            "description": "the noun is related to the target adjective by its word root",
        },
    ],
}
_NAMES = [
    ("adjective_entry", "swift"),
    ("adjective_entry", "rapid"),
    ("adjective_entry", "slow"),
    ("adverb_entry", "swiftly"),
    ("adverb_entry", "rapidly"),
    ("adverb_entry", "slowly"),
    ("noun_entry", "swiftness"),
    ("noun_entry", "slowness"),
]
NODES = [{"id": i, "type": t, "name": n, "text": f"{n}: a word sense"} for i, (t, n) in enumerate(_NAMES)]
EDGES = [
    {"src": 0, "type": "similar_to", "dst": 1},
    {"src": 3, "type": "derived_from", "dst": 0},
    {"src": 4, "type": "derived_from", "dst": 1},
    {"src": 5, "type": "derived_from", "dst": 2},
    {"src": 5, "type": "opposite_of", "dst": 4},
    {"src": 6, "type": "related_to", "dst": 0},
    {"src": 7, "type": "related_to", "dst": 2},
]


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory, onnx_encoder) -> EmbeddedEngine:
    return engine_over(tmp_path_factory.mktemp("lexicon"), onnx_encoder, SCHEMA, NODES, EDGES)


def test_the_first_word_names_a_type_whose_suffix_every_type_shares() -> None:
    forms = dict(head_word_forms(Schema.from_dict(SCHEMA)))
    assert forms[("adjectives",)] == "adjective_entry" and forms[("adverb",)] == "adverb_entry"
    # a suffix that is also a type's whole name ("package", "source_package") says the whole name's type
    shared = {
        "name": "debs",
        "node_types": [{"name": "package"}, {"name": "source_package"}, {"name": "binary_package"}],
        "edge_types": [],
    }
    assert head_word_forms(Schema.from_dict(shared)) == []


def test_a_plural_type_word_before_a_relative_clause_is_a_node_on_the_way(engine: EmbeddedEngine) -> None:
    question = "adverbs derived from adjectives similar to rapid"
    assert edges(parse(engine, question)) == {("m1", "similar_to", "c1"), ("y", "derived_from", "m1")}
    assert engine.ask(question, strategy="af").items[0].name == "swiftly"


def test_a_type_word_that_types_the_name_after_a_preposition_is_not_the_answer() -> None:
    typing = QuestionText.of("things related to the adjective swift")
    assert choose_target(typing, [TypeMention("adjective_entry", 4, 5)], [(5, 6)]) is None
    heading = QuestionText.of("adjectives similar to swift")
    assert choose_target(heading, [TypeMention("adjective_entry", 0, 1)], [(3, 4)]) == TypeMention(
        "adjective_entry", 0, 1
    )


def test_the_answers_type_said_again_after_that_are_is_no_node_on_the_way(engine: EmbeddedEngine) -> None:
    assert edges(parse(engine, "adverbs that are adverbs derived from slow")) == {("y", "derived_from", "c1")}
