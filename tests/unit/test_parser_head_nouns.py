"""The answer's noun when it is not a type name, on a music schema of its own (nothing here is in the development
data): jargon the dictionary does not know ("mixtapes"), a noun after "what are the …", and a word the schema's own
description gives a type, which outranks a stem the noun shares with another type's name. And names that are
English adverbs ("only", "less"), read as names only where a type word says so."""

from __future__ import annotations

import pytest

from skbqa.engine.embedded import EmbeddedEngine
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
        {"name": "taped_in", "source": "track", "target": "recording_session", "description": "when it was taped"},
    ],
}
NODES = [
    {"id": 1, "type": "album", "name": "Blue Hours", "text": "a mixtape of slow songs"},
    {"id": 2, "type": "album", "name": "Copper Sky", "text": "a studio record"},
    {"id": 3, "type": "track", "name": "Night Train", "text": "a song about travel"},
    {"id": 4, "type": "track", "name": "Paper Moon", "text": "a tune for piano"},
    {"id": 5, "type": "track", "name": "Low Tide", "text": "an instrumental song"},
    {"id": 6, "type": "artist", "name": "Mara Quist", "text": "a singer from Oslo"},
    {"id": 7, "type": "artist", "name": "The Ferns", "text": "a band of four"},
    {"id": 8, "type": "label", "name": "Northway", "text": "an independent company"},
    {"id": 9, "type": "recording_session", "name": "May 2019 session", "text": "two days in Bergen"},
    {"id": 10, "type": "track", "name": "only", "text": "a b-side"},
    {"id": 11, "type": "album", "name": "less", "text": "an EP of outtakes"},
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
