"""Words that refer rather than name, on a schema of its own (a workshop's parts; nothing here is in the development
data): an answer's head noun that an edge's gloss uses says the relation ("which *components* make up a bicycle"),
a noun after a demonstrative refers back to a name said earlier ("steel: which parts are made of *this alloy*?"),
"in the sense of …" says which sense a name means, not what is asked, and a head noun is no name for a type
whose nodes are verbs ("which *places* …"); an edge said in other words than its own ("what *clashes* with X" for
"conflicts") is where the answer's type is read from only when its meaning is far ahead of every other edge's; an
apposition glosses a name ("chain, *the drive rings*"); a gerund after a preposition names its verb's node ("by
*postponing* something")."""

from __future__ import annotations

import numpy as np
import pytest

from skbqa.engine.embedded import EmbeddedEngine
from skbqa.skb.schema import EdgeType
from skbqa.stages.parse.anaphors import drop_anaphors
from skbqa.stages.parse.constants import Constant
from skbqa.stages.parse.gerunds import gerund_name
from skbqa.stages.parse.question_text import QuestionText
from skbqa.stages.parse.reached_types import clear_by_meaning
from skbqa.stages.parse.relations import Hop, RelationOption
from skbqa.stages.parse.sense_qualifiers import cut_glosses, cut_qualifiers
from tests.helpers import engine_over
from tests.unit.test_encoder_parser import constants, edges, parse

SCHEMA = {
    "name": "workshop",
    "description": "made objects, what they are made of and how they fit together",
    "node_types": [
        {"name": "artifact", "description": "a made object, also called a thing, device or item"},
        {"name": "substance", "description": "a kind of matter, such as steel or leather"},
    ],
    "edge_types": [
        {
            "name": "part_of",
            "source": "artifact",
            "target": "artifact",
            "description": "the artifact is a component of the whole (spoke -> wheel)",
        },
        {
            "name": "kind_of",
            "source": "artifact",
            "target": "artifact",
            "description": "the artifact is a more specific sort of the target (racing bike -> bicycle)",
        },
        {
            "name": "made_of",
            "source": "artifact",
            "target": "substance",
            "description": "the artifact is made from the substance",
        },
    ],
}
NODES = [
    {"id": 1, "type": "artifact", "name": "bicycle", "text": "a vehicle with two wheels moved by pedals"},
    {"id": 2, "type": "artifact", "name": "wheel", "text": "a round frame turning on an axle"},
    {"id": 3, "type": "artifact", "name": "saddle", "text": "a seat for the rider"},
    {"id": 4, "type": "artifact", "name": "chain", "text": "linked metal rings that drive the rear wheel"},
    {"id": 5, "type": "artifact", "name": "component", "text": "a part of a larger machine"},
    {"id": 6, "type": "artifact", "name": "gear", "text": "a toothed wheel"},
    {"id": 7, "type": "artifact", "name": "frame", "text": "the rigid structure of the bicycle"},
    {"id": 8, "type": "artifact", "name": "kettle", "text": "a pot for boiling water"},
    {"id": 9, "type": "artifact", "name": "chain", "text": "a group of shops under one owner"},
    {"id": 20, "type": "substance", "name": "steel", "text": "an alloy of iron and carbon"},
    {"id": 21, "type": "substance", "name": "alloy", "text": "a metal made by melting metals together"},
    {"id": 22, "type": "substance", "name": "leather", "text": "tanned animal hide"},
]
EDGES = [
    {"src": 2, "type": "part_of", "dst": 1},
    {"src": 3, "type": "part_of", "dst": 1},
    {"src": 4, "type": "part_of", "dst": 1},
    {"src": 7, "type": "part_of", "dst": 1},
    {"src": 2, "type": "kind_of", "dst": 5},
    {"src": 6, "type": "kind_of", "dst": 5},
    {"src": 4, "type": "kind_of", "dst": 5},
    {"src": 4, "type": "made_of", "dst": 20},
    {"src": 7, "type": "made_of", "dst": 20},
    {"src": 8, "type": "made_of", "dst": 20},
    {"src": 3, "type": "made_of", "dst": 22},
]


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory, onnx_encoder) -> EmbeddedEngine:
    return engine_over(tmp_path_factory.mktemp("workshop"), onnx_encoder, SCHEMA, NODES, EDGES)


def test_a_head_noun_an_edge_gloss_uses_says_the_relation_not_a_class(engine: EmbeddedEngine) -> None:
    parsed = parse(engine, "Which components make up a bicycle?")
    assert constants(parsed) == {"c1": ("artifact", ("bicycle",))}  # no class constraint on "component"
    assert edges(parsed) == {("y", "part_of", "c1")}


def test_a_noun_after_a_demonstrative_refers_to_the_name_before(engine: EmbeddedEngine) -> None:
    parsed = parse(engine, "steel: which artifacts are made of this alloy?")
    assert constants(parsed) == {"c1": ("substance", ("steel",))}
    assert edges(parsed) == {("y", "made_of", "c1")}


@pytest.mark.parametrize(
    ("question", "kept"),
    [
        ("steel: which artifacts are made of this alloy?", ["steel", "artifacts"]),
        ("steel, and which artifacts are made of that alloy", ["steel", "artifacts"]),
        # "that" is also a relative pronoun: a name right after it, its clause going on, stays a name
        ("bicycle parts that steel is used for", ["bicycle", "steel"]),
        ("which artifacts are made of this Steel", ["artifacts", "Steel"]),  # a capital: a name
        ("this alloy: what is made of it", ["alloy"]),  # nothing before it to refer to
    ],
)
def test_which_names_refer_back(question: str, kept: list[str]) -> None:
    text = QuestionText.of(question)
    words = [t.text for t in text.tokens]
    found = [
        Constant(i, i + 1, word, np.array([0]), exact=True)
        for i, word in enumerate(words)
        if word.lower() in {"steel", "alloy", "bicycle", "artifacts"}
    ]
    assert [c.surface for c in drop_anaphors(text, found)] == kept


@pytest.mark.parametrize(
    ("question", "cut", "words"),
    [
        ("nouns related to teach in the sense of imparting knowledge", "nouns related to teach", {"imparting"}),
        (
            "verbs like run, in the sense of operating a machine, and in verb.motion",
            "verbs like run, and in",
            {"machine"},
        ),
        (
            "parts of a bank in the sense of a river side that flood",
            "parts of a bank that flood",
            {"river", "side"},
        ),
    ],
)
def test_in_the_sense_of_says_which_sense(question: str, cut: str, words: set[str]) -> None:
    kept, qualifiers = cut_qualifiers(question)
    assert kept.startswith(cut) and len(qualifiers) == 1
    assert words <= qualifiers[0].words


# A dictionary's SKB where a verb type's glosses use "place" far more often than the noun type's.
LEXICON_SCHEMA = {
    "name": "lexicon",
    "description": "senses of English words",
    "node_types": [
        {"name": "noun_sense", "description": "A noun sense: one meaning of a noun"},
        {"name": "verb_sense", "description": "A verb sense: one meaning of a verb"},
    ],
    "edge_types": [
        {
            "name": "part_of",
            "source": "noun_sense",
            "target": "noun_sense",
            "description": "the sense is a component of the whole",
        },
        {
            "name": "kind_of",
            "source": "verb_sense",
            "target": "verb_sense",
            "description": "a particular way of doing the target",
        },
    ],
}
LEXICON_NODES = [
    {"id": 1, "type": "noun_sense", "name": "France", "text": "a republic in western Europe"},
    {"id": 2, "type": "noun_sense", "name": "Paris", "text": "the capital of France"},
    {"id": 3, "type": "noun_sense", "name": "Lyon", "text": "a city in France"},
    {"id": 4, "type": "noun_sense", "name": "place", "text": "a point located with respect to surface features"},
    {"id": 10, "type": "verb_sense", "name": "place", "text": "place something somewhere"},
    {"id": 11, "type": "verb_sense", "name": "put", "text": "put into a certain place or position"},
    {"id": 12, "type": "verb_sense", "name": "set", "text": "put or place in position"},
    {"id": 13, "type": "verb_sense", "name": "position", "text": "cause to be placed in a place"},
    {"id": 14, "type": "verb_sense", "name": "situate", "text": "determine or place in a place"},
]
LEXICON_EDGES = [
    {"src": 2, "type": "part_of", "dst": 1},
    {"src": 3, "type": "part_of", "dst": 1},
    {"src": 12, "type": "kind_of", "dst": 11},
    {"src": 13, "type": "kind_of", "dst": 11},
]


@pytest.fixture(scope="module")
def lexicon(tmp_path_factory: pytest.TempPathFactory, onnx_encoder) -> EmbeddedEngine:
    return engine_over(
        tmp_path_factory.mktemp("lexicon"), onnx_encoder, LEXICON_SCHEMA, LEXICON_NODES, LEXICON_EDGES
    )


def test_a_head_noun_is_no_name_for_a_type_of_verbs(lexicon: EmbeddedEngine) -> None:
    parsed = parse(lexicon, "Which places are part of France?")
    assert parsed.target_type == "noun_sense"
    assert edges(parsed) == {("y", "part_of", "c1")}


def _option(edge: str, score: float, forward: bool = True) -> RelationOption:
    return RelationOption((Hop(EdgeType(edge, "package", "package"), forward),), (), score=score)


@pytest.mark.parametrize(
    ("ranked", "clear"),
    [
        # "what *clashes with* X" against "conflicts with": no shared word, one edge far ahead
        ([_option("conflicts", 0.47), _option("conflicts", 0.4, False), _option("breaks", 0.13)], True),
        ([_option("conflicts", 0.47), _option("breaks", 0.3)], False),  # a rival close behind
        ([_option("conflicts", 0.3), _option("breaks", 0.0)], False),  # far ahead, but weak
        ([_option("conflicts", 0.5)], True),
    ],
)
def test_an_edge_said_in_other_words_needs_its_meaning_far_ahead(
    ranked: list[RelationOption], clear: bool
) -> None:
    assert clear_by_meaning(ranked) is clear


@pytest.mark.parametrize(
    ("question", "cut"),
    [
        ("chain, the drive rings - what is it made of?", "chain - what is it made of?"),
        ("a chain, the shops, and its owner", "a chain, and its owner"),
        (
            "Give me the parts of the chain, the drive rings.",
            "Give me the parts of the chain.",
        ),  # at the full stop
        ("the chain, the drive rings.io", None),  # a dot inside a word ends no sentence
        ("the chain, the thing we saw, and a bicycle", None),  # shares no word with a chain's text: no gloss
        ("bicycle, the vehicle, and its parts", None),  # one node of that name: nothing to choose between
    ],
)
def test_an_apposition_that_glosses_one_of_a_names_nodes_says_which(
    engine: EmbeddedEngine, question: str, cut: str | None
) -> None:
    nodes = engine.stores.nodes
    names = np.array([n.lower() for n in nodes.names])
    kept, qualifiers = cut_glosses(question, [], lambda name: np.flatnonzero(names == name.lower()), nodes)
    assert kept == (cut or question) and len(qualifiers) == (1 if cut else 0)


class _Names:
    """Stands in for the name lexicon: one verb node, "place"."""

    def positions(self, name: str, original: str | None = None) -> np.ndarray:
        return np.array([10]) if name == "place" else np.array([], dtype=np.int64)


@pytest.mark.parametrize(
    ("question", "named"),
    [
        ("what is entailed by placing something?", "place"),
        ("what is done by placing?", "place"),
        ("tools for placing bricks", None),  # the verb with its object: no activity named alone
        ("what is entailed by sleeping?", None),  # no node of that verb
    ],
)
def test_a_gerund_after_a_preposition_names_its_verb(question: str, named: str | None) -> None:
    text = QuestionText.of(question)
    at = next(i for i, t in enumerate(text.tokens) if t.lower.endswith("ing"))
    found = gerund_name(text, at, _Names())  # type: ignore[arg-type]
    assert (found[0] if found else None) == named
