"""Readings of clauses and head nouns, on a recipes schema of its own (nothing here is in any question set):
"everything" as the answer or a node on the way, a relative clause without "that" whose verb follows an
auxiliary ("the dishes basil is used in"), a wh-word that is its verb's subject ("what uses …"), a "-wise" adverb
naming the answer, a node's name used as a category of answers ("cheese terms"), words for a hierarchy's levels
meaning the type's taxonomy rather than another edge among its nodes, and a pronoun for the answer acting on the
name ("… among the things they use")."""

from __future__ import annotations

import pytest

from skbqa.engine.embedded import EmbeddedEngine
from skbqa.stages.parse.spelling import reads_as_participle
from skbqa.stages.parse.topic_adverbials import lift_topic_adverbial
from tests.helpers import engine_over
from tests.unit.test_encoder_parser import edges, parse

SCHEMA = {
    "name": "recipes",
    "description": "dishes, the ingredients they are cooked with and the cuisines they come from",
    "node_types": [
        {"name": "dish", "description": "a prepared food served at a meal"},
        {"name": "ingredient", "description": "a food a dish is cooked with"},
        {"name": "cuisine", "description": "a regional style of cooking"},
    ],
    "edge_types": [
        {"name": "uses", "source": "dish", "target": "ingredient", "description": "the dish is cooked with it"},
        {
            "name": "narrower_than",
            "source": "ingredient",
            "target": "ingredient",
            "description": "subclass relation: the source ingredient is a more specific kind of the target",
        },
        {
            "name": "substitutes",
            "source": "ingredient",
            "target": "ingredient",
            "description": "the source ingredient can stand in for the target ingredient in a recipe",
        },
        {
            "name": "from_cuisine",
            "source": "dish",
            "target": "cuisine",
            "description": "where the dish comes from",
        },
        {"name": "pairs_with", "source": "dish", "target": "dish", "description": "served alongside the target"},
    ],
}
INGREDIENTS = [
    "cheese",
    "hard cheese",
    "parmesan",
    "pecorino",
    "soft cheese",
    "ricotta",
    "butter",
    "olive oil",
    "basil",
    "rennet development culture",
]
DISHES = ["risotto alla milanese", "cacio e pepe", "lasagna", "pesto"]
NODES = [
    *(
        {"id": i, "type": "ingredient", "name": n, "text": f"{n}, an ingredient"}
        for i, n in enumerate(INGREDIENTS, 1)
    ),
    *({"id": i, "type": "dish", "name": n, "text": f"{n}, a dish"} for i, n in enumerate(DISHES, 20)),
    {"id": 30, "type": "cuisine", "name": "Italian", "text": "the cooking of Italy"},
    {"id": 31, "type": "cuisine", "name": "Ligurian", "text": "the cooking of Liguria"},
]
ID = {n["name"]: n["id"] for n in NODES}
EDGES = [
    *({"src": ID[a], "type": "narrower_than", "dst": ID[b]} for a, b in [
        ("hard cheese", "cheese"), ("soft cheese", "cheese"), ("parmesan", "hard cheese"),
        ("pecorino", "hard cheese"), ("ricotta", "soft cheese")]),
    *({"src": ID[a], "type": "substitutes", "dst": ID[b]} for a, b in [
        ("pecorino", "parmesan"), ("olive oil", "butter"), ("ricotta", "parmesan")]),
    *({"src": ID[d], "type": "uses", "dst": ID[i]} for d, i in [
        ("risotto alla milanese", "parmesan"), ("risotto alla milanese", "butter"), ("cacio e pepe", "pecorino"),
        ("lasagna", "ricotta"), ("lasagna", "parmesan"), ("pesto", "basil"), ("pesto", "parmesan"),
        ("pesto", "olive oil")]),
    *({"src": ID[d], "type": "from_cuisine", "dst": ID[c]} for d, c in [
        ("risotto alla milanese", "Italian"), ("cacio e pepe", "Italian"), ("lasagna", "Italian"),
        ("pesto", "Ligurian")]),
    {"src": ID["lasagna"], "type": "pairs_with", "dst": ID["pesto"]},
]  # fmt: skip


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory, onnx_encoder) -> EmbeddedEngine:
    return engine_over(tmp_path_factory.mktemp("recipes"), onnx_encoder, SCHEMA, NODES, EDGES)


def names(engine: EmbeddedEngine, question: str, k: int) -> set[str]:
    return {item.name for item in engine.ask(question, strategy="af").items[:k]}


def test_everything_a_name_verbs_is_the_verbs_object(engine: EmbeddedEngine) -> None:
    parsed = parse(engine, "List everything ricotta substitutes")
    assert parsed.target_type == "ingredient"
    assert edges(parsed) == {("c1", "substitutes", "y")}
    assert names(engine, "List everything ricotta substitutes", 1) == {"parmesan"}


@pytest.mark.parametrize("lead", ["the ingredients", "everything"])
def test_a_relative_clause_may_start_with_an_auxiliary(engine: EmbeddedEngine, lead: str) -> None:
    question = f"dishes using {lead} butter is substituted by"
    parsed = parse(engine, question)
    assert parsed.target_type == "dish"
    assert edges(parsed) == {("m1", "substitutes", "c1"), ("y", "uses", "m1")}
    assert names(engine, question, 1) == {"pesto"}


def test_a_wh_word_before_a_verb_asks_for_the_verbs_subject(engine: EmbeddedEngine) -> None:
    parsed = parse(engine, "what uses an ingredient that cacio e pepe uses?")
    assert parsed.target_type == "dish"  # not the ingredient named after the verb
    assert {("c1", "uses", "m1"), ("y", "uses", "m1")} <= edges(parsed)


def test_a_topic_adverbial_names_what_is_asked() -> None:
    assert lift_topic_adverbial("What do pesto and lasagna have in common ingredient-wise?") == (
        "What ingredient do pesto and lasagna have in common?"
    )
    assert lift_topic_adverbial("cuisine wise, which is lasagna from") == "which cuisine is lasagna from"
    assert lift_topic_adverbial("which dishes use basil, otherwise what") is None
    assert lift_topic_adverbial("pesto ingredient-wise") is None  # no wh-word to move it to
    assert lift_topic_adverbial("where do pesto and lasagna overlap in terms of the ingredients they use") == (
        "what ingredients do pesto and lasagna overlap they use"
    )


def test_a_topic_adverbial_sets_the_target_type(engine: EmbeddedEngine) -> None:
    parsed = parse(engine, "What do pesto and lasagna have in common ingredient-wise?")
    assert parsed.target_type == "ingredient"
    assert edges(parsed) == {("c1", "uses", "y"), ("c2", "uses", "y")}


def test_a_name_before_a_term_noun_is_a_category_of_answers(engine: EmbeddedEngine) -> None:
    parsed = parse(engine, "what hard cheese terms does lasagna use")
    assert parsed.target_type == "ingredient"
    assert [s.names for s in parsed.constants] == [("lasagna",)]  # "hard cheese" says what kind, it is no constant
    assert edges(parsed) == {("c1", "uses", "y")}
    # a name that heads no narrower nodes of its type is no category ("HPO terms": HPO is some gene's alias)
    assert not any("kind of answer" in w for w in parse(engine, "what butter terms does lasagna use").warnings)
    # after a preposition, a name with a term noun is a setting, not the answer
    assert not any(
        "kind of answer" in w for w in parse(engine, "in the cheese category, what does pesto use").warnings
    )


def test_words_for_levels_mean_the_taxonomy_not_another_edge_among_the_same_type(engine: EmbeddedEngine) -> None:
    parsed = parse(engine, "parents of the ingredients cacio e pepe uses")
    assert edges(parsed) == {("c1", "uses", "m1"), ("m1", "narrower_than", "y")}
    assert names(engine, "parents of the ingredients cacio e pepe uses", 1) == {"hard cheese"}
    parsed = parse(engine, "what ingredients sit directly above the ingredients that cacio e pepe uses")
    assert ("m1", "narrower_than", "y") in edges(parsed)


def test_a_pronoun_for_the_answer_acting_on_the_name_makes_it_the_object(engine: EmbeddedEngine) -> None:
    parsed = parse(engine, "Which ingredients list parmesan among the things they substitute?")
    assert edges(parsed) == {("y", "substitutes", "c1")}
    assert names(engine, "Which ingredients list parmesan among the things they substitute?", 2) == {
        "pecorino",
        "ricotta",
    }


@pytest.mark.parametrize(
    "question",
    ["dishes using any product substituted by ricotta", "dishes using some product that ricotta substitutes"],
)
def test_a_noun_that_is_no_type_word_may_stand_for_a_node_on_the_way(
    engine: EmbeddedEngine, question: str
) -> None:
    assert edges(parse(engine, question)) == {("c1", "substitutes", "m1"), ("y", "uses", "m1")}
    assert names(engine, question, 3) == {"risotto alla milanese", "lasagna", "pesto"}  # the dishes with parmesan


def test_irregular_past_participles_read_as_participles() -> None:
    assert all(reads_as_participle(w) for w in ("built", "kept", "written", "listed"))
    assert not any(reads_as_participle(w) for w in ("set", "run", "depends", "package"))  # "set" says too little


def test_a_long_misspelt_word_english_also_lists_is_read_inside_a_long_name(engine: EmbeddedEngine) -> None:
    parsed = parse(engine, "which dishes use rennet developement culture")
    assert [s.names for s in parsed.constants] == [("rennet development culture",)]
