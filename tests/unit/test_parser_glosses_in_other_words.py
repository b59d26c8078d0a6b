"""A gloss said in other words than the knowledge base's own: "bank (*a place that keeps your money*)" shares one
word with the node it means, too few to tell by words, but means it (embedding cosine), so it is cut from the
question and picks that node; a parenthesis that says a constraint ("(direct parts only)") or means none of the
name's nodes stays in the question; and ", as in …" after a name glosses it like "(as in: …)". A schema of its
own; nothing here is in any question set."""

from __future__ import annotations

import numpy as np
import pytest

from skbqa.engine.embedded import EmbeddedEngine
from skbqa.stages.parse.sense_qualifiers import cut_glosses, cut_qualifiers, document_meaning
from tests.helpers import engine_over

SCHEMA = {
    "name": "senses",
    "description": "word senses and their parts",
    "node_types": [{"name": "sense", "description": "One meaning of an English word.", "name_attr": "name"}],
    "edge_types": [
        {
            "name": "part_of",
            "source": "sense",
            "target": "sense",
            "description": "the sense is a part of the target",
        }
    ],
}
SENSES = [
    (1, "bank", "sloping land beside a body of water"),
    (2, "bank", "a financial institution that accepts deposits and lends money"),
    (3, "riverbed", "the channel of a river"),
    (4, "vault", "a strongroom where a financial institution keeps money"),
    (5, "teller window", "where a customer of a financial institution is served"),
    (6, "car", "a motor vehicle with four wheels"),
    (7, "wheel", "a circular frame turning on an axle"),
]
NODES = [{"id": i, "type": "sense", "name": n, "text": g} for i, n, g in SENSES]
EDGES = [{"src": s, "type": "part_of", "dst": d} for s, d in ((3, 1), (4, 2), (5, 2), (7, 6))]


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory, onnx_encoder) -> EmbeddedEngine:
    return engine_over(tmp_path_factory.mktemp("glosses"), onnx_encoder, SCHEMA, NODES, EDGES)


def _cut(engine: EmbeddedEngine, question: str) -> tuple[str, list[list[str]]]:
    nodes = engine.stores.nodes
    names = np.array([n.lower() for n in nodes.names])
    kept, qualifiers = cut_glosses(
        question,
        [],
        lambda name: np.flatnonzero(names == name.lower()),
        nodes,
        document_meaning(engine.encoder, nodes),
    )
    return kept, [sorted(q.words) for q in qualifiers]


def test_a_gloss_in_other_words_is_cut_and_says_which_node(engine: EmbeddedEngine) -> None:
    question = "what are the parts of a bank (a place that keeps your money)?"
    assert _cut(engine, question) == ("what are the parts of a bank?", [["keeps", "money", "place", "your"]])
    top = [item.node_id for item in engine.ask(question, strategy="af").items[:2]]
    assert sorted(top) == [4, 5]


@pytest.mark.parametrize(
    "question",
    [
        "parts of bank (direct parts only)",  # a constraint word
        "parts of car (sold in 2019)",  # a number
        "parts of car (bought by my neighbour)",  # means nothing the car's node says
        "parts of riverbed (Amazon)",  # one word
    ],
)
def test_a_parenthesis_that_is_no_gloss_stays(engine: EmbeddedEngine, question: str) -> None:
    assert _cut(engine, question) == (question, [])


def test_as_in_after_a_comma_glosses_the_name_before_it() -> None:
    question, qualifiers = cut_qualifiers("Which parts does a bank have, as in lending money?")
    assert question == "Which parts does a bank have?"
    assert [sorted(q.words) for q in qualifiers] == [["lending", "money"]]
    question, qualifiers = cut_qualifiers("Bank, as in a river's edge: which parts does it have?")
    assert question == "Bank: which parts does it have?" and len(qualifiers) == 1
