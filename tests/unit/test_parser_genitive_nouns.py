"""A common noun's noun is read as an of-phrase ("a bank's parts" as "the parts of a bank"), so the relation is
read from the noun; a name that holds "'s" and an owner with a capital are left as they are."""

from __future__ import annotations

import pytest

from skbqa.engine.embedded import EmbeddedEngine
from skbqa.stages.parse.genitive_nouns import of_phrase_for_genitive
from tests.unit.test_encoder_parser import edges, parse
from tests.unit.test_parser_relation_head_names import engine  # noqa: F401 - the parts-of-a-bank fixture

NAMES = {"devil's advocate", "parkinson's disease"}


def is_name(phrase: str) -> bool:
    return phrase.lower() in NAMES


@pytest.mark.parametrize(
    ("question", "read"),
    [
        ("What are a computer's parts?", "What are the parts of a computer?"),
        ("List an airplane's parts.", "List the parts of an airplane."),
        ("the domestic dog's parts", "the parts of the domestic dog"),
        ("What are the parts of the shoe's parts?", "What are the parts of the parts of the shoe?"),
        ("Which of the patient's genes (as in x) matter?", "Which of the genes of the patient (as in x) matter?"),
    ],
)
def test_a_common_nouns_noun_reads_as_an_of_phrase(question: str, read: str) -> None:
    assert of_phrase_for_genitive(question, is_name) == read


@pytest.mark.parametrize(
    "question",
    [
        "Who plays the devil's advocate?",  # a name with "'s"
        "Which genes relate to Parkinson's disease?",  # an owner with a capital, and a name
        "What is France's capital?",  # an owner with a capital: a name, read by `possessives`
        "What did the dog's owner say about it?",  # the noun does not end the phrase
    ],
)
def test_names_and_capitalised_owners_stay(question: str) -> None:
    assert of_phrase_for_genitive(question, is_name) is None


def test_the_relation_is_read_from_the_owned_noun(engine: EmbeddedEngine) -> None:  # noqa: F811
    question = "List a bank's parts."
    parsed = parse(engine, question)
    assert edges(parsed) == {("y", "part_of", "c1")}
    assert {item.node_id for item in engine.ask(question, strategy="af").items[:2]} == {2, 3}
