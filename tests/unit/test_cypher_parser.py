"""The Cypher parser for LLM output: every supported construct, the known pitfalls, schema modes, and fuzzing."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from skbqa.query.structured import AttributeConstraint as C
from skbqa.query.structured import StructuredQuery, Symbol, Triplet
from skbqa.skb.schema import Schema
from skbqa.stages.parse.cypher.parser import (
    MAX_ALTERNATIVES,
    MAX_HOPS,
    closest_type,
    parse_cypher,
    parse_cypher_or_error,
)

SCHEMA = Schema.from_dict(
    {
        "name": "test",
        "description": "",
        "node_types": [
            {"name": "paper", "name_attr": "title"},
            {"name": "author", "name_attr": "DisplayName"},
            {"name": "field of study"},
            {"name": "institution"},
            {"name": "gene/protein"},
            {"name": "disease"},
        ],
        "edge_types": [
            {"name": "author_writes_paper", "source": "author", "target": "paper"},
            {"name": "paper_has_topic", "source": "paper", "target": "field of study"},
            {"name": "cites", "source": "paper", "target": "paper"},
            {"name": "affiliated_with", "source": "author", "target": "institution"},
            {"name": "associated_with", "source": "gene/protein", "target": "disease"},
        ],
    }
)


def bare(q: StructuredQuery) -> StructuredQuery:
    """The query without warnings (compared separately), alternatives included."""
    return dataclasses.replace(q, warnings=[], alternatives=[bare(a) for a in q.alternatives])


def sq(
    target: str, symbols: list[Symbol], triplets=(), constraints=(), text=(), alternatives=()
) -> StructuredQuery:
    return StructuredQuery(
        target, {s.name: s for s in symbols}, list(triplets), list(constraints), list(text), list(alternatives)
    )


def has(q: StructuredQuery, fragment: str) -> bool:
    return any(fragment in w for w in q.warnings)


def parse(text: str, **kw) -> StructuredQuery:
    q = parse_cypher(text, **kw)
    assert not has(q, "internal parser error"), q.warnings
    return q


# --- clauses ------------------------------------------------------------------------------------------------


def test_paper_running_example() -> None:
    q = parse(
        "MATCH (i:institution {name: 'Miami uni'})<-[:employed_at]-(a:author)-[:wrote]->(p:paper)\n"
        "p-[:has_field_of_study]->(f:field_of_study {name: 'molecular biology'})\n"
        "WHERE p.publication_year = 2015\n"
        "RETURN p.title"
    )
    assert bare(q) == sq(
        "p",
        [
            Symbol("i", "institution", ("Miami uni",)),
            Symbol("a", "author"),
            Symbol("p", "paper"),
            Symbol("f", "field_of_study", ("molecular biology",)),
        ],
        [Triplet("a", "employed_at", "i"), Triplet("a", "wrote", "p"), Triplet("p", "has_field_of_study", "f")],
        [C("p", "publication_year", "=", 2015)],
    )
    assert has(q, "without parentheses") and has(q, "without ','")
    assert parse_cypher_or_error("MATCH (p:paper) RETURN p")[1] is None


def test_several_match_clauses() -> None:
    q = parse("MATCH (a:author)-[:writes]->(p:paper)\nMATCH (p)-[:cites]->(q:paper)\nRETURN q")
    assert bare(q) == sq(
        "q",
        [Symbol("a", "author"), Symbol("p", "paper"), Symbol("q", "paper")],
        [Triplet("a", "writes", "p"), Triplet("p", "cites", "q")],
    )
    assert q.warnings == []


def test_comma_separated_patterns() -> None:
    q = parse("MATCH (a:author)-[:writes]->(p:paper), (p)-[:cites]->(q) RETURN p")
    assert bare(q) == sq(
        "p",
        [Symbol("a", "author"), Symbol("p", "paper"), Symbol("q")],
        [Triplet("a", "writes", "p"), Triplet("p", "cites", "q")],
    )


def test_optional_match_is_match_with_warning() -> None:
    q = parse("MATCH (p:paper) OPTIONAL MATCH (p)-[:cites]->(q) RETURN p")
    assert bare(q) == sq("p", [Symbol("p", "paper"), Symbol("q")], [Triplet("p", "cites", "q")])
    assert has(q, "OPTIONAL MATCH read as MATCH")


def test_where_with_and() -> None:
    q = parse("MATCH (p:paper) WHERE p.year > 2010 AND p.venue = 'ICML' AND p.score <= 9.5 RETURN p")
    assert bare(q) == sq(
        "p",
        [Symbol("p", "paper")],
        constraints=[C("p", "year", ">", 2010), C("p", "venue", "=", "ICML"), C("p", "score", "<=", 9.5)],
    )
    assert q.warnings == []


@pytest.mark.parametrize(
    "ret",
    [
        "p",
        "p.title",
        "DISTINCT p",
        "DISTINCT p.title AS title LIMIT 10",
        "p.title, a.name",
        "count(p)",
        "p ORDER BY p.year DESC SKIP 2 LIMIT 5",
    ],
)
def test_return_target_is_first_returned_variable(ret: str) -> None:
    q = parse(f"MATCH (a:author)-[:writes]->(p:paper) RETURN {ret}")
    assert q.target == "p" and q.target_type == "paper"
    assert not has(q, "syntax error")


def test_return_of_unbound_variable_and_missing_return() -> None:
    q = parse("RETURN y.title")
    assert bare(q) == sq("y", [Symbol("y")])
    assert has(q, "not bound by MATCH")
    q = parse("MATCH (p:paper)")
    assert bare(q) == sq("", [Symbol("p", "paper")])
    assert parse_cypher_or_error("MATCH (p:paper)") == (None, "line 1, column 16: the query has no RETURN clause")


def test_with_alias_and_where() -> None:
    q = parse("MATCH (a)-[:writes]->(b) WITH b AS c WHERE c.year = 1 RETURN c")
    assert bare(q) == sq("b", [Symbol("a"), Symbol("b")], [Triplet("a", "writes", "b")], [C("b", "year", "=", 1)])


def test_union_gives_alternatives() -> None:
    q = parse("MATCH (p:paper {title: 'A'}) RETURN p UNION MATCH (q:paper)-[:cites]->(p:paper) RETURN p")
    assert bare(q) == sq(
        "p",
        [Symbol("p", "paper")],
        alternatives=[
            sq("p", [Symbol("p", "paper", ("A",))]),
            sq("p", [Symbol("q", "paper"), Symbol("p", "paper")], [Triplet("q", "cites", "p")]),
        ],
    )
    assert has(q, "UNION read as 2 alternatives")


# --- node patterns ------------------------------------------------------------------------------------------


def test_node_pattern_forms() -> None:
    q = parse("MATCH (v)--(w:paper)--(:author)--(:author {name: 'Ada', born: 1815}) RETURN w")
    assert bare(q) == sq(
        "w",
        [Symbol("v"), Symbol("w", "paper"), Symbol("_1", "author"), Symbol("_2", "author", ("Ada",))],
        [
            Triplet("v", None, "w", "undirected"),
            Triplet("w", None, "_1", "undirected"),
            Triplet("_1", None, "_2", "undirected"),
        ],
        [C("_2", "born", "=", 1815)],
    )


def test_anonymous_names_avoid_user_variables() -> None:
    q = parse("MATCH (_1:paper)-->(:author) RETURN _1")
    assert set(q.symbols) == {"_1", "_2"} and q.symbols["_2"].type == "author"


def test_backtick_labels_with_spaces_and_slashes() -> None:
    q = parse("MATCH (g:`gene/protein`)-[:`associated with`]->(f:`field of study`) RETURN g")
    assert bare(q) == sq(
        "g",
        [Symbol("g", "gene/protein"), Symbol("f", "field of study")],
        [Triplet("g", "associated with", "f")],
    )


def test_unquoted_slash_labels_from_the_paper_prompt() -> None:
    q = parse("MATCH (d:disease)-[:is_effect/phenotype_of_disease]->(e:effect/phenotype) RETURN d.title")
    assert bare(q) == sq(
        "d",
        [Symbol("d", "disease"), Symbol("e", "effect/phenotype")],
        [Triplet("d", "is_effect/phenotype_of_disease", "e")],
    )


def test_property_map_without_space_keeps_type_and_property() -> None:
    q = parse('MATCH (p:paper{title:"X"}) RETURN p')
    assert bare(q) == sq("p", [Symbol("p", "paper", ("X",))])


def test_multi_property_map_drops_nothing() -> None:
    q = parse("MATCH (p:paper {title: 'X', year: 2015, venue: 'ICML', open: true}) RETURN p")
    assert bare(q) == sq(
        "p",
        [Symbol("p", "paper", ("X",))],
        constraints=[C("p", "year", "=", 2015), C("p", "venue", "=", "ICML"), C("p", "open", "=", True)],
    )
    assert q.warnings == []


def test_property_map_without_braces_is_read() -> None:
    q = parse("MATCH (p:paper title: “High pressure”, year: 2017)<-[:w]-(a) RETURN a")
    assert bare(q) == sq(
        "a",
        [Symbol("p", "paper", ("High pressure",)), Symbol("a")],
        [Triplet("a", "w", "p")],
        [C("p", "year", "=", 2017)],
    )
    assert has(q, "without braces") and has(q, "typographic quotes")


# --- relationships ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("arrow", "triplet"),
    [
        ("-[:t]->", Triplet("a", "t", "b")),
        ("<-[:t]-", Triplet("b", "t", "a")),
        ("-[:t]-", Triplet("a", "t", "b", "undirected")),
        ("-[r:t]->", Triplet("a", "t", "b")),
        ("-->", Triplet("a", None, "b")),
        ("<--", Triplet("b", None, "a")),
        ("--", Triplet("a", None, "b", "undirected")),
        ("-[]->", Triplet("a", None, "b")),
        ("-[r]-", Triplet("a", None, "b", "undirected")),
        ("- [ :t ] ->", Triplet("a", "t", "b")),
    ],
)
def test_relationship_forms(arrow: str, triplet: Triplet) -> None:
    q = parse(f"MATCH (a){arrow}(b) RETURN a")
    assert bare(q) == sq("a", [Symbol("a"), Symbol("b")], [triplet])
    assert not has(q, "syntax error")


def test_both_arrows_and_one_dash_arrows_are_tolerated() -> None:
    q = parse("MATCH (a)<-[:t]->(b), (c)->(d) RETURN a")
    assert q.triplets == [Triplet("a", "t", "b", "undirected"), Triplet("c", None, "d")]
    assert has(q, "both ends") and has(q, "one-dash arrow")


def test_chain_gives_one_triplet_per_relationship() -> None:
    q = parse("MATCH (a)-[:x]->(b)<-[:y]-(c) RETURN b")
    assert q.triplets == [Triplet("a", "x", "b"), Triplet("c", "y", "b")]


def test_edge_type_alternation_gives_alternatives() -> None:
    q = parse("MATCH (a:author)-[:writes|reviews]->(p:paper {title: 'X'}) RETURN a")
    symbols = [Symbol("a", "author"), Symbol("p", "paper", ("X",))]
    assert bare(q) == sq(
        "a",
        symbols,
        [Triplet("a", None, "p")],
        alternatives=[
            sq("a", symbols, [Triplet("a", "writes", "p")]),
            sq("a", symbols, [Triplet("a", "reviews", "p")]),
        ],
    )
    assert parse("MATCH (a)-[:x|:y]->(b) RETURN a").alternatives[1].triplets == [Triplet("a", "y", "b")]


def test_alternation_over_the_cap_becomes_any_edge() -> None:
    types = "|".join(f"t{i}" for i in range(5))
    q = parse(f"MATCH (a)-[:{types}]->(b)-[:{types}]->(c) RETURN a")
    assert q.alternatives == []
    assert q.triplets == [Triplet("a", None, "b"), Triplet("b", None, "c")]
    assert has(q, "read as any edge type")


@pytest.mark.parametrize(
    ("length", "hops", "warned"),
    [
        ("*", (1, MAX_HOPS), True),
        ("*2", (2, 2), False),
        ("*1..2", (1, 2), False),
        ("*..3", (1, 3), False),
        ("*2..", (2, MAX_HOPS), True),
        ("*0..2", (1, 2), True),
        ("*1..9", (1, MAX_HOPS), True),
        ("*3..1", (1, 3), True),
    ],
)
def test_variable_length(length: str, hops: tuple[int, int], warned: bool) -> None:
    q = parse(f"MATCH (a)-[:cites{length}]->(b) RETURN a")
    assert q.triplets == [Triplet("a", "cites", "b", "out", *hops)]
    assert bool(q.warnings) == warned


def test_var_length_range_is_not_one_hop() -> None:
    q = parse("MATCH (a:paper)-[:cites*1..2]->(b:paper) RETURN b")
    assert q.triplets == [Triplet("a", "cites", "b", min_hops=1, max_hops=2)]
    assert parse("MATCH (a)-[*1..2]-(b) RETURN b").triplets == [Triplet("a", None, "b", "undirected", 1, 2)]


def test_path_variable_and_shortest_path_are_read_as_patterns() -> None:
    q = parse("MATCH path = shortestPath((a)-[:x*..2]->(b)) RETURN b")
    assert q.triplets == [Triplet("a", "x", "b", "out", 1, 2)]
    assert has(q, "path variable") and has(q, "plain pattern")


# --- literals -----------------------------------------------------------------------------------------------


def test_strings_with_both_quotes_and_escapes() -> None:
    q = parse(
        r"""MATCH (p) WHERE p.a = 'it\'s' AND p.b = "say \"hi\"" AND p.c = 'tab\there \u00e9 \\ \d' RETURN p"""
    )
    assert [c.value for c in q.constraints] == ["it's", 'say "hi"', "tab\there é \\ \\d"]


def test_numbers_with_decimals_and_negatives() -> None:
    q = parse("MATCH (p) WHERE p.a = 3 AND p.b = -2 AND p.c = 0.25 AND p.d = -1.5e3 AND p.e > - 4 RETURN p")
    assert [c.value for c in q.constraints] == [3, -2, 0.25, -1500.0, -4]
    assert type(q.constraints[0].value) is int


def test_dates_stay_strings() -> None:
    q = parse("MATCH (p) WHERE p.published >= date('2015-01-01') AND p.updated = '2016-02-03' RETURN p")
    assert q.constraints == [C("p", "published", ">=", "2015-01-01"), C("p", "updated", "=", "2016-02-03")]


def test_booleans_and_null() -> None:
    q = parse(
        "MATCH (p {open: TRUE, closed: false}) WHERE p.x = null AND p.y IS NULL AND p.z IS NOT NULL RETURN p"
    )
    assert q.constraints == [C("p", "open", "=", True), C("p", "closed", "=", False)]
    assert has(q, "comparison with null dropped") and has(q, "IS NULL condition dropped: p.y IS NULL")
    assert has(q, "p.z IS NOT NULL")


def test_comments_are_ignored() -> None:
    q = parse("MATCH (p:paper) // the papers\n/* block\ncomment */ WHERE p.year = 1 RETURN p")
    assert q.constraints == [C("p", "year", "=", 1)] and q.warnings == []


# --- WHERE operators ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("op", ["=", "<>", "<", "<=", ">", ">="])
def test_comparison_operators(op: str) -> None:
    q = parse(f"MATCH (p) WHERE p.year {op} 2000 RETURN p")
    assert q.constraints == [C("p", "year", op, 2000)]  # type: ignore[arg-type]


def test_not_equal_bang_and_reversed_comparison() -> None:
    q = parse("MATCH (p) WHERE p.a != 1 AND 2000 < p.year AND 'x' = p.venue RETURN p")
    assert q.constraints == [C("p", "a", "<>", 1), C("p", "year", ">", 2000), C("p", "venue", "=", "x")]


def test_between_is_read_as_a_range() -> None:
    q = parse("MATCH (p) WHERE p.year BETWEEN 2000 AND 2010 AND p.x = 1 RETURN p")
    assert q.constraints == [C("p", "year", ">=", 2000), C("p", "year", "<=", 2010), C("p", "x", "=", 1)]
    assert has(q, "BETWEEN")


@pytest.mark.parametrize("op", ["CONTAINS", "STARTS WITH", "ENDS WITH"])
def test_text_operators(op: str) -> None:
    q = parse(f"MATCH (p) WHERE p.abstract {op} 'rna' RETURN p")
    assert q.constraints == [C("p", "abstract", op, "rna")]  # type: ignore[arg-type]


def test_contains_on_a_name_key_stays_a_text_filter() -> None:
    q = parse("MATCH (p:paper) WHERE p.title CONTAINS 'graph' AND p.name STARTS WITH 'G' RETURN p")
    assert bare(q) == sq(
        "p",
        [Symbol("p", "paper")],
        constraints=[C("p", "title", "CONTAINS", "graph"), C("p", "name", "STARTS WITH", "G")],
    )
    assert not q.symbols["p"].is_constant


def test_contains_on_a_bare_variable_is_a_text_constraint() -> None:
    q = parse("MATCH (p:paper) WHERE p CONTAINS 'quantum' RETURN p")
    assert bare(q) == sq("p", [Symbol("p", "paper")], text=["quantum"])
    assert has(q, "whole node")


def test_in_list_gives_several_names() -> None:
    q = parse("MATCH (g:gene) WHERE g.name IN ['IGF1', \"TP53\"] AND g.score IN [1, 2.5] RETURN g")
    assert bare(q) == sq(
        "g", [Symbol("g", "gene", ("IGF1", "TP53"))], constraints=[C("g", "score", "IN", (1, 2.5))]
    )


def test_in_edge_cases() -> None:
    q = parse("MATCH (p) WHERE p.a IN [] AND p.b IN 3 AND p.c IN [1, null] RETURN p")
    assert q.constraints == [C("p", "b", "=", 3), C("p", "c", "IN", (1,))]
    assert has(q, "empty list")


def test_regex_match_is_an_attribute_constraint() -> None:
    q = parse("MATCH (p:paper) WHERE p.title =~ '(?i).*graph.*' AND p.venue =~ 'IC.*' RETURN p")
    assert bare(q) == sq(
        "p",
        [Symbol("p", "paper")],
        constraints=[
            C("p", "title", "=~", "(?i).*graph.*", case_insensitive=True),
            C("p", "venue", "=~", "IC.*", case_insensitive=False),
        ],
    )
    q = parse("MATCH (p) WHERE p.title =~ '(unclosed' RETURN p")
    assert q.constraints == [] and has(q, "invalid regular expression")


def test_tolower_gives_case_insensitive_filters() -> None:
    q = parse("MATCH (p) WHERE toLower(p.title) CONTAINS 'graph' AND toUpper(p.code) = toUpper('ab') RETURN p")
    assert q.constraints == [
        C("p", "title", "CONTAINS", "graph", case_insensitive=True),
        C("p", "code", "=", "AB", case_insensitive=True),
    ]
    q = parse("MATCH (p:paper) WHERE toLower(p.title) = 'graph networks' RETURN p")
    assert q.symbols["p"].names == ("graph networks",)


def test_not_is_dropped_with_warning() -> None:
    q = parse("MATCH (p) WHERE NOT p.year = 2000 AND p.venue = 'X' RETURN p")
    assert q.constraints == [C("p", "venue", "=", "X")]
    assert has(q, "NOT condition dropped: NOT p.year = 2000")


def test_parentheses() -> None:
    q = parse("MATCH (p) WHERE ((p.a = 1) AND (p.b = 2 AND (p.c = 3))) RETURN p")
    assert q.constraints == [C("p", "a", "=", 1), C("p", "b", "=", 2), C("p", "c", "=", 3)]
    assert q.alternatives == []


def test_unsupported_conditions_are_dropped_not_misread() -> None:
    q = parse("MATCH (p {title: $t})-[r:x]->(q) WHERE p.x = q.y AND r.since = 3 AND p.a + 1 = 2 RETURN p")
    assert q.constraints == [] and q.triplets == [Triplet("p", "x", "q")]
    assert has(q, "p.title = $t") and has(q, "p.x = q.y") and has(q, "relationship property")


def test_label_predicate_and_pattern_predicate_in_where() -> None:
    q = parse("MATCH (p) WHERE p:paper AND (p)-[:cites]->(:paper {title: 'Z'}) RETURN p")
    assert bare(q) == sq("p", [Symbol("p", "paper"), Symbol("_1", "paper", ("Z",))], [Triplet("p", "cites", "_1")])


def test_inline_node_where() -> None:
    q = parse("MATCH (p:paper WHERE p.year > 2000)-->(q) RETURN q")
    assert q.constraints == [C("p", "year", ">", 2000)] and q.triplets == [Triplet("p", None, "q")]


# --- OR -----------------------------------------------------------------------------------------------------


def test_or_becomes_alternatives_never_and() -> None:
    q = parse(
        "MATCH (p:paper)-[:cites]->(q:paper) WHERE p.year = 2015 AND (p.venue = 'A' OR q.title = 'Y') RETURN p"
    )
    symbols = [Symbol("p", "paper"), Symbol("q", "paper")]
    triplets = [Triplet("p", "cites", "q")]
    year = C("p", "year", "=", 2015)
    assert bare(q) == sq(
        "p",
        symbols,
        triplets,
        [year],
        alternatives=[
            sq("p", symbols, triplets, [year, C("p", "venue", "=", "A")]),
            sq("p", [Symbol("p", "paper"), Symbol("q", "paper", ("Y",))], triplets, [year]),
        ],
    )


def test_or_of_equalities_on_one_property_is_in() -> None:
    q = parse("MATCH (d:disease) WHERE d.name = 'asthma' OR d.name = 'copd' OR d.name IN ['flu'] RETURN d")
    assert bare(q) == sq("d", [Symbol("d", "disease", ("asthma", "copd", "flu"))])


def test_or_distributes_into_a_union_of_conjunctions() -> None:
    q = parse("MATCH (p) WHERE (p.a = 1 OR p.b = 2) AND (p.c = 3 OR p.d = 4) RETURN p")
    assert [[(c.attribute, c.value) for c in a.constraints] for a in q.alternatives] == [
        [("a", 1), ("c", 3)],
        [("a", 1), ("d", 4)],
        [("b", 2), ("c", 3)],
        [("b", 2), ("d", 4)],
    ]
    assert q.constraints == [] and all(a.warnings == [] and a.alternatives == [] for a in q.alternatives)


def test_or_with_a_dropped_branch_relaxes_instead_of_restricting() -> None:
    q = parse("MATCH (p) WHERE p.year = 2000 OR NOT p.open = true RETURN p")
    assert q.constraints == [] and q.alternatives == []
    assert has(q, "NOT condition dropped")


def test_or_too_large_is_dropped_with_warning() -> None:
    ors = " AND ".join(f"(p.a{i} = 1 OR p.b{i} = 2)" for i in range(5))  # 32 alternatives
    q = parse(f"MATCH (p) WHERE p.x = 0 AND {ors} RETURN p")
    assert len(q.alternatives) == MAX_ALTERNATIVES
    assert has(q, "OR condition dropped")
    assert all(C("p", "x", "=", 0) in a.constraints for a in q.alternatives)


def test_xor_is_dropped() -> None:
    q = parse("MATCH (p) WHERE p.a = 1 XOR p.b = 2 RETURN p")
    assert q.constraints == [] and q.alternatives == [] and has(q, "XOR condition dropped")


# --- constants and the schema -------------------------------------------------------------------------------


def test_name_keys_follow_the_schema() -> None:
    q = parse(
        "MATCH (a:author {DisplayName: 'Ada'})-[:author_writes_paper]->(p:paper) "
        "WHERE p.title = 'Notes' AND a.name = 'Lovelace' AND p.year = 1843 RETURN p",
        schema=SCHEMA,
    )
    assert bare(q) == sq(
        "p",
        [Symbol("a", "author", ("Ada", "Lovelace")), Symbol("p", "paper", ("Notes",))],
        [Triplet("a", "author_writes_paper", "p")],
        [C("p", "year", "=", 1843)],
    )
    assert q.warnings == []
    assert parse("MATCH (a:author) WHERE a.DisplayName = 'Ada' RETURN a").constraints == [
        C("a", "DisplayName", "=", "Ada")
    ]


def test_strict_drops_unknown_labels_and_edge_types() -> None:
    q = parse("MATCH (p:Papers)-[:AuthorWritesPaper]-(a:author {name: 'Ada'}) RETURN p", schema=SCHEMA)
    assert bare(q) == sq("p", [Symbol("p", None), Symbol("a", "author", ("Ada",))])
    assert has(q, "label 'Papers' is not in the schema and was dropped (strict)")
    assert has(q, "edge type 'AuthorWritesPaper' is not in the schema")


def test_lenient_maps_unknown_types_to_similar_ones() -> None:
    q = parse(
        "MATCH (p:Papers)-[:AuthorWritesPaper]-(a:author {name: 'Ada'})-->(f:field_of_study) RETURN p",
        schema=SCHEMA,
        mode="lenient",
    )
    assert bare(q) == sq(
        "p",
        [Symbol("p", "paper"), Symbol("a", "author", ("Ada",)), Symbol("f", "field of study")],
        [Triplet("p", "author_writes_paper", "a", "undirected"), Triplet("a", None, "f")],
    )
    assert has(q, "mapped to 'paper' (lenient)") and has(q, "mapped to 'field of study' (lenient)")
    q = parse("MATCH (x:spaceship)-[:zooms]->(p:paper) RETURN x", schema=SCHEMA, mode="lenient")
    assert bare(q) == sq("x", [Symbol("x"), Symbol("p", "paper")], [Triplet("x", None, "p")])


def test_lenient_uses_the_similarity_function() -> None:
    calls: list[tuple[str, list[str]]] = []

    def similar(name: str, candidates: list[str]) -> str | None:
        calls.append((name, candidates))
        return {"artikel": "paper", "wrote": "author_writes_paper", "bad": "not-a-type"}.get(name)

    q = parse(
        "MATCH (a)-[:wrote]->(p:artikel), (b:bad) RETURN p", schema=SCHEMA, mode="lenient", similarity=similar
    )
    assert q.symbols["p"].type == "paper" and q.symbols["b"].type is None
    assert q.triplets == [Triplet("a", "author_writes_paper", "p")]
    assert ("artikel", SCHEMA.node_type_names) in calls

    def broken(name: str, candidates: list[str]) -> str | None:
        raise RuntimeError("boom")

    q = parse("MATCH (p:Papers) RETURN p", schema=SCHEMA, mode="lenient", similarity=broken)
    assert q.symbols["p"].type == "paper" and has(q, "similarity function failed")


def test_closest_type_normalisation() -> None:
    names = SCHEMA.node_type_names
    assert closest_type("Papers", names) == "paper"
    assert closest_type("FieldOfStudy", names) == "field of study"
    assert closest_type("protein_gene", names) == "gene/protein"
    assert closest_type("diseases", names) == "disease"
    assert closest_type("institutoin", names) == "institution"
    assert closest_type("spaceship", names) is None


def test_edge_direction_is_checked_against_signatures() -> None:
    q = parse("MATCH (p:paper)-[:author_writes_paper]->(a:author) RETURN p", schema=SCHEMA)
    assert q.triplets == [Triplet("a", "author_writes_paper", "p")] and has(q, "flipped")
    q = parse("MATCH (p:paper)-[:associated_with]->(a:author) RETURN p", schema=SCHEMA)
    assert q.triplets == [] and has(q, "triplet dropped (strict)")
    q = parse("MATCH (p:paper)-[:associated_with]->(a:author) RETURN p", schema=SCHEMA, mode="lenient")
    assert q.triplets == [Triplet("p", "associated_with", "a")] and has(q, "kept (lenient)")
    q = parse("MATCH (p:paper)-[:author_writes_paper]-(a) RETURN p", schema=SCHEMA)
    assert q.triplets == [Triplet("p", "author_writes_paper", "a", "undirected")] and q.warnings == []


def test_strict_alternation_keeps_only_possible_types() -> None:
    q = parse("MATCH (a:author)-[:author_writes_paper|cites|bogus]->(p:paper) RETURN p", schema=SCHEMA)
    assert bare(q) == sq(
        "p", [Symbol("a", "author"), Symbol("p", "paper")], [Triplet("a", "author_writes_paper", "p")]
    )
    assert has(q, "'bogus' is not in the schema")


# --- text around the query, errors, garbage -----------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "Here is the query: ```cypher\nMATCH (p:paper) RETURN p\n```",
        "Here is the query:\n```cypher\nMATCH (p:paper) RETURN p\n```\nThis finds the papers.",
        "```\nMATCH (p:paper) RETURN p\n```",
        "```MATCH (p:paper) RETURN p```",
        "Sure! The Cypher query is: MATCH (p:paper) RETURN p",
        "MATCH (p:paper) RETURN p\n\nThis query returns every paper.",
        "MATCH (p:paper) RETURN p;",
        "```cypher\nMATCH (p:paper) RETURN p",
        "MATCH (p:paper)\nRETURN p\n```\nExplanation: it returns papers.",
        '{"query": "MATCH (p:paper) RETURN p"}',
    ],
)
def test_fences_and_prose_are_stripped(text: str) -> None:
    q, error = parse_cypher_or_error(text)
    assert error is None and q is not None
    assert bare(q) == sq("p", [Symbol("p", "paper")])


def test_first_of_several_query_blocks() -> None:
    q = parse("```cypher\nMATCH (a:author) RETURN a\n```\nor\n```cypher\nMATCH (p:paper) RETURN p\n```")
    assert q.target == "a" and has(q, "only the first is read")


@pytest.mark.parametrize(
    "text", ["", "   ", "hello world", "I cannot answer that.", "))((", "{'a': 1}", "```\n```", "\x00\x01"]
)
def test_garbage_gives_an_empty_query_with_warnings(text: str) -> None:
    q = parse(text)
    assert bare(q) == sq("", [])
    assert q.warnings
    query, error = parse_cypher_or_error(text)
    assert query is None and error


def test_non_text_input() -> None:
    q = parse_cypher(None)  # type: ignore[arg-type]
    assert q.target == "" and q.warnings == ["expected text, got NoneType"]


def test_syntax_error_message_for_the_repair_round() -> None:
    assert parse_cypher_or_error("MATCH (p:paper RETURN p") == (
        None,
        "line 1, column 16: expected ')' closing the node but found 'RETURN'",
    )
    assert (
        parse_cypher_or_error("MATCH (p) WHERE p.title = 'x RETURN p")[1]
        == "line 1, column 27: unterminated string"
    )
    assert parse_cypher_or_error("MATCH (p:paper) DELETE p")[1] == (
        "line 1, column 17: unsupported clause DELETE: only MATCH, WHERE, WITH and RETURN are read"
    )
    q = parse("MATCH (p:paper RETURN p")
    assert has(q, "syntax error: line 1, column 16")


def test_recovery_keeps_intact_and_conjuncts() -> None:
    q = parse("MATCH (p:paper) WHERE p.year = 2015 AND p.title CONTAINS 'x' AND foo((( RETURN p")
    assert bare(q) == sq(
        "p", [Symbol("p", "paper")], constraints=[C("p", "year", "=", 2015), C("p", "title", "CONTAINS", "x")]
    )
    assert has(q, "unreadable WHERE conjunct dropped")


def test_recovery_never_keeps_half_an_or() -> None:
    q = parse("MATCH (p:paper) WHERE p.year = 2015 OR foo((( RETURN p")
    assert bare(q) == sq("p", [Symbol("p", "paper")])
    assert has(q, "dropped after a syntax error")
    q = parse("MATCH (p:paper) WHERE p.year = 2015 || p.year = 2016 RETURN p")
    assert q.constraints == [] and q.alternatives == []


def test_recovery_skips_a_broken_clause() -> None:
    q = parse("MATCH (a:author)-[:writes]->(p:paper)\nMATCH (p)-[:cites->(q)\nRETURN p")
    assert bare(q) == sq("p", [Symbol("a", "author"), Symbol("p", "paper")], [Triplet("a", "writes", "p")])
    assert has(q, "syntax error")


def test_deep_nesting_is_an_error_not_a_crash() -> None:
    q, error = parse_cypher_or_error("MATCH (p) WHERE " + "(" * 5000 + "p.a = 1" + ")" * 5000 + " RETURN p")
    assert q is None and error is not None and "nesting deeper" in error
    q2 = parse("MATCH (p) WHERE " + "NOT " * 3000 + "p.a = 1 RETURN p")
    assert q2.target == "p"


@pytest.mark.parametrize(
    "where",
    [
        "p.a = " + "1 + " * 3000 + "1",
        "p" + ".a" * 5000 + " = 1",
        "p.a = " * 2500 + "1",
        "p.a = 1" + "[0]" * 5000,
        "p.a = " + "9" * 5000,
        "[" * 3000,
    ],
)
def test_pathological_expressions_are_errors(where: str) -> None:
    q, error = parse_cypher_or_error(f"MATCH (p) WHERE {where} RETURN p")
    assert q is None and error is not None
    assert parse(f"MATCH (p) WHERE {where} RETURN p").target == "p"


def test_many_alternations_do_not_explode() -> None:
    pats = ", ".join(f"(a{i})-[:a|b|c|d|e]->(b{i})" for i in range(30))  # 5**30 combinations
    q = parse(f"MATCH {pats} RETURN a0")
    assert q.alternatives == [] and len(q.triplets) == 30 and has(q, "read as any edge type")


def test_long_input_is_truncated() -> None:
    q = parse("MATCH (p:paper) RETURN p " + "x" * 30_000)
    assert q.target == "p" and has(q, "truncated")


def test_write_clauses_are_errors() -> None:
    for text in ["CREATE (p:paper) RETURN p", "MATCH (p) SET p.x = 1 RETURN p", "MERGE (p:paper) RETURN p"]:
        query, error = parse_cypher_or_error(text)
        assert query is None and error is not None and "unsupported clause" in error


# --- fuzzing --------------------------------------------------------------------------------------------------

VARS = ["p", "a", "b", "_x", "`odd name`", "match", "n1"]
LABELS = ["paper", "author", "Papers", "`gene/protein`", "gene/protein", "field_of_study", "`field of study`", "x"]
EDGES = ["cites", "author_writes_paper", "writes", "a|b", "cites|bogus", "`has topic`", "is_effect/phenotype_of"]
KEYS = ["name", "title", "year", "DisplayName", "`odd key`", "score"]
STRINGS = ["'x'", '"y"', "'it\\'s'", '"a\\"b"', "'\\u00e9'", "'2015-01-01'", "''", "'(?i).*x'", "'(bad'"]
STRINGS += ["“q”"]
NUMBERS = ["1", "-2", "3.5", "-0.25", "1e3", "2015"]
LITERALS = [*STRINGS, *NUMBERS, "true", "FALSE", "null", "date('2015-01-01')", "$param"]
VOCAB = [
    "MATCH", "OPTIONAL", "WHERE", "WITH", "RETURN", "UNION", "AND", "OR", "XOR", "NOT", "IN", "IS", "NULL",
    "CONTAINS", "STARTS", "ENDS", "DISTINCT", "LIMIT", "ORDER", "BY", "AS", "CREATE", "DELETE", "BETWEEN",
    "(", ")", "[", "]", "{", "}", ":", ",", ".", "..", "|", "*", "=", "<>", "<", ">", "<=", ">=", "=~", "-",
    "->", "<-", "--", ";", "`", "'", '"', "```", "toLower(", "count(", "//", "/*", "\n",
    *VARS, *LABELS, *KEYS, *LITERALS,
]  # fmt: skip

lists = st.lists(st.sampled_from(LITERALS), max_size=3).map(lambda xs: "[" + ", ".join(xs) + "]")
literal = st.one_of(st.sampled_from(LITERALS), lists)
prop = st.builds(lambda v, k: f"{v}.{k}", st.sampled_from(VARS), st.sampled_from(KEYS))
maybe = st.booleans()


@st.composite
def node(draw: st.DrawFn) -> str:
    var = draw(st.sampled_from(["", *VARS]))
    labels = "".join(":" + draw(st.sampled_from(LABELS)) for _ in range(draw(st.integers(0, 2))))
    props = ""
    if draw(maybe):
        items = [f"{draw(st.sampled_from(KEYS))}:{draw(st.sampled_from(['', ' ']))}{draw(literal)}"]
        items += [f"{draw(st.sampled_from(KEYS))}: {draw(literal)}" for _ in range(draw(st.integers(0, 2)))]
        props = draw(st.sampled_from(["", " "])) + "{" + ", ".join(items) + "}"
    return f"({var}{labels}{props})"


@st.composite
def rel(draw: st.DrawFn) -> str:
    detail = ""
    if draw(maybe):
        var = draw(st.sampled_from(["", "r"]))
        types = ":" + draw(st.sampled_from(EDGES)) if draw(maybe) else ""
        length = draw(st.sampled_from(["", "", "*", "*2", "*1..2", "*..3", "*2..", "*0..9", "*1.5"]))
        detail = f"[{var}{types}{length}]"
    left, right = draw(st.sampled_from([("-", "->"), ("<-", "-"), ("-", "-"), ("<-", "->")]))
    return f"{left}{detail}{right}" if detail else draw(st.sampled_from(["-->", "<--", "--", "->"]))


@st.composite
def chain(draw: st.DrawFn) -> str:
    out = draw(node())
    for _ in range(draw(st.integers(0, 3))):
        out += draw(rel()) + draw(node())
    return out


atom = st.one_of(
    st.builds(
        lambda p, o, v: f"{p} {o} {v}",
        prop,
        st.sampled_from(["=", "<>", "<", "<=", ">", ">=", "!=", "=~"]),
        literal,
    ),
    st.builds(
        lambda p, o, v: f"{p} {o} {v}",
        prop,
        st.sampled_from(["CONTAINS", "STARTS WITH", "ENDS WITH", "IN"]),
        literal,
    ),
    st.builds(lambda v, p: f"{v} = {p}", literal, prop),
    st.builds(lambda p, v: f"toLower({p}) CONTAINS {v}", prop, literal),
    st.builds(lambda p: f"{p} IS NOT NULL", prop),
    st.builds(lambda v, lb: f"{v}:{lb}", st.sampled_from(VARS), st.sampled_from(LABELS)),
    st.builds(lambda v, s: f"{v} CONTAINS {s}", st.sampled_from(VARS), st.sampled_from(STRINGS)),
    chain(),
)
condition = st.recursive(
    atom,
    lambda inner: st.one_of(
        st.builds(
            lambda a, b, o: f"{a} {o} {b}", inner, inner, st.sampled_from(["AND", "OR", "XOR", "and", "or"])
        ),
        st.builds(lambda a: f"NOT {a}", inner),
        st.builds(lambda a: f"({a})", inner),
    ),
    max_leaves=8,
)


@st.composite
def query(draw: st.DrawFn) -> str:
    parts = []
    for _ in range(draw(st.integers(1, 2))):
        clauses = []
        for _ in range(draw(st.integers(0, 3))):
            kw = draw(st.sampled_from(["MATCH", "MATCH", "OPTIONAL MATCH", "match"]))
            pats = ", ".join(draw(st.lists(chain(), min_size=1, max_size=2)))
            where = f" WHERE {draw(condition)}" if draw(maybe) else ""
            clauses.append(f"{kw} {pats}{where}")
        if draw(maybe):
            clauses.append(f"WITH {draw(st.sampled_from(VARS))} AS {draw(st.sampled_from(VARS))}")
        ret = draw(st.sampled_from(["", "DISTINCT "])) + draw(st.sampled_from([*VARS, "p.title", "count(p)", "*"]))
        ret += draw(st.sampled_from(["", " LIMIT 10", " ORDER BY p.year"]))
        if draw(st.integers(0, 9)):
            clauses.append(f"RETURN {ret}")
        parts.append(draw(st.sampled_from(["\n", " "])).join(clauses))
    text = " UNION ".join(parts)
    # near misses: splice random vocabulary tokens into the grammar-shaped query
    if draw(st.integers(0, 2)) == 0:
        words = text.split(" ")
        for _ in range(draw(st.integers(1, 3))):
            pos = draw(st.integers(0, len(words)))
            words.insert(pos, draw(st.sampled_from(VOCAB)))
        text = " ".join(words)
    wrap = draw(st.sampled_from(["{}", "```cypher\n{}\n```", "Here is the query: {}", "{}\nThis query ..."]))
    return wrap.replace("{}", text)


random_tokens = st.lists(st.sampled_from(VOCAB), max_size=40).map(" ".join)


def check(text: str) -> None:
    """The invariants: never raises, no internal error, a well-formed model."""
    for schema, mode in [(None, "strict"), (SCHEMA, "strict"), (SCHEMA, "lenient")]:
        q = parse_cypher(text, schema, mode=mode)  # type: ignore[arg-type]
        assert isinstance(q, StructuredQuery)
        assert not has(q, "internal parser error"), (text, q.warnings)
        assert len(q.alternatives) <= MAX_ALTERNATIVES
        for sub in [q, *q.alternatives]:
            assert sub is q or sub.alternatives == []
            assert sub.target == "" or sub.target in sub.symbols or has(q, "is a relationship")
            for t in sub.triplets:
                assert t.head in sub.symbols and t.tail in sub.symbols
                assert 1 <= t.min_hops <= t.max_hops <= MAX_HOPS and t.direction in ("out", "undirected")
                if schema is not None:
                    assert t.edge is None or schema.has_edge_type(t.edge)
            for c in sub.constraints:
                assert c.symbol in sub.symbols
                assert isinstance(c.value, tuple) == (c.op == "IN") and c.value != ()
            for s in sub.symbols.values():
                assert all(isinstance(n, str) and n.strip() for n in s.names)
                if schema is not None:
                    assert s.type is None or schema.has_node_type(s.type)
        clean, error = parse_cypher_or_error(text, schema, mode=mode)  # type: ignore[arg-type]
        assert (clean is None) != (error is None)
        assert error is None or isinstance(error, str)


FAST = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(st.text(max_size=300))
def test_fuzz_arbitrary_text(text: str) -> None:
    check(text)


@FAST
@given(query())
def test_fuzz_grammar_shaped_queries(text: str) -> None:
    check(text)


@FAST
@given(random_tokens)
def test_fuzz_random_token_soup(text: str) -> None:
    check(text)


@pytest.mark.slow
@pytest.mark.timeout(1800)  # 20,000 examples: 7 min alone on two cores, over 10 when they are shared
@settings(
    max_examples=20_000, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
@given(st.one_of(query(), random_tokens, st.text(max_size=500)))
def test_fuzz_long(text: str) -> None:
    check(text)
