"""A numeric attribute that counts a list attribute's items is named by what the list holds: "recipes with more
than 3 *ingredients*" (`ingredient_total`, beside `ingredients`), "entries with over 2 *forms*", and by the word
the description glosses the list with ("all spellings (forms …)"). Words for another name ("synonym", "alias")
leave the node's own name out of the count where the list holds it; "names" count all of such a list. And when the graph has no node that fits a
parse, the ranking does not trust a target type read off that parse's relations."""

from __future__ import annotations

import numpy as np

from skbqa.query.grounded import ScopeResult
from skbqa.query.structured import StructuredQuery, Symbol
from skbqa.serving.codec import query_from_proto, query_to_proto
from skbqa.skb.schema import Schema
from skbqa.stages.parse.attribute_mentions import AttributeSpotter
from skbqa.stages.parse.list_counts import counted_lists
from skbqa.stages.parse.question_text import QuestionText
from skbqa.stages.ranking.step import _refuted
from skbqa.stores.attributes.catalog import AttributeCatalog
from skbqa.stores.nodes import NodeTable

SCHEMA = Schema.from_dict(
    {
        "node_types": [
            {
                "name": "entry",
                "description": "A dictionary entry. Name is its first spelling; attrs give all synonyms (forms, "
                "'; '-separated), the form number and a rating.",
                "name_attr": "name",
            },
            {"name": "recipe", "description": "A recipe with its ingredients.", "name_attr": "name"},
        ],
        "edge_types": [],
    }
)


def catalog() -> AttributeCatalog:
    names, types, attrs = [], [], []
    for i in range(40):  # entries: the list holds the entry's own name
        forms = [f"word{i}"] + [f"word{i}-{j}" for j in range(i % 4)]
        names.append(forms[0])
        types.append(0)
        attrs.append({"forms": "; ".join(forms), "form_number": len(forms), "rating": (i * 7) % 5})
    for i in range(40):  # recipes: the list holds what goes in, not the recipe's name
        ingredients = [f"item{j}" for j in range(1 + i % 5)]
        names.append(f"dish{i}")
        types.append(1)
        attrs.append({"ingredients": ", ".join(ingredients), "ingredient_total": len(ingredients)})
    nodes = NodeTable(SCHEMA, np.arange(80), np.asarray(types, np.int64), names, [""] * 80, attrs)
    return AttributeCatalog.build(nodes)


def read(question: str, node_type: str) -> list[tuple[str, str, object]]:
    spotted = AttributeSpotter(catalog())(QuestionText.of(question), node_type)
    return [(c.attribute, c.op, c.value) for c in spotted]


def test_a_count_column_is_found_beside_the_list_it_counts() -> None:
    descriptions = " ".join(t.description for t in SCHEMA.node_types)
    entries = counted_lists(catalog(), "entry", descriptions)
    assert [(c.count_key, c.nouns, c.holds_name) for c in entries] == [
        ("form_number", ("form", "synonym", "name"), True)
    ]  # the rating counts nothing; a list that holds the own name is the entry's names
    recipes = counted_lists(catalog(), "recipe", descriptions)
    assert [(c.count_key, c.nouns, c.holds_name) for c in recipes] == [
        ("ingredient_total", ("ingredient",), False)
    ]


def test_a_count_is_said_by_what_the_list_holds() -> None:
    assert read("recipes with more than 3 ingredients", "recipe") == [("ingredient_total", ">", 3)]
    assert read("recipes with a single ingredient", "recipe") == [("ingredient_total", "=", 1)]
    assert read("entries with over 2 forms", "entry") == [("form_number", ">", 2)]
    assert read("entries with just one form", "entry") == [("form_number", "=", 1)]


def test_a_word_for_another_name_leaves_the_name_out_of_the_count() -> None:
    assert read("entries with at least one synonym", "entry") == [("form_number", ">=", 2)]
    assert read("entries that have no synonyms", "entry") == [("form_number", "=", 1)]
    assert read("entries without synonyms", "entry") == [("form_number", "=", 1)]
    assert read("entries with more than 2 synonyms", "entry") == [("form_number", ">", 3)]


def test_names_count_the_items_of_a_list_that_holds_the_own_name() -> None:
    assert read("entries with more than one name", "entry") == [("form_number", ">", 1)]
    assert read("entries known by two names", "entry") == [("form_number", "=", 2)]
    assert read("recipes with more than one name", "recipe") == []  # their list holds no name of theirs


def test_a_parse_the_graph_refutes_is_told_from_one_it_supports() -> None:
    parsed = StructuredQuery("y", {"y": Symbol("y", "entry"), "c1": Symbol("c1", "entry", ("word1",))})
    empty = ScopeResult(True, np.zeros(0, np.int64), 100.0, 100, [(1.0, 0), (100.0, 0)], None)
    found = ScopeResult(True, np.asarray([3], np.int64), 1.0, 1, [(1.0, 1)], None)
    ungrounded = ScopeResult(False, np.zeros(0, np.int64), 0.0, 0, [], None, "the query has no triplet")
    assert _refuted(parsed, empty)
    assert not _refuted(parsed, found)
    assert not _refuted(parsed, ungrounded)  # nothing was asked of the graph
    assert not _refuted(StructuredQuery("y", {"y": Symbol("y", "entry")}), empty)


def test_whether_the_question_named_its_type_crosses_the_wire() -> None:
    parsed = StructuredQuery("y", {"y": Symbol("y", "entry")}, confidence=0.8, type_named=True)
    assert query_from_proto(query_to_proto(parsed)).type_named
    parsed.type_named = False
    assert not query_from_proto(query_to_proto(parsed)).type_named
