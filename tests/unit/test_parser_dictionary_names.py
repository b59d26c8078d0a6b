"""A dictionary's SKB, where every English word is some node's name (a schema of its own, nothing here is in any
question set): the words of how one asks ("I'd like to *know*", "which *words*") and of the relation ("*hypernyms*
of", "*derivationally related* to", "as a *part*") are no constants; a name after "a" that ends its clause is
one; an adverb after a preposition is a name; and a sense qualifier after a name ("bank (*as in: a financial
institution*)", "bank, *meaning '…'*", "bank *in the finance sense*") picks which of its nodes the question means."""

from __future__ import annotations

import numpy as np
import pytest

from skbqa.engine.embedded import EmbeddedEngine
from skbqa.stages.parse.sense_qualifiers import cut_qualifiers
from tests.helpers import engine_over
from tests.unit.test_encoder_parser import edges, parse

CALLED = "(a sense, also called a word, term or concept)"
SCHEMA = {
    "name": "lexicon",
    "description": "word senses of English and how they relate",
    "node_types": [
        {"name": "noun_sense", "description": f"A noun sense {CALLED}: one meaning of a noun."},
        {"name": "verb_sense", "description": f"A verb sense {CALLED}: one meaning of a verb."},
        {"name": "adverb_sense", "description": f"An adverb sense {CALLED}: one meaning of an adverb."},
    ],
    "edge_types": [
        {"name": "kind_of", "source": "noun_sense", "target": "noun_sense",
         "description": "Hypernymy: the sense is a kind of the target sense, a more specific meaning of it"},
        {"name": "part_of", "source": "noun_sense", "target": "noun_sense",
         "description": "Meronymy: the sense is a part of the target sense, it belongs to it (the target is made of its parts)"},
        {"name": "derivationally_related", "source": "noun_sense", "target": "verb_sense",
         "description": "Derivation: the sense shares a word root with the target sense"},
        {"name": "antonym_of", "source": "adverb_sense", "target": "adverb_sense",
         "description": "Antonymy: the sense is an opposite of the target sense"},
    ],
}  # fmt: skip
SENSES = [
    (1, "noun_sense", "bank", "sloping land beside a body of water"),
    (2, "noun_sense", "bank", "a financial institution that accepts deposits and lends money"),
    (3, "noun_sense", "riverbed", "the channel of a river"),
    (4, "noun_sense", "vault", "a strongroom where a financial institution keeps money"),
    (5, "noun_sense", "teller window", "where a customer of a financial institution is served"),
    (6, "noun_sense", "car", "a motor vehicle with four wheels"),
    (7, "noun_sense", "wheel", "a simple machine: a circular frame turning on an axle"),
    (8, "noun_sense", "vehicle", "a conveyance that transports people or objects"),
    (9, "noun_sense", "hypernym", "a word that is more generic than a given word"),
    (10, "noun_sense", "word", "a unit of language"),
    (11, "noun_sense", "part", "something determined in relation to something that includes it"),
    (12, "verb_sense", "know", "be cognizant or aware of a fact"),
    (13, "verb_sense", "drive", "operate or control a vehicle"),
    (14, "noun_sense", "driver", "the operator of a motor vehicle"),
    (15, "noun_sense", "drive", "the act of driving a car"),
    (16, "adverb_sense", "meagerly", "in a meager manner"),
    (17, "adverb_sense", "generously", "in a generous manner"),
    (18, "verb_sense", "share", "have in common"),
    (19, "noun_sense", "root", "the part of a plant below the ground"),
    (20, "verb_sense", "belong to", "be a part or member of something"),
    (21, "verb_sense", "make up", "form or compose"),
]
NODES = [{"id": i, "type": t, "name": n, "text": g} for i, t, n, g in SENSES]
EDGES = [
    {"src": 3, "type": "part_of", "dst": 1},
    {"src": 4, "type": "part_of", "dst": 2},
    {"src": 5, "type": "part_of", "dst": 2},
    {"src": 7, "type": "part_of", "dst": 6},
    {"src": 6, "type": "kind_of", "dst": 8},
    {"src": 14, "type": "derivationally_related", "dst": 13},
    {"src": 15, "type": "derivationally_related", "dst": 13},
    {"src": 16, "type": "antonym_of", "dst": 17},
    {"src": 17, "type": "antonym_of", "dst": 16},
]


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory, onnx_encoder) -> EmbeddedEngine:
    return engine_over(tmp_path_factory.mktemp("lexicon"), onnx_encoder, SCHEMA, NODES, EDGES)


def names(parsed) -> list[tuple[str, ...]]:  # type: ignore[no-untyped-def]
    return [s.names for s in parsed.constants]


def ids(engine: EmbeddedEngine, question: str, k: int) -> set[int]:
    return {item.node_id for item in engine.ask(question, strategy="af").items[:k]}


def test_words_of_asking_and_for_senses_are_no_constants(engine: EmbeddedEngine) -> None:
    parsed = parse(engine, "I'd like to know which words are parts of a car")
    assert names(parsed) == [("car",)]  # not "know", not "words"; "a car" ends its clause: a name
    assert edges(parsed) == {("y", "part_of", "c1")}
    assert ids(engine, "I'd like to know which words are parts of a car", 1) == {7}


@pytest.mark.parametrize("question", ["which parts does a car have?", "What parts did a car have"])
def test_the_subject_of_a_do_question_is_a_name(engine: EmbeddedEngine, question: str) -> None:
    # "a car" introduces no unnamed node here: after "does", it is what the question asks about
    parsed = parse(engine, question)
    assert names(parsed) == [("car",)]
    assert edges(parsed) == {("y", "part_of", "c1")}
    assert ids(engine, question, 1) == {7}


@pytest.mark.parametrize(
    ("question", "edge"),
    [
        ("which terms are hypernyms of car", ("c1", "kind_of", "y")),
        ("which terms include wheel as a part", ("c1", "part_of", "y")),
        ("which terms are derivationally related to drive", ("y", "derivationally_related", "c1")),
        ("which noun senses share a word root with drive", ("y", "derivationally_related", "c1")),
    ],
)
def test_words_of_a_relation_are_no_constants(engine: EmbeddedEngine, question: str, edge: tuple) -> None:  # type: ignore[type-arg]
    parsed = parse(engine, question)
    assert len(names(parsed)) == 1
    assert edges(parsed) == {edge}


def test_a_verb_after_and_is_a_second_relation_of_the_answer(engine: EmbeddedEngine) -> None:
    # "belong" is a verb sense's name, and English knows it only as a verb: after "and", before "to", it is the
    # answer's second relation ("*and belong to* car"), where "and swelling of" could have been a second name
    parsed = parse(engine, "which terms are kinds of vehicle and belong to car")
    assert names(parsed) == [("vehicle",), ("car",)]


def test_a_phrasal_verb_of_a_relation_is_no_name(engine: EmbeddedEngine) -> None:
    # "make up" names a verb sense; its verb is the schema's ("made of its parts", in its plain form)
    assert names(parse(engine, "which terms make up a car")) == [("car",)]


def test_an_adverb_after_a_preposition_is_a_name(engine: EmbeddedEngine) -> None:
    parsed = parse(engine, "which adverb senses are antonyms of meagerly")
    assert names(parsed) == [("meagerly",)]
    assert ids(engine, "which adverb senses are antonyms of meagerly", 1) == {17}


def test_sense_qualifiers_are_cut_from_the_question() -> None:
    cut, found = cut_qualifiers("parts of bank (as in: a financial institution...) and of car")
    assert cut == "parts of bank and of car" and found[0].words == {"financial", "institution"}
    assert cut_qualifiers("parts of bank, meaning 'sloping land'")[0] == "parts of bank"
    assert cut_qualifiers("parts of bank in the finance sense")[1][0].words == {"finance"}
    assert cut_qualifiers("kinds of drive as a noun")[1][0].words == {"noun"}
    assert cut_qualifiers("what is a bank") == ("what is a bank", [])


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("which terms are parts of bank (as in: a financial institution)", {4, 5}),
        ("which terms are parts of bank, meaning 'sloping land beside a body of water'", {3}),
        ("which terms are parts of bank", {3, 4, 5}),  # no qualifier: every sense
        # plain words in parentheses that one sense's gloss shares: a qualifier too
        ("which terms are parts of bank (an institution that lends money)", {4, 5}),
        ("which terms are parts of bank (land by a river)", {3}),
    ],
)
def test_a_sense_qualifier_picks_the_nodes_a_name_means(
    engine: EmbeddedEngine, question: str, expected: set[int]
) -> None:
    got = {item.node_id for item in engine.ask(question, strategy="af").items[: len(expected)]}
    assert got == expected
    assert names(parse(engine, question)) == [("bank",)]


def test_words_in_parentheses_that_gloss_no_sense_stay_in_the_question(engine: EmbeddedEngine) -> None:
    from skbqa.stages.parse.sense_qualifiers import cut_glosses

    nodes = engine.stores.nodes
    banks = nodes.positions([1, 2])

    def positions(name: str) -> np.ndarray:
        return banks if name == "bank" else banks[:0]

    question = "parts of bank (direct parts only)"  # a constraint, not a gloss: no sense's document shares it
    assert cut_glosses(question, [], positions, nodes) == (question, [])
    cut, qualifiers = cut_glosses("parts of bank (sloping land) or car", [], positions, nodes)
    assert cut == "parts of bank or car"
    assert [(q.after, sorted(q.words)) for q in qualifiers] == [(len("parts of bank"), ["land", "sloping"])]


def test_an_apposition_set_off_by_two_commas_goes_with_both(engine: EmbeddedEngine) -> None:
    from skbqa.stages.parse.sense_qualifiers import cut_glosses

    nodes = engine.stores.nodes
    banks = nodes.positions([1, 2])

    def positions(name: str) -> np.ndarray:
        return banks if name == "bank" else banks[:0]

    cut, qualifiers = cut_glosses("what does the bank, the financial institution, lend", [], positions, nodes)
    assert cut == "what does the bank lend"  # the do-question's verb is no longer set off from its subject
    assert [(q.after, sorted(q.words)) for q in qualifiers] == [
        (len("what does the bank"), ["financial", "institution"])
    ]


def test_a_head_noun_that_names_a_class_of_nodes_constrains_the_answer(engine: EmbeddedEngine) -> None:
    # "vehicles" is no word of the schema for a type, but the name of a sense that another sense is a kind of
    parsed = parse(engine, "which vehicles are there?")
    assert names(parsed) == [("vehicle",)]
    assert edges(parsed) == {("y", None, "c1")}
    items = engine.ask("which vehicles are there?", strategy="af").items
    grounded = [i.node_id for i in items if "grounded" in str(i.evidence.get("strand", ""))]
    assert grounded[:1] == [6]  # the car, a kind of vehicle, first of what the graph grounds
    # "terms" is what the type's description calls its nodes: a word for the type, no class
    assert names(parse(engine, "which terms are parts of a car")) == [("car",)]
