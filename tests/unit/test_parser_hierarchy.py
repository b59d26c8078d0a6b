"""Chains through an unnamed narrower node, on a schema of its own (recipes; nothing here is in the development
data): "a kind of X" next to a named node, "a subtype of X" after a type word, and an answer that is itself said
to be a narrower node of an unnamed one."""

from __future__ import annotations

import pytest

from skbqa.engine.embedded import EmbeddedEngine
from skbqa.stages.parse.chain_words import chain_phrases, narrower_tail, without_name_article
from tests.helpers import engine_over
from tests.unit.test_encoder_parser import constants, edges, parse

SCHEMA = {
    "name": "kitchen",
    "description": "recipes and what goes into them",
    "node_types": [
        {"name": "dish", "description": "a recipe that can be cooked"},
        {"name": "ingredient", "description": "a food item used in cooking"},
        {"name": "cook", "description": "a person who writes recipes"},
    ],
    "edge_types": [
        {"name": "uses", "source": "dish", "target": "ingredient", "description": "the dish needs the ingredient"},
        {"name": "is_a", "source": "ingredient", "target": "ingredient", "description": "a more specific kind"},
        {"name": "created_by", "source": "dish", "target": "cook", "description": "who wrote the recipe"},
        {"name": "replaces", "source": "ingredient", "target": "ingredient", "description": "can stand in for"},
    ],
}
NODES = [
    {"id": 1, "type": "ingredient", "name": "cheese", "text": "dairy food"},
    {"id": 2, "type": "ingredient", "name": "mozzarella", "text": "soft Italian cheese"},
    {"id": 3, "type": "ingredient", "name": "parmesan", "text": "hard Italian cheese"},
    {"id": 4, "type": "ingredient", "name": "buffalo mozzarella", "text": "mozzarella from buffalo milk"},
    {"id": 5, "type": "ingredient", "name": "basil", "text": "a herb"},
    {"id": 10, "type": "dish", "name": "margherita pizza", "text": "pizza with tomato and cheese"},
    {"id": 11, "type": "dish", "name": "pesto", "text": "a green sauce"},
    {"id": 12, "type": "dish", "name": "plain toast", "text": "bread, toasted"},
    {"id": 20, "type": "cook", "name": "Marta Rossi", "text": ""},
]
EDGES = [
    {"src": 2, "type": "is_a", "dst": 1},
    {"src": 3, "type": "is_a", "dst": 1},
    {"src": 4, "type": "is_a", "dst": 2},
    {"src": 10, "type": "uses", "dst": 2},
    {"src": 10, "type": "uses", "dst": 5},
    {"src": 11, "type": "uses", "dst": 3},
    {"src": 11, "type": "uses", "dst": 5},
    {"src": 10, "type": "created_by", "dst": 20},
    {"src": 3, "type": "replaces", "dst": 5},
]


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory, onnx_encoder) -> EmbeddedEngine:
    return engine_over(tmp_path_factory.mktemp("kitchen"), onnx_encoder, SCHEMA, NODES, EDGES)


def test_the_words_that_introduce_a_narrower_node() -> None:
    assert narrower_tail(["dishes", "that", "use", "a", "kind", "of"]) == 3
    assert narrower_tail(["with", "some", "more", "specific", "subtype", "of"]) == 5
    assert narrower_tail(["dishes", "that", "use"]) == 0
    assert narrower_tail(["made", "of"]) == 0  # "of" alone names no narrower node


def test_a_kind_of_a_named_node_is_an_unnamed_narrower_node(engine: EmbeddedEngine) -> None:
    parsed = parse(engine, "which dishes use a kind of cheese?")
    assert constants(parsed) == {"c1": ("ingredient", ("cheese",))}
    assert parsed.symbols["m1"].type == "ingredient"
    assert ("m1", "is_a", "c1") in edges(parsed) or ("m1", None, "c1") in edges(parsed)
    ranked = [item.node_id for item in engine.ask("which dishes use a kind of cheese?", strategy="af").items[:2]]
    assert sorted(ranked) == [10, 11]


def test_the_words_before_a_name_are_read_without_its_article() -> None:
    """ "adjectives for the parts of *the* ear": the cut into the answer's words and the narrower node's is made
    on the words before the name's own article, and those are the phrases embedded for it."""
    assert without_name_article(["for", "the", "parts", "of", "the"]) == ["for", "the", "parts", "of"]
    assert without_name_article(["made", "of"]) == ["made", "of"]
    assert "the parts of" in chain_phrases(["for", "the", "parts", "of", "the"], [], [])


def test_the_answer_said_to_be_a_subtype_of_an_unnamed_node(engine: EmbeddedEngine) -> None:
    question = "which ingredients are subtypes of an ingredient used in margherita pizza?"
    parsed = parse(engine, question)
    assert parsed.target_type == "ingredient"
    assert ("y", "is_a", "m1") in edges(parsed)
    assert engine.ask(question, strategy="af").items[0].node_id == 4


def test_a_passive_edge_to_the_answer_before_a_narrower_node_keeps_its_direction(engine: EmbeddedEngine) -> None:
    """ "replaced by a kind of cheese": the narrower node replaces the answer, not the other way round."""
    question = "which ingredients are replaced by a kind of cheese?"
    parsed = parse(engine, question)
    assert ("m1", "replaces", "y") in edges(parsed)
    assert engine.ask(question, strategy="af").items[0].node_id == 5


@pytest.mark.parametrize(
    "question",
    ["grandchildren of cheese", "ingredients two levels below cheese", "subtypes of subtypes of cheese"],
)
def test_two_levels_at_once_walk_the_hierarchy_twice(engine: EmbeddedEngine, question: str) -> None:
    parsed = parse(engine, question)
    hops = [(t.edge, t.min_hops, t.max_hops) for t in parsed.triplets]
    assert hops == [("is_a", 2, 2)]
    # buffalo mozzarella is a mozzarella, which is a cheese; mozzarella itself is one level down
    assert engine.ask(question, strategy="af").items[0].node_id == 4


def test_a_subtype_of_a_subtype_is_two_hops_not_four(engine: EmbeddedEngine) -> None:
    parsed = parse(engine, "ingredients that are a subtype of a subtype of cheese (grandchildren)")
    assert sum(t.max_hops for t in parsed.triplets if t.edge in ("is_a", None)) == 2


@pytest.mark.parametrize(
    ("question", "edge"),
    [
        ("Name the direct subtypes of cheese", ("y", "is_a", "c1")),
        ("children of cheese (immediate ones only)", ("y", "is_a", "c1")),
        ("parent terms of mozzarella", ("c1", "is_a", "y")),
        ("what are the superclasses of mozzarella", ("c1", "is_a", "y")),
    ],
)
def test_a_level_of_a_hierarchy_asks_for_the_named_nodes_kind(
    engine: EmbeddedEngine, question: str, edge: tuple[str, str, str]
) -> None:
    # no type word: "subtypes", "children", "parents" are of the kind of what follows "of"
    parsed = parse(engine, question)
    assert parsed.target_type == "ingredient"
    assert any("names a level of its hierarchy" in w for w in parsed.warnings)
    assert edge in edges(parsed)


def test_a_name_said_of_a_name_below_it_labels_it(engine: EmbeddedEngine) -> None:
    # "cheese" is mozzarella's parent: "whose cheese is mozzarella" says which cheese, it names no second node
    question = "which dishes use basil and a cheese that is mozzarella"
    parsed = parse(engine, question)
    assert ("ingredient", ("cheese",)) not in constants(parsed).values()
    assert ("ingredient", ("mozzarella",)) in constants(parsed).values()
