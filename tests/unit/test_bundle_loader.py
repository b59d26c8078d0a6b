"""Bundle loader validation: every case builds a tiny bundle in tmp_path and checks file, line and problem."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from skbqa.common.errors import BundleError
from skbqa.skb.bundle import load_bundle
from skbqa.skb.qa import load_qa

SCHEMA: dict[str, Any] = {
    "name": "tiny",
    "description": "a tiny SKB",
    "node_types": [
        {"name": "paper", "description": "a paper", "name_attr": "title"},
        {"name": "author"},
        {"name": "venue"},
    ],
    "edge_types": [
        {"name": "writes", "source": "author", "target": "paper"},
        {"name": "cites", "source": "paper", "target": "paper"},
        # one edge name, two signatures
        {"name": "related", "source": "paper", "target": "author"},
        {"name": "related", "source": "author", "target": "author"},
    ],
}

# Non-contiguous, unsorted ids.
NODES: list[dict[str, Any]] = [
    {"id": 42, "type": "paper", "name": "Graphs", "text": "About graphs.", "attrs": {"year": 2020, "oa": True}},
    {"id": 7, "type": "author", "name": "Ada", "text": "", "attrs": {"h": 1.5, "orcid": None}},
    {"id": 1000, "type": "paper", "name": "Trees", "text": "About trees."},
    {"id": -3, "type": "venue", "name": "Conf", "attrs": None},
    {"id": 19, "type": "author", "name": "Bob"},
]
EDGES: list[dict[str, Any]] = [
    {"src": 7, "type": "writes", "dst": 42},
    {"src": 19, "type": "writes", "dst": 1000},
    {"src": 1000, "type": "cites", "dst": 42},
    {"src": 42, "type": "related", "dst": 19},
    {"src": 7, "type": "related", "dst": 19},
]


def _lines(rows: list[Any]) -> str:
    return "".join((row if isinstance(row, str) else json.dumps(row)) + "\n" for row in rows)


def write_bundle(
    root: Path,
    *,
    schema: Any = None,
    nodes: list[Any] | None = None,
    edges: list[Any] | None = None,
    gz: bool = False,
) -> Path:
    """Write schema.json, nodes/edges .jsonl (or .jsonl.gz); a string row is written verbatim."""
    root.mkdir(parents=True, exist_ok=True)
    schema_text = schema if isinstance(schema, str) else json.dumps(SCHEMA if schema is None else schema)
    (root / "schema.json").write_text(schema_text, encoding="utf-8")
    for stem, rows in (("nodes", NODES if nodes is None else nodes), ("edges", EDGES if edges is None else edges)):
        if gz:
            with gzip.open(root / f"{stem}.jsonl.gz", "wt", encoding="utf-8") as handle:
                handle.write(_lines(rows))
        else:
            (root / f"{stem}.jsonl").write_text(_lines(rows), encoding="utf-8")
    return root


def edge_triples(skb: Any) -> list[tuple[int, str, int]]:
    names = skb.schema.edge_names
    return sorted(
        (int(skb.node_ids[s]), names[int(t)], int(skb.node_ids[d]))
        for s, t, d in zip(skb.edge_src, skb.edge_type, skb.edge_dst, strict=True)
    )


def expect_error(root: Path, file: str, line: int | None, *fragments: str) -> BundleError:
    with pytest.raises(BundleError) as exc:
        load_bundle(root)
    err = exc.value
    assert (err.file, err.line) == (file, line), str(err)
    for fragment in fragments:
        assert fragment in err.problem, str(err)
    where = f"{file}:{line}" if line is not None else file
    assert str(err).startswith(f"{where}: ")
    return err


# ------------------------------------------------------------------------------------------ happy path


@pytest.mark.parametrize("gz", [False, True])
def test_happy_path_positions_sorted_by_id(tmp_path: Path, gz: bool) -> None:
    skb = load_bundle(write_bundle(tmp_path, gz=gz))
    assert skb.node_ids.tolist() == [-3, 7, 19, 42, 1000]
    assert skb.node_ids.dtype == np.int64
    assert skb.names == ["Conf", "Ada", "Bob", "Graphs", "Trees"]
    assert skb.texts == ["", "", "", "About graphs.", "About trees."]
    assert [skb.type_name(i) for i in range(5)] == ["venue", "author", "author", "paper", "paper"]
    assert skb.attrs[3] == {"year": 2020, "oa": True}
    assert skb.attrs[1] == {"h": 1.5, "orcid": None}
    assert skb.attrs[0] == {} and skb.attrs[4] == {}
    assert skb.positions([42, 7]).tolist() == [3, 1]
    assert skb.ids([0, 4]).tolist() == [-3, 1000]
    assert skb.num_edges == 5
    assert skb.edge_src.dtype == np.int32 and skb.edge_dst.dtype == np.int32 and skb.edge_type.dtype == np.int16
    assert edge_triples(skb) == sorted((e["src"], e["type"], e["dst"]) for e in EDGES)
    assert skb.schema.edge_names == ["writes", "cites", "related"]
    assert skb.schema.signatures("related") == [("paper", "author"), ("author", "author")]
    assert skb.schema.node_types[0].name_attr == "title"
    assert skb.nodes_of_type("paper").tolist() == [3, 4]


def test_jsonl_preferred_over_gz_and_blank_lines_skipped(tmp_path: Path) -> None:
    root = write_bundle(tmp_path, gz=True)
    (root / "nodes.jsonl").write_text(_lines([NODES[0], "", "   ", NODES[1]]))
    (root / "edges.jsonl").write_text("\n" + _lines([EDGES[0]]))
    skb = load_bundle(root)
    assert skb.node_ids.tolist() == [7, 42]
    assert skb.num_edges == 1


def test_no_edges_is_fine(tmp_path: Path) -> None:
    skb = load_bundle(write_bundle(tmp_path, edges=[]))
    assert skb.num_edges == 0 and skb.num_nodes == 5


# ---------------------------------------------------------------------------------------------- errors


@pytest.mark.parametrize("gz", [False, True])
def test_malformed_json_names_file_and_line(tmp_path: Path, gz: bool) -> None:
    root = write_bundle(tmp_path, nodes=[NODES[0], NODES[1], '{"id": 3, "type": "paper",'], gz=gz)
    expect_error(root, "nodes.jsonl.gz" if gz else "nodes.jsonl", 3, "malformed JSON")


def test_malformed_json_in_edges(tmp_path: Path) -> None:
    root = write_bundle(tmp_path, edges=[EDGES[0], "", "{src: 7}"])
    expect_error(root, "edges.jsonl", 3, "malformed JSON")


def test_line_that_is_not_an_object(tmp_path: Path) -> None:
    expect_error(write_bundle(tmp_path, nodes=[NODES[0], "[1, 2]"]), "nodes.jsonl", 2, "JSON object")


def test_corrupt_gzip(tmp_path: Path) -> None:
    root = write_bundle(tmp_path, gz=True)
    (root / "nodes.jsonl.gz").write_bytes(b"not gzip at all")
    expect_error(root, "nodes.jsonl.gz", None, "cannot read file")


def test_duplicate_node_id_reports_second_occurrence(tmp_path: Path) -> None:
    dup = {"id": 7, "type": "author", "name": "Ada again"}
    root = write_bundle(tmp_path, nodes=[*NODES[:3], dup, NODES[3]])
    expect_error(root, "nodes.jsonl", 4, "duplicate node id 7", "first seen on line 2")


@pytest.mark.parametrize(
    ("bad", "fragment"),
    [
        ({"type": "paper"}, "'id' must be"),
        ({"id": "42", "type": "paper"}, "'id' must be"),
        ({"id": 4.0, "type": "paper"}, "'id' must be"),
        ({"id": True, "type": "paper"}, "'id' must be"),
        ({"id": 2**64, "type": "paper"}, "'id' must be"),
        ({"id": 5, "type": 3}, "node type 3"),
        ({"id": 5, "name": 12, "type": "paper"}, "'name' and 'text' must be strings"),
        ({"id": 5, "type": "paper", "text": ["a"]}, "'name' and 'text' must be strings"),
    ],
)
def test_bad_node_fields(tmp_path: Path, bad: dict[str, Any], fragment: str) -> None:
    expect_error(write_bundle(tmp_path, nodes=[NODES[0], bad]), "nodes.jsonl", 2, fragment)


def test_node_type_missing_from_schema(tmp_path: Path) -> None:
    root = write_bundle(tmp_path, nodes=[*NODES, {"id": 5, "type": "journal"}])
    expect_error(root, "nodes.jsonl", 6, "node type 'journal' is not declared in schema.json")


def test_no_nodes(tmp_path: Path) -> None:
    expect_error(write_bundle(tmp_path, nodes=[""], edges=[]), "nodes.jsonl", None, "no nodes")


@pytest.mark.parametrize(
    ("bad", "fragment"),
    [
        ({"id": 5, "type": "paper", "attrs": {"tags": ["a", "b"]}}, "attribute 'tags' must be a scalar"),
        ({"id": 5, "type": "paper", "attrs": {"meta": {"x": 1}}}, "attribute 'meta' must be a scalar"),
        ({"id": 5, "type": "paper", "attrs": [1, 2]}, "'attrs' must be an object"),
        ({"id": 5, "type": "paper", "attrs": "year=2020"}, "'attrs' must be an object"),
    ],
)
def test_attrs_must_be_scalar(tmp_path: Path, bad: dict[str, Any], fragment: str) -> None:
    expect_error(write_bundle(tmp_path, nodes=[*NODES[:2], bad]), "nodes.jsonl", 3, fragment)


@pytest.mark.parametrize(
    ("bad", "fragment"),
    [
        ({"src": 7, "type": "writes", "dst": 999}, "edge dst 999 is not a node id"),
        ({"src": 8, "type": "writes", "dst": 42}, "edge src 8 is not a node id"),
        ({"src": 10**6, "type": "cites", "dst": 42}, "edge src 1000000 is not a node id"),
        ({"src": -100, "type": "cites", "dst": 42}, "edge src -100 is not a node id"),
    ],
)
def test_edge_to_unknown_id(tmp_path: Path, bad: dict[str, Any], fragment: str) -> None:
    root = write_bundle(tmp_path, edges=[*EDGES[:2], bad, EDGES[2]])
    expect_error(root, "edges.jsonl", 3, fragment)


@pytest.mark.parametrize(
    "bad",
    [
        {"src": "7", "type": "writes", "dst": 42},
        {"src": 7, "type": "writes"},
        {"src": 7, "type": "writes", "dst": False},
        {"src": 7, "type": "writes", "dst": 2**63},
    ],
)
def test_edge_endpoints_must_be_integers(tmp_path: Path, bad: dict[str, Any]) -> None:
    expect_error(
        write_bundle(tmp_path, edges=[EDGES[0], bad]), "edges.jsonl", 2, "'src' and 'dst' must be integer"
    )


def test_edge_type_missing_from_schema(tmp_path: Path) -> None:
    root = write_bundle(tmp_path, edges=[EDGES[0], {"src": 7, "type": "knows", "dst": 19}])
    expect_error(root, "edges.jsonl", 2, "edge type 'knows' is not declared in schema.json")
    root = write_bundle(tmp_path / "b", edges=[{"src": 7, "dst": 19}])
    expect_error(root, "edges.jsonl", 1, "edge type None")


def test_edge_signature_must_match_one_pair_of_its_name(tmp_path: Path) -> None:
    # paper → author and author → author are both declared for 'related' (accepted by the happy path);
    # author → paper is not.
    bad = {"src": 19, "type": "related", "dst": 42}
    err = expect_error(write_bundle(tmp_path, edges=[*EDGES, bad]), "edges.jsonl", 6, "edge 'related'")
    assert "connects author → paper" in err.problem
    assert "paper → author, author → author" in err.problem
    # a single-signature name, used backwards
    root = write_bundle(tmp_path / "b", edges=[{"src": 42, "type": "writes", "dst": 7}])
    expect_error(root, "edges.jsonl", 1, "connects paper → author", "allows only author → paper")


def test_missing_files(tmp_path: Path) -> None:
    with pytest.raises(BundleError, match="bundle directory not found"):
        load_bundle(tmp_path / "missing")
    root = write_bundle(tmp_path / "a")
    (root / "schema.json").unlink()
    expect_error(root, "schema.json", None, "file not found")
    root = write_bundle(tmp_path / "b")
    (root / "nodes.jsonl").unlink()
    expect_error(root, "nodes.jsonl", None, "file not found", "nodes.jsonl.gz")
    root = write_bundle(tmp_path / "c", gz=True)
    (root / "edges.jsonl.gz").unlink()
    expect_error(root, "edges.jsonl", None, "file not found")


def _schema(**changes: Any) -> dict[str, Any]:
    return {**SCHEMA, **changes}


@pytest.mark.parametrize(
    ("schema", "line", "fragment"),
    [
        ('{"name": "x",\n "node_types": [}', 2, "malformed JSON"),
        ("[1, 2]", None, "must be a JSON object"),
        (_schema(node_types={"paper": {}}), None, "'node_types' must be a list"),
        (_schema(edge_types=None), None, "'edge_types' must be a list"),
        (_schema(node_types=[], edge_types=[]), None, "declares no node types"),
        (_schema(node_types=[{"name": "paper"}, {"name": "paper"}]), None, "must be unique"),
        (_schema(node_types=[{"name": ""}]), None, "node_types[0] needs a non-empty string 'name'"),
        (_schema(node_types=["paper"]), None, "node_types[0] needs"),
        (_schema(edge_types=["writes"]), None, "edge_types[0] must be an object"),
        (
            _schema(edge_types=[{"name": "writes", "source": "author"}]),
            None,
            "edge_types[0] needs a non-empty string 'target'",
        ),
        (
            _schema(edge_types=[{"name": "writes", "source": "author", "target": "book"}]),
            None,
            "edge type 'writes' target 'book' is not a declared node type",
        ),
    ],
)
def test_schema_errors(tmp_path: Path, schema: Any, line: int | None, fragment: str) -> None:
    expect_error(write_bundle(tmp_path, schema=schema, edges=[]), "schema.json", line, fragment)


# ------------------------------------------------------------------------------------------------- QA


def write_qa(path: Path, rows: list[Any]) -> Path:
    path.write_text(_lines(rows), encoding="utf-8")
    return path


def test_qa_happy_path(tmp_path: Path) -> None:
    rows = [
        {"id": "q1", "question": "Who wrote Graphs?", "answers": [7], "hops": 1},
        "",
        {"question": "Which papers cite Graphs?", "answers": [1000, 42]},
        {"id": 3, "question": "None?", "answers": []},
    ]
    items = load_qa(write_qa(tmp_path / "dev.jsonl", rows))
    assert [i.id for i in items] == ["q1", "dev-3", "3"]
    assert items[0].answers == [7] and items[0].meta == {"hops": 1}
    assert items[1].answers == [1000, 42] and items[1].meta == {}
    assert items[2].answers == []


def test_qa_gz(tmp_path: Path) -> None:
    path = tmp_path / "qa.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        handle.write(_lines([{"id": "a", "question": "q?", "answers": [1]}]))
    assert [i.id for i in load_qa(path)] == ["a"]


@pytest.mark.parametrize(
    ("bad", "fragment"),
    [
        ({"id": "x", "answers": [1]}, "'question' must be a non-empty string"),
        ({"id": "x", "question": "   ", "answers": [1]}, "'question' must be a non-empty string"),
        ({"id": "x", "question": 5, "answers": [1]}, "'question' must be a non-empty string"),
        ({"id": "x", "question": "q?"}, "'answers' must be a list of integer node ids"),
        ({"id": "x", "question": "q?", "answers": 7}, "'answers' must be a list"),
        ({"id": "x", "question": "q?", "answers": ["7"]}, "'answers' must be a list"),
        ({"id": "x", "question": "q?", "answers": [True]}, "'answers' must be a list"),
        ({"id": "x", "question": "q?", "answers": [1.5]}, "'answers' must be a list"),
        ('{"id": "x", "question": ', "malformed JSON"),
        ('"just a string"', "JSON object"),
    ],
)
def test_qa_errors_name_file_and_line(tmp_path: Path, bad: Any, fragment: str) -> None:
    good = {"id": "ok", "question": "fine?", "answers": [1]}
    path = write_qa(tmp_path / "test.jsonl", [good, "", bad])
    with pytest.raises(BundleError) as exc:
        load_qa(path)
    assert (exc.value.file, exc.value.line) == ("test.jsonl", 3)
    assert fragment in exc.value.problem
    assert str(exc.value).startswith("test.jsonl:3: ")


def test_qa_missing_file(tmp_path: Path) -> None:
    with pytest.raises(BundleError, match="QA file not found"):
        load_qa(tmp_path / "nope.jsonl")
