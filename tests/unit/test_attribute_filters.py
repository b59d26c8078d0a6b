"""The attribute catalog and step 4's hard filters, on hand-built node tables and the real biomed sample."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from skbqa.query.structured import AttributeConstraint, Operator
from skbqa.skb.loaders import load_skb
from skbqa.skb.schema import NodeType, Schema
from skbqa.stages.symbols.filters import FilterResult, apply_constraints
from skbqa.stores.attributes.catalog import AttributeCatalog
from skbqa.stores.attributes.values import name_tokens, parse_date, parse_number
from skbqa.stores.nodes import NodeTable

REPO = Path(__file__).resolve().parents[2]

# One node per line, [type, name, text, attrs]; ids equal positions (0-5 papers, 6-8 authors, 9-12 genes).
_NODES_JSONL = """
["paper", "Graph retrieval at scale", "We study graph retrieval.", {"year": 2010, "published": "2010-05-03", "pages": "12", "language": "English", "keywords": "graph; retrieval", "rating": 4.5, "open_access": true, "country": "Germany"}]
["paper", "Retrieval with LLMs", "Language models retrieve.", {"year": "2012", "published": "2012-01-05", "pages": "300", "language": "german", "keywords": "retrieval; llm", "open_access": false}]
["paper", "Language models", "", {"year": 2015, "published": "2015", "pages": 45, "language": "English ", "keywords": "llm"}]
["paper", "Ranking", "", {"year": 2015.0, "published": "2015-12-31", "language": "French"}]
["paper", "Untitled", "", {"published": "2016-02", "pages": null}]
["paper", "Scale-free graphs", "", {"year": 2020, "published": "2020-07-01", "pages": "7", "language": "English", "doi": "10.1/abc"}]
["author", "Ada", "", {"country": "Germany", "h_index": "12"}]
["author", "Bob", "", {"country": "USA", "h_index": 3}]
["author", "Cy", "", {}]
["gene", "erb-b2 receptor tyrosine kinase 2", "", {"symbol": "ERBB2", "chromosome": "17", "aliases": "CD340, HER-2, HER2", "gene_type": "protein-coding", "entrez_id": 2064, "ensembl_ids": "ENSG00000141736"}]
["gene", "tumor protein p53", "", {"symbol": "TP53", "chromosome": 17, "aliases": "LFS1, P53", "gene_type": "protein-coding", "entrez_id": "7157", "ensembl_ids": "ENSG00000141510, ENSG00000999999"}]
["gene", "X gene", "", {"symbol": "XG", "chromosome": "X", "gene_type": "protein-coding", "entrez_id": 7499}]
["gene", "pseudoautosomal region", "", {"symbol": "PAR1", "chromosome": "X,Y", "aliases": "PAR", "gene_type": "pseudo"}]
"""
Node = tuple[str, str, str, dict[str, Any]]
NODES: list[Node] = [tuple(json.loads(line)) for line in _NODES_JSONL.strip().splitlines()]  # type: ignore[misc]
TYPES = ["paper", "author", "gene"]


def _table(nodes: list[Node], types: list[str] = TYPES) -> NodeTable:
    schema = Schema("test", "", [NodeType(t, name_attr="title" if t == "paper" else "name") for t in types], [])
    return NodeTable(
        schema,
        np.arange(len(nodes), dtype=np.int64),
        np.array([types.index(n[0]) for n in nodes], np.int16),
        [n[1] for n in nodes],
        [n[2] for n in nodes],
        [dict(n[3]) for n in nodes],
    )


@pytest.fixture(scope="module")
def catalog() -> AttributeCatalog:
    return AttributeCatalog.build(_table(NODES))


def _c(attribute: str, op: Operator, value: Any, ci: bool = False) -> AttributeConstraint:
    return AttributeConstraint("x", attribute, op, value, ci)


def _run(catalog: AttributeCatalog, node_type: str | None, *constraints: AttributeConstraint) -> FilterResult:
    return apply_constraints(catalog, list(constraints), node_type)


def _pos(catalog: AttributeCatalog, node_type: str | None, attribute: str, op: Operator, value: Any) -> list[int]:
    result = _run(catalog, node_type, _c(attribute, op, value))
    assert not result.not_applied, result.not_applied
    assert result.positions is not None
    assert result.positions.dtype == np.int64
    return result.positions.tolist()


def _reason(catalog: AttributeCatalog, node_type: str | None, attribute: str, op: Operator, value: Any) -> str:
    result = _run(catalog, node_type, _c(attribute, op, value))
    assert result.positions is None and not result.applied
    (only,) = result.not_applied
    return only.reason


# ------------------------------------------------------------------------------------------------ catalog


def test_catalog_infers_kinds_and_counts_present_values(catalog: AttributeCatalog) -> None:
    kinds = {c.key: c.kind for c in catalog.columns("paper")}
    assert kinds["year"] == "numeric"
    assert kinds["published"] == "date"
    assert kinds["pages"] == "numeric"  # strings and ints mixed
    assert kinds["language"] == "categorical"
    assert kinds["keywords"] == "list"
    assert kinds["open_access"] == "boolean"
    aliases = catalog.column("gene", "aliases")
    assert aliases is not None and aliases.kind == "list"
    year = catalog.column("paper", "year")
    pages = catalog.column("paper", "pages")
    assert year is not None and pages is not None
    assert year.count == 5 and pages.count == 4  # a missing key and a null are both absent
    assert pages.positions.tolist() == [0, 1, 2, 5]
    assert year.numeric is not None
    assert year.numeric.positions.tolist() == [0, 1, 2, 3, 5]
    assert year.numeric.values.tolist() == [2010, 2012, 2015, 2015, 2020]
    language = catalog.column("paper", "language")
    assert language is not None and sorted(language.vocab) == ["english", "french", "german"]  # "English " merged


def test_catalog_columns_are_per_type(catalog: AttributeCatalog) -> None:
    assert {c.node_type for c in catalog.columns_for(None, "country")} == {"paper", "author"}
    assert [c.node_type for c in catalog.columns_for("author", "country")] == ["author"]
    assert catalog.columns_for("gene", "country") == []
    assert catalog.type_positions("author").tolist() == [6, 7, 8]
    assert catalog.type_positions(None).tolist() == list(range(len(NODES)))


@pytest.mark.parametrize(
    ("node_type", "name", "key"),
    [
        ("paper", "year", "year"),
        ("paper", "YEAR", "year"),
        ("paper", "Publication Year", "year"),  # same head noun beats `published`
        ("paper", "publication date", "published"),
        ("paper", "number of pages", "pages"),
        ("paper", "page count", "pages"),
        ("paper", "Open Access", "open_access"),
        ("paper", "openAccess", "open_access"),
        ("author", "hIndex", "h_index"),
        (None, "h-index", "h_index"),
        ("gene", "type", "gene_type"),
        ("gene", "chromosome number", "chromosome"),
        ("gene", "Entrez ID", "entrez_id"),
        ("gene", "ensembl id", "ensembl_ids"),
        ("gene", "id", None),  # ambiguous between entrez_id and ensembl_ids
        ("paper", "venue", None),
        ("paper", "h_index", None),  # exists, but not on papers
    ],
)
def test_resolve_attribute(catalog: AttributeCatalog, node_type: str | None, name: str, key: str | None) -> None:
    assert catalog.resolve_attribute(node_type, name) == key


def test_value_mentions_list_small_vocabularies_in_stored_spelling(catalog: AttributeCatalog) -> None:
    mentions = {m.key: m for m in catalog.value_mentions("gene")}
    assert mentions["gene_type"].label == "gene type"
    assert mentions["gene_type"].values == ("protein-coding", "pseudo")
    assert mentions["gene_type"].counts == (3, 1)
    assert "17" in mentions["chromosome"].values and "Y" in mentions["chromosome"].values  # items of "X,Y"
    assert "entrez_id" not in mentions  # numeric
    paper = {m.key: m for m in catalog.value_mentions("paper")}
    assert set(paper["language"].values) == {"English", "german", "French"}
    assert "year" not in paper and "published" not in paper
    assert {m.node_type for m in catalog.value_mentions(None)} == {"paper", "author", "gene"}


# ------------------------------------------------------------------------------------------------ equality


def test_equality_is_case_insensitive_and_numbers_compare_as_numbers(catalog: AttributeCatalog) -> None:
    assert _pos(catalog, "paper", "language", "=", "ENGLISH") == [0, 2, 5]
    assert _pos(catalog, "paper", "year", "=", 2015) == [2, 3]
    assert _pos(catalog, "paper", "year", "=", "2015") == [2, 3]  # 2015 and 2015.0 stored
    assert _pos(catalog, "paper", "pages", "=", 12) == [0]  # stored as "12"
    assert _pos(catalog, "paper", "pages", "=", "12.0") == [0]
    assert _pos(catalog, "gene", "entrez_id", "=", 7157) == [10]  # stored as "7157"
    assert _pos(catalog, "gene", "chromosome", "=", 17) == [9, 10]  # "17" and 17 stored


def test_equality_matches_list_items_and_tolerates_punctuation(catalog: AttributeCatalog) -> None:
    assert _pos(catalog, "gene", "aliases", "=", "her2") == [9]
    assert _pos(catalog, "gene", "aliases", "=", "HER 2") == [9]  # punctuation-blind fallback
    assert _pos(catalog, "gene", "aliases", "=", "PAR") == [12]  # a one-item value
    assert _pos(catalog, "gene", "chromosome", "=", "x") == [11, 12]  # "X,Y" lists X
    assert _pos(catalog, "paper", "keywords", "=", "retrieval") == [0, 1]
    assert _pos(catalog, "paper", "keywords", "=", "graph; retrieval") == [0]
    assert _pos(catalog, "gene", "gene_type", "=", "protein coding") == [9, 10, 11]


def test_in_and_not_equal(catalog: AttributeCatalog) -> None:
    assert _pos(catalog, "paper", "language", "IN", ("German", "french")) == [1, 3]
    assert _pos(catalog, "paper", "language", "IN", ("German", "Klingon")) == [1]
    # <> keeps only nodes that have the attribute (node 4 has no language)
    assert _pos(catalog, "paper", "language", "<>", "english") == [1, 3]
    assert _pos(catalog, "paper", "keywords", "<>", "llm") == [0]


def test_booleans(catalog: AttributeCatalog) -> None:
    assert _pos(catalog, "paper", "open_access", "=", True) == [0]
    assert _pos(catalog, "paper", "open_access", "=", "TRUE") == [0]
    assert _pos(catalog, "paper", "open_access", "<>", True) == [1]


def test_booleans_and_numbers_in_one_column_stay_apart() -> None:
    nodes: list[Node] = [
        ("paper", "a", "", {"flag": True}),
        ("paper", "b", "", {"flag": 1}),
        ("paper", "c", "", {"flag": 0}),
    ]
    catalog = AttributeCatalog.build(_table(nodes))
    assert _pos(catalog, "paper", "flag", "=", True) == [0]
    assert _pos(catalog, "paper", "flag", "=", 1) == [1]


# ------------------------------------------------------------------------------------------------ ranges


def test_numeric_ranges(catalog: AttributeCatalog) -> None:
    assert _pos(catalog, "paper", "year", ">=", 2012) == [1, 2, 3, 5]  # "2012" is a number too
    assert _pos(catalog, "paper", "year", ">", 2015) == [5]
    assert _pos(catalog, "paper", "year", "<", "2012") == [0]
    assert _pos(catalog, "paper", "pages", "<", 50) == [0, 2, 5]  # not lexicographic: "300" > 50
    assert _pos(catalog, "paper", "pages", "<=", "45") == [0, 2, 5]
    assert _pos(catalog, "author", "h_index", ">", 5) == [6]
    assert _pos(catalog, "paper", "year", ">", 2100) == []  # an empty range is a real answer, not "unknown"


def test_dates_compare_at_the_coarser_granularity(catalog: AttributeCatalog) -> None:
    # stored: 0 2010-05-03, 1 2012-01-05, 2 "2015", 3 2015-12-31, 4 2016-02, 5 2020-07-01
    assert _pos(catalog, "paper", "published", ">=", "2012") == [1, 2, 3, 4, 5]
    assert _pos(catalog, "paper", "published", ">=", 2012) == [1, 2, 3, 4, 5]
    assert _pos(catalog, "paper", "published", ">", "2015") == [4, 5]  # all of 2015 is excluded
    assert _pos(catalog, "paper", "published", "=", "2015") == [2, 3]
    assert _pos(catalog, "paper", "published", "<", "2015-06-01") == [0, 1]  # year-only 2015 is not < 2015
    assert _pos(catalog, "paper", "published", "<=", "2015-06-01") == [0, 1, 2]
    assert _pos(catalog, "paper", "published", "=", "2016-02-10") == [4]  # a month-only value, same month
    assert _pos(catalog, "paper", "published", ">=", "2016-02") == [4, 5]
    assert _pos(catalog, "paper", "published", "=", "2012-01-05") == [1]
    # a full date against a numeric year attribute compares its year
    assert _pos(catalog, "paper", "year", ">=", "2015-03-01") == [2, 3, 5]


# ------------------------------------------------------------------------------------------------ text operators


def test_contains_starts_ends(catalog: AttributeCatalog) -> None:
    assert _pos(catalog, "paper", "language", "CONTAINS", "ENG") == [0, 2, 5]
    assert _pos(catalog, "paper", "keywords", "STARTS WITH", "ret") == [0, 1]  # an item of "graph; retrieval"
    assert _pos(catalog, "paper", "keywords", "ENDS WITH", "LLM") == [1, 2]
    assert _pos(catalog, "gene", "symbol", "STARTS WITH", "erb") == [9]


def test_text_operators_on_name_title_and_text(catalog: AttributeCatalog) -> None:
    assert _pos(catalog, "paper", "title", "CONTAINS", "retrieval") == [0, 1]
    assert _pos(catalog, "paper", "name", "ENDS WITH", "GRAPHS") == [5]
    assert _pos(catalog, "paper", "text", "CONTAINS", "graph retrieval") == [0]
    assert _pos(catalog, None, "name", "STARTS WITH", "x") == [11]
    assert _pos(catalog, "paper", "title", "<>", "ranking") == [0, 1, 2, 4, 5]
    assert _pos(catalog, "paper", "title", "=~", ".*graphs?") == [5]


def test_name_equality_is_a_search_string_not_a_filter(catalog: AttributeCatalog) -> None:
    result = _run(catalog, "paper", _c("title", "=", "Ranking"), _c("year", ">", 2012))
    assert result.positions is not None and result.positions.tolist() == [2, 3, 5]
    (name,) = result.not_applied
    assert name.reason == "name" and name.search_text == "Ranking"
    assert _reason(catalog, "gene", "name", "IN", ("a", "b")) == "name"


def test_nodes_argument_supplies_names(catalog: AttributeCatalog) -> None:
    renamed = _table([(t, "renamed" if i == 3 else n, x, a) for i, (t, n, x, a) in enumerate(NODES)])
    result = apply_constraints(catalog, [_c("title", "CONTAINS", "renamed")], "paper", nodes=renamed)
    assert result.positions is not None and result.positions.tolist() == [3]


# ------------------------------------------------------------------------------------------------ regex


def test_regex_is_a_case_insensitive_full_match(catalog: AttributeCatalog) -> None:
    assert _pos(catalog, "paper", "language", "=~", "eng.*") == [0, 2, 5]
    assert _pos(catalog, "paper", "language", "=~", "(?i)ENGLISH|german") == [0, 1, 2, 5]
    assert _pos(catalog, "gene", "aliases", "=~", "her-?2") == [9]  # items are tested too
    assert _reason(catalog, "paper", "language", "=~", "eng") == "unknown_value"  # no full match


@pytest.mark.parametrize("pattern", ["([a-z", "a" * 201, "(a+)+b", "(x*)*", 5])
def test_unusable_patterns_are_not_applied(catalog: AttributeCatalog, pattern: Any) -> None:
    assert _reason(catalog, "paper", "language", "=~", pattern) == "bad_pattern"


# ------------------------------------------------------------------------------------------------ not applied


def test_unknown_attribute_and_value_are_returned_as_search_text(catalog: AttributeCatalog) -> None:
    result = _run(catalog, "paper", _c("venue", "=", "Nature"), _c("language", "=", "Klingon"))
    assert result.positions is None and result.applied == ()
    assert [n.reason for n in result.not_applied] == ["unknown_attribute", "unknown_value"]
    assert result.search_terms == ["venue Nature", "language Klingon"]
    ranged = _run(catalog, "paper", _c("citation count", ">=", 10))
    assert ranged.search_terms == ["citation count >= 10"]


@pytest.mark.parametrize(
    ("attribute", "op", "value"),
    [
        ("language", ">", 5),  # categorical text has no order
        ("year", ">", "recent"),
        ("year", "<", True),
        ("language", "CONTAINS", True),
        ("language", "CONTAINS", ""),
        ("year", ">", (2010, 2012)),
        ("title", ">", "a"),
    ],
)
def test_value_type_mismatch_is_not_applied(
    catalog: AttributeCatalog, attribute: str, op: Operator, value: Any
) -> None:
    assert _reason(catalog, "paper", attribute, op, value) == "value_mismatch"


def test_type_restriction(catalog: AttributeCatalog) -> None:
    assert _pos(catalog, None, "country", "=", "germany") == [0, 6]
    assert _pos(catalog, "author", "country", "=", "germany") == [6]
    assert _reason(catalog, "gene", "country", "=", "germany") == "unknown_attribute"
    assert _pos(catalog, "not a type", "country", "=", "usa") == [7]  # an unknown type restricts nothing


def test_constraints_intersect_and_case_flag_changes_nothing(catalog: AttributeCatalog) -> None:
    result = _run(catalog, "paper", _c("year", ">=", 2012), _c("language", "=", "english", ci=True))
    assert result.positions is not None and result.positions.tolist() == [2, 5]
    assert [(a.key, a.matched) for a in result.applied] == [("year", 4), ("language", 3)]
    assert _run(catalog, "paper").positions is None


# ------------------------------------------------------------------------------------------------ values


def test_value_parsing() -> None:
    assert parse_number(" 17 ") == 17.0 and parse_number("1e3") == 1000.0
    assert parse_number("nan") is None and parse_number("-inf") is None and parse_number("1_000") is None
    assert parse_number("17q12") is None
    assert [parse_date(s) and parse_date(s).granularity for s in ("2015", "2015-03", "2015-03-01")] == [0, 1, 2]  # type: ignore[union-attr]
    assert parse_date("2015-02-30") is not None and parse_date("2015-02-30").granularity == 1  # type: ignore[union-attr]
    assert parse_date("2015-13") is None and parse_date("17q12") is None
    assert name_tokens("numberOfAliases") == name_tokens("n_alias") == ("number", "alias")


def test_sparse_keys_build_the_same_columns() -> None:
    # 40 optional keys, each on few nodes, take the per-entry path of the builder
    nodes: list[Node] = [("paper", f"p{i}", "", {f"k{i % 40}": i, "year": 2000 + i % 7}) for i in range(200)]
    catalog = AttributeCatalog.build(_table(nodes))
    assert _pos(catalog, "paper", "k3", ">=", 0) == list(range(3, 200, 40))
    assert _pos(catalog, "paper", "year", "=", 2003) == [i for i in range(200) if i % 7 == 3]


# ------------------------------------------------------------------------------------------------ scale, real data


def test_hundred_thousand_nodes_build_and_filter_as_arrays() -> None:
    n = 100_000
    rng = np.random.default_rng(7)
    year = rng.integers(1970, 2025, n)
    month = rng.integers(1, 13, n)
    lang = rng.integers(0, 4, n)
    kw = rng.integers(0, 300, (n, 2))
    pages = rng.integers(1, 400, n)
    languages = ["English", "German", "French", "Chinese"]
    y, m, la, k, pg = year.tolist(), month.tolist(), lang.tolist(), kw.tolist(), pages.tolist()
    columns: dict[str, list[Any]] = {
        "year": y,  # int
        "published": [f"{y[i]}-{m[i]:02d}-15" for i in range(n)],
        "pages": [str(p) for p in pg],  # numbers as strings
        "language": [languages[i] for i in la],
        "keywords": [f"kw{a}; kw{b}" for a, b in k],
        "doi": [f"10.1/{i}" for i in range(n)],  # unique text
        "rating": [i % 11 / 2 for i in range(n)],
        "open_access": [i % 3 == 0 for i in range(n)],
        "citations": [i % 97 for i in range(n)],
        "isbn": [f"978-{i}" if i % 5 == 0 else None for i in range(n)],  # mostly missing
    }
    attrs = [{key: values[i] for key, values in columns.items() if values[i] is not None} for i in range(n)]
    catalog = AttributeCatalog.build(_table([("paper", f"paper {i}", "", attrs[i]) for i in range(n)]))
    kinds = {c.key: c.kind for c in catalog.columns("paper")}
    kinds_expected = [
        "numeric",
        "date",
        "numeric",
        "categorical",
        "list",
        "text",
        "numeric",
        "boolean",
        "numeric",
        "text",
    ]
    assert kinds == dict(zip(columns, kinds_expected, strict=True))
    result = _run(
        catalog,
        "paper",
        _c("year", ">=", 2012),
        _c("published", "<", "2020-06"),
        _c("pages", ">", "100"),
        _c("language", "IN", ("german", "french")),
    )
    expected = (
        (year >= 2012) & ((year < 2020) | ((year == 2020) & (month < 6))) & (pages > 100) & np.isin(lang, [1, 2])
    )
    assert result.positions is not None and not result.not_applied
    assert np.array_equal(result.positions, np.flatnonzero(expected))
    items = _pos(catalog, "paper", "keywords", "=", "kw7")
    assert items == np.flatnonzero((kw == 7).any(axis=1)).tolist()
    assert _pos(catalog, "paper", "isbn", "=", "978-500") == [500]


def test_real_biomed_sample_chromosome_filter() -> None:
    table = NodeTable.from_skb(load_skb(REPO / "data" / "biomed-sample"))
    catalog = AttributeCatalog.build(table)
    gene = table.schema.node_code("gene")
    on_17 = [
        p for p in range(len(table)) if table.types[p] == gene and str(table.attrs[p].get("chromosome")) == "17"
    ]
    assert on_17  # the sample has genes on chromosome 17
    assert _pos(catalog, "gene", "chromosome", "=", "17") == on_17
    assert _pos(catalog, "gene", "chromosome", "=", 17) == on_17
    assert _pos(catalog, None, "Chromosome", "=", "17") == on_17
    # a list item: the second alias of some gene finds that gene
    p, aliases = next(
        (p, str(a["aliases"])) for p, a in enumerate(table.attrs) if ", " in str(a.get("aliases", ""))
    )
    assert p in _pos(catalog, "gene", "aliases", "=", aliases.split(", ")[1])
    assert catalog.column("gene", "chromosome") is not None
    assert any(m.key == "chromosome" and "17" in m.values for m in catalog.value_mentions("gene"))
