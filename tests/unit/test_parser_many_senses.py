"""Which readings the data allows is asked of every sense of a name, not only its first few: "antonyms of hot"
where "hot" names seven senses and only the seventh has an antonym (in a dictionary, the common sense need not
come first in the table). A schema of its own; nothing here is in any question set."""

from __future__ import annotations

import pytest

from skbqa.engine.embedded import EmbeddedEngine
from tests.helpers import engine_over
from tests.unit.test_encoder_parser import edges, parse

SCHEMA = {
    "name": "adjectives",
    "description": "adjective senses, similar ones and opposites",
    "node_types": [{"name": "adjective", "description": "An adjective sense.", "name_attr": "name"}],
    "edge_types": [
        {"name": n, "source": "adjective", "target": "adjective", "description": d}
        for n, d in (
            ("antonym_of", "the adjective is an opposite of the target"),
            ("similar_to", "the adjective is similar in meaning to the target"),
        )
    ],
}
HOT = [(i, "hot", f"hot, sense {i}") for i in range(1, 8)]
NODES = [
    {"id": i, "type": "adjective", "name": n, "text": t} for i, n, t in [*HOT, (8, "cold", "low in temperature")]
]
NODES += [{"id": 9, "type": "adjective", "name": "warm", "text": "somewhat hot"}]
LINKS = [(7, "antonym_of", 8), (8, "antonym_of", 7)] + [(i, "similar_to", 9) for i in range(1, 7)]
EDGES = [{"src": s, "type": t, "dst": d} for s, t, d in LINKS]


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory, onnx_encoder) -> EmbeddedEngine:
    return engine_over(tmp_path_factory.mktemp("senses"), onnx_encoder, SCHEMA, NODES, EDGES)


def test_a_sense_far_down_the_list_allows_the_reading_the_words_say(engine: EmbeddedEngine) -> None:
    question = "antonyms of hot"
    assert edges(parse(engine, question)) in ({("y", "antonym_of", "c1")}, {("c1", "antonym_of", "y")})
    assert engine.ask(question, strategy="af").items[0].node_id == 8
