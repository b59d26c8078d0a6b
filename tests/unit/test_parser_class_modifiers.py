"""A name right before the answer's head class, on a schema of its own (a gazetteer and cookbook lexicon; nothing
here is in the development data): "*Norwegian* towns" are the towns the adjective reaches through the country it
pertains to, "*noodle* dishes" are the kinds of the noodle that is a dish, and a name the class's members are not
linked to stays words for ranking; with another name of the class ("Norse *gods*" for the class "Norse deity"). Also the class said in the plural after "types of" ("types of *stews*"), and
words said after the question that tell which sense of a name or of the class is meant ("… I mean the dish")."""

from __future__ import annotations

import pytest

from skbqa.engine.embedded import EmbeddedEngine
from skbqa.stages.parse.sense_qualifiers import cut_qualifiers
from tests.helpers import engine_over
from tests.unit.test_encoder_parser import parse

SCHEMA = {
    "name": "gazetteer",
    "description": "senses of English words: places and food",
    "node_types": [
        {"name": "noun_sense", "description": "A noun sense: one meaning of a noun"},
        {"name": "adjective_sense", "description": "An adjective sense: one meaning of an adjective"},
    ],
    "edge_types": [
        {
            "name": "instance_of",
            "source": "noun_sense",
            "target": "noun_sense",
            "description": "the sense is a particular instance of the target class (Tromso -> town)",
        },
        {
            "name": "kind_of",
            "source": "noun_sense",
            "target": "noun_sense",
            "description": "the sense is a more specific kind of the target (udon -> noodle)",
        },
        {
            "name": "located_in",
            "source": "noun_sense",
            "target": "noun_sense",
            "description": "the place lies within the target region",
        },
        {
            "name": "pertains_to",
            "source": "adjective_sense",
            "target": "noun_sense",
            "description": "the adjective relates to the noun",
        },
    ],
}
NODES = [
    {"id": 1, "type": "noun_sense", "name": "town", "text": "an urban area smaller than a city"},
    {"id": 2, "type": "noun_sense", "name": "Norway", "text": "a kingdom in northern Europe"},
    {"id": 3, "type": "noun_sense", "name": "Portugal", "text": "a republic in southwestern Europe"},
    {"id": 4, "type": "noun_sense", "name": "Tromso", "text": "a town in the far north"},
    {"id": 5, "type": "noun_sense", "name": "Alesund", "text": "a port town on the west coast"},
    {"id": 6, "type": "noun_sense", "name": "Evora", "text": "a walled town in the south"},
    {"id": 7, "type": "noun_sense", "name": "Norwegian", "text": "the language spoken in the kingdom"},
    {"id": 20, "type": "noun_sense", "name": "dish", "text": "a particular item of prepared food"},
    {"id": 21, "type": "noun_sense", "name": "noodle", "text": "a dish whose main ingredient is noodles"},
    {"id": 22, "type": "noun_sense", "name": "noodle", "text": "a strip of unleavened dough"},
    {"id": 23, "type": "noun_sense", "name": "udon", "text": "thick wheat noodles served in broth"},
    {"id": 24, "type": "noun_sense", "name": "chow mein", "text": "fried noodles with vegetables"},
    {"id": 25, "type": "noun_sense", "name": "stew", "text": "food cooked slowly in liquid"},
    {"id": 26, "type": "noun_sense", "name": "goulash", "text": "a spicy stew of beef and paprika"},
    {"id": 27, "type": "noun_sense", "name": "pilaf", "text": "rice cooked in a seasoned broth"},
    {"id": 40, "type": "adjective_sense", "name": "Norwegian", "text": "of or relating to the kingdom"},
    {"id": 41, "type": "adjective_sense", "name": "Portuguese", "text": "of or relating to the republic"},
    {"id": 28, "type": "noun_sense", "name": "winter", "text": "the coldest season of the year"},
    {"id": 29, "type": "noun_sense", "name": "rice noodle", "text": "a strip of dough made from rice flour"},
    {"id": 50, "type": "noun_sense", "name": "tool", "text": "an implement used to do work"},
    {"id": 51, "type": "noun_sense", "name": "hand tool", "text": "a tool worked by hand, without a motor"},
    {"id": 52, "type": "noun_sense", "name": "hand", "text": "the end of the arm below the wrist"},
    {"id": 53, "type": "noun_sense", "name": "mallet", "text": "a hammer with a large wooden head"},
    {"id": 54, "type": "noun_sense", "name": "chisel", "text": "an edge tool with a flat steel blade"},
    {"id": 55, "type": "noun_sense", "name": "drill press", "text": "a power drill on a stand"},
    {"id": 56, "type": "noun_sense", "name": "fjeld", "text": "a high rocky plateau above the tree line"},
    {"id": 57, "type": "noun_sense", "name": "Hardangervidda", "text": "a wide mountain plateau in the south"},
    {
        "id": 60,
        "type": "noun_sense",
        "name": "deity",
        "text": "a supernatural being",
        "attrs": {"words": "deity; god"},
    },
    {"id": 61, "type": "noun_sense", "name": "Norse deity", "text": "a deity of Scandinavian myth"},
    {"id": 64, "type": "adjective_sense", "name": "Norse", "text": "of or relating to medieval Scandinavia"},
    {
        "id": 62,
        "type": "noun_sense",
        "name": "Odin",
        "text": "the chief of the Aesir",
        "attrs": {"words": "Odin; Woden"},
    },
    {
        "id": 63,
        "type": "noun_sense",
        "name": "Thor",
        "text": "the thunder one, son of Odin",
        "attrs": {"words": "Thor"},
    },
]
EDGES = [
    {"src": 4, "type": "instance_of", "dst": 1},
    {"src": 5, "type": "instance_of", "dst": 1},
    {"src": 6, "type": "instance_of", "dst": 1},
    {"src": 4, "type": "located_in", "dst": 2},
    {"src": 5, "type": "located_in", "dst": 2},
    {"src": 6, "type": "located_in", "dst": 3},
    {"src": 40, "type": "pertains_to", "dst": 2},
    {"src": 41, "type": "pertains_to", "dst": 3},
    {"src": 21, "type": "kind_of", "dst": 20},
    {"src": 25, "type": "kind_of", "dst": 20},
    {"src": 27, "type": "kind_of", "dst": 20},
    {"src": 23, "type": "kind_of", "dst": 21},
    {"src": 24, "type": "kind_of", "dst": 21},
    {"src": 26, "type": "kind_of", "dst": 25},
    {"src": 29, "type": "kind_of", "dst": 22},
    {"src": 51, "type": "kind_of", "dst": 50},
    {"src": 55, "type": "kind_of", "dst": 50},
    {"src": 53, "type": "kind_of", "dst": 51},
    {"src": 54, "type": "kind_of", "dst": 51},
    {"src": 57, "type": "instance_of", "dst": 56},
    {"src": 61, "type": "kind_of", "dst": 60},
    {"src": 62, "type": "instance_of", "dst": 61},
    {"src": 63, "type": "instance_of", "dst": 61},
]


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory, onnx_encoder) -> EmbeddedEngine:
    return engine_over(tmp_path_factory.mktemp("gazetteer"), onnx_encoder, SCHEMA, NODES, EDGES)


def _top(engine: EmbeddedEngine, question: str, k: int) -> set[int]:
    return {item.node_id for item in engine.ask(question, strategy="af", k=k).items[:k]}


def test_an_adjective_before_the_class_reaches_its_members_through_what_it_pertains_to(
    engine: EmbeddedEngine,
) -> None:
    parsed = parse(engine, "Which Norwegian towns are there?")
    linked = [t for t in parsed.triplets if t.max_hops == 2]
    assert len(linked) == 1 and linked[0].edge is None and linked[0].direction == "undirected"
    assert parsed.symbols[linked[0].tail].type is None  # the adjective's nodes count, not only the nouns
    assert _top(engine, "Which Norwegian towns are there?", 2) == {4, 5}
    assert _top(engine, "portuguese towns?", 1) == {6}


def test_a_name_that_is_one_of_the_class_becomes_the_class_in_that_sense(engine: EmbeddedEngine) -> None:
    parsed = parse(engine, "which noodle dishes are there")
    classes = {parsed.symbols[t.tail].names for t in parsed.triplets if t.head == parsed.target}
    assert classes == {("noodle",)}
    assert _top(engine, "which noodle dishes are there", 2) == {23, 24}


def test_a_name_the_class_is_not_linked_to_stays_words(engine: EmbeddedEngine) -> None:
    parsed = parse(engine, "which winter dishes are there")
    assert all("winter" not in s.names for s in parsed.constants)
    assert any("winter" in t for t in parsed.text_constraints)


def test_types_of_a_plural_class(engine: EmbeddedEngine) -> None:
    parsed = parse(engine, "What types of stews exist?")
    assert [s.names for s in parsed.constants] == [("stews",)]
    assert _top(engine, "What types of stews exist?", 1) == {26}


@pytest.mark.parametrize(
    ("question", "kept", "words"),
    [
        ("What types of hammers exist? I mean the hand tool", "What types of hammers exist?", {"hand", "tool"}),
        ("which noodles are there (the dish)", "which noodles are there", {"dish"}),
        ("kinds of bank, I mean a river side.", "kinds of bank", {"river", "side"}),
    ],
)
def test_an_afterthought_is_cut_as_a_gloss(question: str, kept: str, words: set[str]) -> None:
    cut, qualifiers = cut_qualifiers(question)
    assert cut == kept
    assert [(q.floating, q.words) for q in qualifiers] == [(True, frozenset(words))]


@pytest.mark.parametrize("question", ["towns of Norway (direct subtypes)", "which towns (the ones in Norway)"])
def test_a_closing_parenthesis_that_constrains_stays(question: str) -> None:
    assert cut_qualifiers(question) == (question, [])


def test_an_afterthought_tells_which_sense_of_a_name(engine: EmbeddedEngine) -> None:
    assert _top(engine, "What kinds of noodle exist? I mean the dish", 2) == {23, 24}
    assert _top(engine, "What kinds of noodle exist? I mean the strip of dough", 1) == {29}


def test_an_afterthought_tells_which_sense_of_the_class(engine: EmbeddedEngine) -> None:
    parsed = parse(engine, "which noodles are there (the strip of dough)")
    classes = [parsed.symbols[t.tail] for t in parsed.triplets if t.head == parsed.target]
    assert [(c.names, c.sense) for c in classes] == [(("noodle",), ("dough", "strip"))]


def test_a_name_and_the_class_that_together_name_a_class(engine: EmbeddedEngine) -> None:
    parsed = parse(engine, "which hand tools are there")
    classes = {parsed.symbols[t.tail].names for t in parsed.triplets if t.head == parsed.target}
    assert classes == {("hand tool",)}
    assert _top(engine, "which hand tools are there", 2) == {53, 54}


def test_a_name_and_another_name_of_the_class_that_together_name_a_class(engine: EmbeddedEngine) -> None:
    """ "Norse gods": the class noun's node is also called "deity", and "Norse deity" is a class of its own."""
    parsed = parse(engine, "which Norse gods are there")
    classes = {parsed.symbols[t.tail].names for t in parsed.triplets if t.head == parsed.target}
    assert classes == {("Norse deity",)}
    assert _top(engine, "which Norse gods are there", 2) == {62, 63}


def test_a_plural_english_does_not_know_names_its_singular_class(engine: EmbeddedEngine) -> None:
    assert _top(engine, "what fjelds are there", 1) == {57}
