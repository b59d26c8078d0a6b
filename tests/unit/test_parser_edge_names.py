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
