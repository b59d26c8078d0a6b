"""The answer's noun when it is not a type name, on a music schema of its own (nothing here is in the development
data): jargon the dictionary does not know ("mixtapes"), a noun after "what are the …", and a word the schema's own
description gives a type, which outranks a stem the noun shares with another type's name. And names that are
English adverbs ("only", "less"), read as names only where a type word says so. And chains: a type word in a
relative clause of the head noun, a relative clause that ends in its verb, and a description's word introduced by
an article as the unnamed node between the answer and a name."""

from __future__ import annotations

import pytest

from skbqa.engine.embedded import EmbeddedEngine
from skbqa.stages.parse.attribute_mentions import count_labels
from skbqa.stages.parse.type_mentions import unknown_word_lemma
from tests.helpers import engine_over
from tests.unit.test_encoder_parser import constants, parse

SCHEMA = {
    "name": "music",
    "description": "recordings and the people who make them",
    "node_types": [
        {"name": "album", "description": "a released collection of tracks (also called a record or mixtape)"},
        {"name": "track", "description": "a single recording (also called a song or tune)"},
        {
            "name": "artist",
            "description": "a performer (also called a singer, band or recorder) credited on tracks",
        },
        {"name": "label", "description": "a company that publishes albums"},
        {"name": "recording_session", "description": "a day in a studio when tracks were taped"},
    ],
    "edge_types": [
        {
            "name": "on_album",
            "source": "track",
            "target": "album",
            "description": "the track appears on the album",
        },
        {"name": "performed_by", "source": "track", "target": "artist", "description": "who performs the track"},
        {"name": "released_by", "source": "album", "target": "label", "description": "who released the album"},
        {"name": "produced_by", "source": "album", "target": "artist", "description": "who produced the album"},
        {"name": "taped_in", "source": "track", "target": "recording_session", "description": "when it was taped"},
    ],
}
NODES = [
    {
        "id": 1,
        "type": "album",
        "name": "Blue Hours",
        "text": "a mixtape of slow songs",
        "attrs": {"song_count": 2},
    },
    {"id": 2, "type": "album", "name": "Copper Sky", "text": "a studio record", "attrs": {"song_count": 1}},
    {"id": 3, "type": "track", "name": "Night Train", "text": "a song about travel"},
    {"id": 4, "type": "track", "name": "Paper Moon", "text": "a tune for piano"},
    {"id": 5, "type": "track", "name": "Low Tide", "text": "an instrumental song"},
    {"id": 6, "type": "artist", "name": "Mara Quist", "text": "a singer from Oslo"},
    {"id": 7, "type": "artist", "name": "The Ferns", "text": "a band of four"},
    {"id": 8, "type": "label", "name": "Northway", "text": "an independent company"},
    {"id": 9, "type": "recording_session", "name": "May 2019 session", "text": "two days in Bergen"},
    {"id": 10, "type": "track", "name": "only", "text": "a b-side"},
    {"id": 11, "type": "album", "name": "less", "text": "an EP of outtakes", "attrs": {"song_count": 1}},
    {"id": 12, "type": "track", "name": "Identify", "text": "an instrumental"},
]
EDGES = [
    {"src": 3, "type": "on_album", "dst": 1},
    {"src": 4, "type": "on_album", "dst": 1},
    {"src": 5, "type": "on_album", "dst": 2},
    {"src": 3, "type": "performed_by", "dst": 6},
    {"src": 4, "type": "performed_by", "dst": 7},
    {"src": 5, "type": "performed_by", "dst": 6},
    {"src": 1, "type": "released_by", "dst": 8},
    {"src": 2, "type": "released_by", "dst": 8},
    {"src": 4, "type": "taped_in", "dst": 9},
    {"src": 10, "type": "on_album", "dst": 11},
    {"src": 10, "type": "performed_by", "dst": 7},
    {"src": 1, "type": "produced_by", "dst": 7},
]


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory, onnx_encoder) -> EmbeddedEngine:
    return engine_over(tmp_path_factory.mktemp("music"), onnx_encoder, SCHEMA, NODES, EDGES)


@pytest.mark.parametrize(
    ("word", "lemma"),
    [
        ("mixtapes", "mixtape"),
        ("repos", "repo"),
        ("remixes", "remix"),
        ("setlists", "setlist"),
        ("bandmates", "bandmate"),
    ],
)
def test_a_plural_the_dictionary_does_not_know_is_read_as_a_noun(word: str, lemma: str) -> None:
    assert unknown_word_lemma(word) == lemma


@pytest.mark.parametrize("word", ["songs", "performed", "BRCA1", "tp53", "gene-x", "among", "mixtape"])
def test_known_words_and_identifiers_are_left_to_the_dictionary(word: str) -> None:
    assert unknown_word_lemma(word) is None


def test_jargon_the_description_uses_names_the_answer(engine: EmbeddedEngine) -> None:
    question = "which mixtapes did Northway release?"
    parsed = parse(engine, question)
    assert parsed.target_type == "album"
    assert "target type 'album' read from 'mixtapes'" in parsed.warnings  # not only through the verb's edge
    assert {item.node_id for item in engine.ask(question, strategy="af").items[:2]} == {1, 2}


def test_the_noun_after_what_are_the_heads_the_question(engine: EmbeddedEngine) -> None:
    question = "What are the tunes that are performed by Mara Quist?"
    parsed = parse(engine, question)
    assert parsed.target_type == "track"
    assert "target type 'track' read from 'tunes'" in parsed.warnings
    assert constants(parsed) == {"c1": ("artist", ("Mara Quist",))}
    assert {item.node_id for item in engine.ask(question, strategy="af").items[:2]} == {3, 5}


def test_the_descriptions_word_outranks_a_stem_shared_with_a_type_name(engine: EmbeddedEngine) -> None:
    # "recorders" shares its first letters with "recording" (another type's name), but the artist's description
    # names it
    parsed = parse(engine, "Which recorders perform Paper Moon?")
    assert parsed.target_type == "artist"


def test_an_adverb_that_names_a_node_is_english_in_passing(engine: EmbeddedEngine) -> None:
    question = "tracks by The Ferns, only those taped in May 2019 session"
    parsed = parse(engine, question)
    assert ("only",) not in [names for _, names in constants(parsed).values()]
    assert [item.node_id for item in engine.ask(question, strategy="af").items[:1]] == [4]
    parsed = parse(engine, "tracks performed by The Ferns that last less than 3 minutes")
    assert ("less",) not in [names for _, names in constants(parsed).values()]


def test_an_adverb_next_to_its_type_word_is_a_name(engine: EmbeddedEngine) -> None:
    question = "Which tracks are on the less album?"
    assert ("album", ("less",)) in constants(parse(engine, question)).values()
    assert engine.ask(question, strategy="af").items[0].node_id == 10


def test_a_type_word_in_the_head_nouns_relative_clause_is_on_the_way(engine: EmbeddedEngine) -> None:
    # "any track" would head a question that began with it; here it is the subject of the clause about mixtapes
    question = "find mixtapes that any track performed by Mara Quist appears on"
    parsed = parse(engine, question)
    assert parsed.target_type == "album"
    assert {(t.head, t.edge, t.tail) for t in parsed.triplets} == {
        ("m1", "performed_by", "c1"),
        ("m1", "on_album", "y"),
    }


def test_an_article_makes_a_descriptions_word_the_unnamed_node(engine: EmbeddedEngine) -> None:
    # "a tune" is a track (the schema calls tracks tunes): through it, not the album's own edge to its producer
    question = "Which singers perform a tune included on Blue Hours?"
    parsed = parse(engine, question)
    assert {(t.head, t.edge, t.tail) for t in parsed.triplets} == {
        ("m1", "on_album", "c1"),
        ("m1", "performed_by", "y"),
    }
    assert {item.node_id for item in engine.ask(question, strategy="af").items[:2]} == {6, 7}


def test_the_request_word_that_opens_a_question_is_not_a_name(engine: EmbeddedEngine) -> None:
    parsed = parse(engine, "Identify tracks on Blue Hours")
    assert ("Identify",) not in [names for _, names in constants(parsed).values()]


@pytest.mark.parametrize(
    ("label", "forms"),
    [
        (("binary", "count"), [("binaries",), ("number", "of", "binaries"), ("binary",)]),
        (("num", "providers"), [("providers",), ("number", "of", "providers")]),
        (("number", "of", "pages"), [("pages",), ("number", "of", "pages")]),
        (("installed", "size"), []),
    ],
)
def test_a_count_attribute_is_named_by_what_it_counts(
    label: tuple[str, ...], forms: list[tuple[str, ...]]
) -> None:
    assert count_labels(label) == forms


def test_a_comparison_with_what_a_count_counts_constrains_the_count(engine: EmbeddedEngine) -> None:
    question = "albums released by Northway with more than 1 songs"
    parsed = parse(engine, question)
    assert [(c.attribute, c.op, c.value) for c in parsed.constraints] == [("song_count", ">", 1)]
    assert engine.ask(question, strategy="af").items[0].node_id == 1


def test_how_people_ask_is_not_text_the_answer_must_contain(engine: EmbeddedEngine) -> None:
    parsed = parse(engine, "Help me figure out which tracks by Mara Quist talk about travel? List them please.")
    assert parsed.text_constraints == ["travel"]
    assert engine.ask("Help me figure out which tracks talk about travel", strategy="af").items[0].node_id == 3
