"""A do-question's verb and what it says of its subject: "what does a knife *consist* of" — the base-form verb
after "does" and a subject is the question's verb, not a name (in a dictionary every verb is one), and a verb
whose subject is the whole ("consist", "contain", "comprise") turns a part-of edge: the knife is the whole. A
schema of its own; nothing here is in any question set."""

from __future__ import annotations

import pytest

from skbqa.engine.embedded import EmbeddedEngine
from tests.helpers import engine_over
from tests.unit.test_encoder_parser import constants, edges, parse
from tests.unit.test_parser_glosses_in_other_words import SCHEMA as SENSE_SCHEMA

SCHEMA = SENSE_SCHEMA  # one type of word senses, part_of between them
SENSES = [
    (1, "knife", "a tool with a sharp blade and a handle"),
    (2, "blade", "the cutting edge of a knife"),
    (3, "handle", "the part of a tool that is held"),
    (4, "consist", "be made up of parts"),
    (5, "kitchen", "a room where food is cooked"),
    (6, "bank", "a financial institution"),
    (7, "vault", "a strongroom"),
    (8, "belong to", "be owned by, or be a part of"),
    (9, "genu", "a knee-like bend"),  # a name that looks like the singular of "genus"
]
NODES = [{"id": i, "type": "sense", "name": n, "text": g} for i, n, g in SENSES]
EDGES = [{"src": s, "type": "part_of", "dst": d} for s, d in ((2, 1), (3, 1), (1, 5), (7, 6), (6, 9))]


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory, onnx_encoder) -> EmbeddedEngine:
    return engine_over(tmp_path_factory.mktemp("do"), onnx_encoder, SCHEMA, NODES, EDGES)


def test_the_verb_after_a_do_subject_is_no_name_and_the_whole_is_its_subject(engine: EmbeddedEngine) -> None:
    question = "What does a knife consist of?"
    parsed = parse(engine, question)
    assert constants(parsed) == {"c1": ("sense", ("knife",))}
    assert edges(parsed) == {("y", "part_of", "c1")}
    assert {item.node_id for item in engine.ask(question, strategy="af").items[:2]} == {2, 3}


def test_the_subject_itself_stays_a_name(engine: EmbeddedEngine) -> None:
    # "bank" is a verb's base form too, but it is the subject: only an article stands between it and "does"
    parsed = parse(engine, "which parts does a bank have?")
    assert constants(parsed) == {"c1": ("sense", ("bank",))}
    assert edges(parsed) == {("y", "part_of", "c1")}


def test_a_verb_and_its_particle_after_a_do_subject_are_no_name(engine: EmbeddedEngine) -> None:
    # "belong to" names a node (in a dictionary every phrasal verb does): here it is the question's verb
    parsed = parse(engine, "What does the blade belong to?")
    assert constants(parsed) == {"c1": ("sense", ("blade",))}


def test_a_singular_english_knows_is_no_plural_of_a_name(engine: EmbeddedEngine) -> None:
    parsed = parse(engine, "Which genus does the blade belong to?")
    assert not any("genu" in (c.names or []) for c in parsed.symbols.values())
