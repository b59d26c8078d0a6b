"""Of two edges a clause names alike, the one whose name adds a word the clause does not say is the narrower
reading, on a schema of its own (a lending library; nothing here is in the development data): "which members
*borrow* X" is `borrows`, not `formerly_borrowed`, unless the clause says "formerly"."""

from __future__ import annotations

import pytest

from skbqa.engine.embedded import EmbeddedEngine
from tests.helpers import engine_over
from tests.unit.test_encoder_parser import edges, parse

SCHEMA = {
    "name": "library",
    "description": "a lending library's members and its books",
    "node_types": [
        {"name": "member", "description": "a person who holds a library card"},
        {"name": "book", "description": "a title the library lends"},
    ],
    "edge_types": [
        {
            "name": "borrows",
            "source": "member",
            "target": "book",
            "description": "the member has the book on loan now",
        },
        {
            "name": "formerly_borrowed",
            "source": "member",
            "target": "book",
            "description": "the member borrowed the book in the past and has returned it",
        },
    ],
}
NODES = [
    {"id": 1, "type": "member", "name": "Ines Duarte", "text": "a retired ferry pilot"},
    {"id": 2, "type": "member", "name": "Tomasz Wrona", "text": "a student of botany"},
    {"id": 3, "type": "member", "name": "Ayo Bankole", "text": "a night-shift nurse"},
    {"id": 10, "type": "book", "name": "The Salt Roads", "text": "a novel about a caravan crossing a desert"},
]
EDGES = [
    {"src": 1, "type": "borrows", "dst": 10},
    {"src": 2, "type": "formerly_borrowed", "dst": 10},
    {"src": 3, "type": "formerly_borrowed", "dst": 10},
]


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory, onnx_encoder) -> EmbeddedEngine:
    return engine_over(tmp_path_factory.mktemp("library"), onnx_encoder, SCHEMA, NODES, EDGES)


@pytest.mark.parametrize(
    ("question", "edge"),
    [
        ("Which members borrow The Salt Roads?", "borrows"),
        ("By which members is The Salt Roads borrowed?", "borrows"),
        ("Which members formerly borrowed The Salt Roads?", "formerly_borrowed"),
    ],
)
def test_an_edge_name_word_the_clause_does_not_say_counts_against_it(
    engine: EmbeddedEngine, question: str, edge: str
) -> None:
    assert edges(parse(engine, question)) == {("y", edge, "c1")}


# An orchestra's instruments: a word an edge's name adds to its types, said before the answer's head noun.
BAND_SCHEMA = {
    "name": "bands",
    "description": "ensembles and the instruments they play",
    "node_types": [
        {"name": "instrument", "description": "a musical instrument"},
        {"name": "ensemble", "description": "a band or orchestra that performs together"},
    ],
    "edge_types": [
        {
            "name": "principal_in",
            "source": "instrument",
            "target": "ensemble",
            "description": "the instrument leads its section in the ensemble",
        },
        {
            "name": "heard_in",
            "source": "instrument",
            "target": "ensemble",
            "description": "the instrument is played in the ensemble",
        },
    ],
}
BAND_NODES = [
    {"id": 1, "type": "instrument", "name": "flugelhorn", "text": "a valved brass horn with a wide bore"},
    {"id": 2, "type": "instrument", "name": "euphonium", "text": "a tenor-voiced brass horn"},
    {"id": 3, "type": "instrument", "name": "snare drum", "text": "a drum with wires across its lower head"},
    {"id": 10, "type": "ensemble", "name": "Harbour Brass Band", "text": "a brass band from a fishing town"},
]
BAND_EDGES = [
    {"src": 1, "type": "principal_in", "dst": 10},
    {"src": 2, "type": "heard_in", "dst": 10},
    {"src": 3, "type": "heard_in", "dst": 10},
]


@pytest.fixture(scope="module")
def bands(tmp_path_factory: pytest.TempPathFactory, onnx_encoder) -> EmbeddedEngine:
    return engine_over(tmp_path_factory.mktemp("bands"), onnx_encoder, BAND_SCHEMA, BAND_NODES, BAND_EDGES)


def test_a_word_of_an_edge_name_before_the_head_noun_says_the_relation(bands: EmbeddedEngine) -> None:
    assert edges(parse(bands, "Which principal instruments does the Harbour Brass Band have?")) == {
        ("y", "principal_in", "c1")
    }
    # the words of the clause, when it has them, say the relation
    assert edges(parse(bands, "Which principal instruments are heard in the Harbour Brass Band?")) == {
        ("y", "heard_in", "c1")
    }
