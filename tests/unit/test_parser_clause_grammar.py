"""What a clause's grammar says about its relation, on a schema of its own (songs; nothing here is in the
development data): stems that join a word's forms, a stem shared by every edge weighing little, a copula that
makes the answer the narrower node, a noun that labels a name, and cues for the answer's own text by their
grammar."""

from __future__ import annotations

import pytest

from skbqa.engine.embedded import EmbeddedEngine
from skbqa.skb.schema import EdgeType
from skbqa.stages.parse.relations import stem_weights, stems
from tests.helpers import engine_over
from tests.unit.test_encoder_parser import constants, edges, parse

SCHEMA = {
    "name": "songbook",
    "description": "songs, who sings them and their styles",
    "node_types": [
        {"name": "song", "description": "a recorded song"},
        {"name": "singer", "description": "a person who performs songs"},
        {"name": "genre", "description": "a musical style"},
    ],
    "edge_types": [
        {"name": "sung_by", "source": "song", "target": "singer", "description": "the song is sung by the singer"},
        {"name": "in_genre", "source": "song", "target": "genre", "description": "the song belongs to the genre"},
        {"name": "subgenre_of", "source": "genre", "target": "genre", "description": "a more specific kind of"},
        {"name": "covers", "source": "song", "target": "song", "description": "a new recording of an older song"},
    ],
}
NODES = [
    {"id": 1, "type": "genre", "name": "folk", "text": "traditional music"},
    {"id": 2, "type": "genre", "name": "fado", "text": "Portuguese folk music of longing"},
    {"id": 3, "type": "genre", "name": "sea shanty", "text": "work songs of sailors"},
    {"id": 4, "type": "genre", "name": "punk", "text": "fast loud rock"},
    {"id": 5, "type": "genre", "name": "celtic folk", "text": "folk music of Ireland and Scotland"},
    {"id": 6, "type": "genre", "name": "things", "text": "a genre named after a band"},
    {"id": 10, "type": "singer", "name": "Ana Lima", "text": "a singer from Lisbon"},
    {"id": 11, "type": "singer", "name": "Tom Reed", "text": "a singer from Bristol"},
    {"id": 20, "type": "song", "name": "Harbour Lights", "text": "a ballad about a harbour at night"},
    {"id": 21, "type": "song", "name": "Saudade", "text": "a lament for a lost love"},
    {"id": 22, "type": "song", "name": "Homeward", "text": "a song about home"},
    {"id": 23, "type": "song", "name": "Haul Away", "text": "a rowing song"},
    {"id": 24, "type": "song", "name": "Skye Boat", "text": "a song of an island crossing"},
]
EDGES = [
    {"src": 2, "type": "subgenre_of", "dst": 1},
    {"src": 3, "type": "subgenre_of", "dst": 5},
    {"src": 5, "type": "subgenre_of", "dst": 1},
    {"src": 20, "type": "sung_by", "dst": 10},
    {"src": 21, "type": "sung_by", "dst": 10},
    {"src": 22, "type": "sung_by", "dst": 11},
    {"src": 23, "type": "sung_by", "dst": 11},
    {"src": 20, "type": "in_genre", "dst": 3},
    {"src": 21, "type": "in_genre", "dst": 2},
    {"src": 22, "type": "in_genre", "dst": 4},
    {"src": 23, "type": "in_genre", "dst": 3},
    {"src": 24, "type": "in_genre", "dst": 5},
]


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory, onnx_encoder) -> EmbeddedEngine:
    return engine_over(tmp_path_factory.mktemp("songbook"), onnx_encoder, SCHEMA, NODES, EDGES)


def test_stems_join_a_words_forms() -> None:
    assert stems("means") == stems("meaning")
    assert stems("causes") == stems("causing")
    assert stems("classified") == stems("classification")
    assert stems("general") != stems("genes")


def test_a_stem_every_edge_shares_weighs_less_than_one_edge_alone() -> None:
    def edge(name: str, description: str) -> EdgeType:
        return EdgeType(name=name, source="a", target="b", description=description)

    weights = stem_weights(
        [
            edge("opposite_of", "the concept is the opposite of the target concept"),
            edge("similar_to", "the concept is similar in meaning to the target concept"),
            edge("part_of", "the concept is a part of the target concept"),
        ]
    )
    (concept,) = stems("concept")
    (opposite,) = stems("opposite")
    assert weights[opposite] == pytest.approx(1.0)
    assert weights[concept] < 0.25


def test_the_answer_that_is_a_kind_of_a_named_node_is_one_edge_from_it(engine: EmbeddedEngine) -> None:
    question = "what things are a kind of folk?"
    parsed = parse(engine, question)
    assert constants(parsed) == {"c1": ("genre", ("folk",))}
    assert edges(parsed) == {("y", "subgenre_of", "c1")}  # not a kind of some kind of folk
    assert {item.node_id for item in engine.ask(question, strategy="af").items[:2]} == {2, 5}


def test_a_node_introduced_by_a_relative_clause_keeps_the_hierarchy_hop(engine: EmbeddedEngine) -> None:
    parsed = parse(engine, "songs in a style that is a kind of folk")
    assert parsed.target_type == "song"
    assert any(t.tail == "c1" and t.edge == "subgenre_of" for t in parsed.triplets)


def test_a_noun_that_labels_a_name_is_no_node_before_it(engine: EmbeddedEngine) -> None:
    question = "songs in the subgenre celtic folk"  # celtic folk is the subgenre, not something below it
    parsed = parse(engine, question)
    assert constants(parsed) == {"c1": ("genre", ("celtic folk",))}
    assert edges(parsed) == {("y", "in_genre", "c1")}
    assert engine.ask(question, strategy="af").items[0].node_id == 24


@pytest.mark.parametrize(
    "question",
    [
        "songs by Ana Lima defined using the term harbour",
        "songs by Ana Lima whose text says harbour",
        "songs by Ana Lima glossed with harbour",
    ],
)
def test_a_cue_for_the_answers_text_by_its_grammar(engine: EmbeddedEngine, question: str) -> None:
    parsed = parse(engine, question)
    assert [t.lower() for t in parsed.text_constraints] == ["harbour"]  # the keyword, not the cue's words
    assert constants(parsed) == {"c1": ("singer", ("Ana Lima",))}
    assert engine.ask(question, strategy="af").items[0].node_id == 20


def test_a_quoted_keyword_ends_its_cue_at_the_clause(engine: EmbeddedEngine) -> None:
    question = "songs whose text contains the word 'harbour': which are sung by Ana Lima?"
    parsed = parse(engine, question)
    assert constants(parsed) == {"c1": ("singer", ("Ana Lima",))}  # the rest is no keyword of the text
    assert [t.lower() for t in parsed.text_constraints] == ["harbour"]


def test_a_name_of_several_words_said_in_the_plural(engine: EmbeddedEngine) -> None:
    question = "which songs are sea shanties?"
    parsed = parse(engine, question)
    assert constants(parsed) == {"c1": ("genre", ("sea shanties",))}
    # step 4 finds the same node for the name: both rowing and harbour songs, nothing else first
    assert {item.node_id for item in engine.ask(question, strategy="af").items[:2]} == {20, 23}


def test_a_placeholder_word_is_no_name(engine: EmbeddedEngine) -> None:
    parsed = parse(engine, "songs in things that are a kind of folk")
    assert all("things" not in names for _, names in constants(parsed).values())
