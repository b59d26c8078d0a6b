"""Bundle validation errors that tests/unit/test_bundle_loader.py does not cover, and interrupted ingests.

Each error is a `BundleError` whose message starts with ``file:line:`` (or ``file:`` when no line applies), so a
user can open the file at the bad line. Covered here: JSON the `json` module refuses without a JSONDecodeError
(a number of more than 4,300 digits, nesting too deep), bytes that are not UTF-8, lone surrogate escapes (no
tokenizer accepts them), lines that are not objects in edges and QA files, truncated gzip, dangling edge ends
after blank lines and in gzipped files, schema signatures naming undeclared types, a bundle path that is a file,
`--split` on a JSONL QA file; then an ingest whose encoder fails midway, through the API and `skbqa ingest`.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from skbqa.cli import main as cli
from skbqa.common.errors import BundleError, ModelError
from skbqa.engine.embedded import EmbeddedEngine
from skbqa.ingest.builder import ingest
from skbqa.skb.loaders import load_skb
from skbqa.skb.qa import load_qa
from skbqa.stores.index import open_index
from tests.helpers import HashingEncoder
from tests.helpers import write_bundle as write_tiny_bundle
from tests.unit.test_bundle_loader import EDGES, NODES, SCHEMA, _lines, expect_error, write_bundle

HUGE_NUMBER = "1" + "0" * 5000  # int() refuses more than 4,300 digits with a ValueError, not a JSONDecodeError
DEEP = "[" * 100_000 + "]" * 100_000  # json raises RecursionError


def node_line(**fields: Any) -> str:
    return json.dumps({"id": 5, "type": "paper", "name": "X", **fields})


# --- JSON the decoder refuses without a JSONDecodeError ---------------------------------------------------------


@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize(
    ("line", "fragment"),
    [
        ('{"id": 5, "type": "paper", "attrs": {"n": ' + HUGE_NUMBER + "}}", "Exceeds the limit (4300 digits)"),
        ('{"id": ' + HUGE_NUMBER + ', "type": "paper"}', "Exceeds the limit (4300 digits)"),
        ('{"id": 5, "type": "paper", "attrs": ' + DEEP + "}", "nested too deeply"),
    ],
    ids=["huge-attr", "huge-id", "deep"],
)
def test_json_the_decoder_refuses_names_file_and_line(tmp_path: Path, gz: bool, line: str, fragment: str) -> None:
    root = write_bundle(tmp_path, nodes=[NODES[0], NODES[1], line, NODES[2]], gz=gz)
    err = expect_error(root, "nodes.jsonl.gz" if gz else "nodes.jsonl", 3, "malformed JSON", fragment)
    assert "set_int_max_str_digits" not in str(err)  # Python's advice to programmers is no help to a user


@pytest.mark.parametrize("line", ['{"src": 7, "type": "writes", "dst": ' + HUGE_NUMBER + "}", DEEP])
def test_json_the_decoder_refuses_in_edges(tmp_path: Path, line: str) -> None:
    root = write_bundle(tmp_path, edges=[EDGES[0], EDGES[1], "", line])
    expect_error(root, "edges.jsonl", 4, "malformed JSON")


@pytest.mark.parametrize(
    ("schema", "fragment"),
    [('{"name": ' + HUGE_NUMBER + "}", "Exceeds the limit"), ('{"name": ' + DEEP + "}", "nested too deeply")],
)
def test_json_the_decoder_refuses_in_the_schema(tmp_path: Path, schema: str, fragment: str) -> None:
    expect_error(write_bundle(tmp_path, schema=schema), "schema.json", None, "malformed JSON", fragment)


def test_json_the_decoder_refuses_in_a_qa_file(tmp_path: Path) -> None:
    path = tmp_path / "dev.jsonl"
    path.write_text(_lines([{"id": "a", "question": "q?", "answers": [1]}, '{"answers": ' + DEEP + "}"]))
    with pytest.raises(BundleError) as exc:
        load_qa(path)
    assert str(exc.value).startswith("dev.jsonl:2: malformed JSON: nested too deeply")


# --- bytes that are not UTF-8, and lone surrogates --------------------------------------------------------------


@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("stem", ["nodes", "edges"])
def test_bytes_that_are_not_utf8_name_file_and_line(tmp_path: Path, gz: bool, stem: str) -> None:
    root = write_bundle(tmp_path, gz=gz)
    name = f"{stem}.jsonl" + (".gz" if gz else "")
    rows = [json.dumps(r).encode() for r in (NODES if stem == "nodes" else EDGES)]
    rows[3] = rows[3][:-1] + b', "note": "caf\xe9"}'  # Latin-1, not UTF-8
    data = b"\n".join(rows) + b"\n"
    (root / name).write_bytes(gzip.compress(data) if gz else data)
    expect_error(root, name, 4, "not UTF-8")


def test_a_schema_that_is_not_utf8(tmp_path: Path) -> None:
    root = write_bundle(tmp_path)
    text = json.dumps(SCHEMA, indent=2).encode().replace(b"a tiny SKB", b"\xff\xfe tiny")
    (root / "schema.json").write_bytes(text)
    expect_error(root, "schema.json", 3, "not UTF-8")


@pytest.mark.parametrize(
    "line",
    [
        node_line(name="a\ud800b"),  # json.dumps writes the escape "\ud800"
        node_line(text="x\udfff"),
        node_line(attrs={"note": "\udc80"}),
        node_line(attrs={"\ud83d": 1}),  # the first half of a pair alone
        '{"id": 5, "type": "paper", "name": "\\uDBFF"}',  # upper-case hex
    ],
    ids=["name", "text", "attr-value", "attr-key", "upper-hex"],
)
def test_lone_surrogate_escapes_name_file_and_line(tmp_path: Path, line: str) -> None:
    """Python decodes them into strings no UTF-8 codec (tokenizer, store, log) accepts: ingest crashed in the
    tokenizer with a TypeError instead of naming the line."""
    expect_error(write_bundle(tmp_path, nodes=[NODES[0], line]), "nodes.jsonl", 2, "lone surrogate")


def test_surrogate_pairs_are_fine(tmp_path: Path) -> None:
    emoji = {"id": 5, "type": "paper", "name": "smile \U0001f600", "text": "\U0001d50a", "attrs": {"k": "\u00e9"}}
    skb = load_skb(write_bundle(tmp_path, nodes=[*NODES, json.dumps(emoji)]))  # ASCII escapes, pairs
    assert "smile \U0001f600" in skb.names


def test_a_lone_surrogate_in_the_schema(tmp_path: Path) -> None:
    schema = {**SCHEMA, "description": "broken \ud800 half"}
    expect_error(write_bundle(tmp_path, schema=json.dumps(schema)), "schema.json", None, "lone surrogate")


# --- lines that are not objects, truncated files ----------------------------------------------------------------


@pytest.mark.parametrize("line", ["[7, 42]", "null", "42", '"edge"', "true"])
def test_an_edge_line_that_is_not_an_object(tmp_path: Path, line: str) -> None:
    expect_error(write_bundle(tmp_path, edges=[EDGES[0], line]), "edges.jsonl", 2, "must be a JSON object")


@pytest.mark.parametrize("stem", ["nodes", "edges"])
def test_a_truncated_gzip_file(tmp_path: Path, stem: str) -> None:
    root = write_bundle(tmp_path, gz=True)
    path = root / f"{stem}.jsonl.gz"
    path.write_bytes(path.read_bytes()[:-12])  # cut inside the deflate stream's trailer
    expect_error(root, path.name, None, "cannot read file")


def test_a_data_file_that_is_a_directory(tmp_path: Path) -> None:
    root = write_bundle(tmp_path)
    (root / "edges.jsonl").unlink()
    (root / "edges.jsonl").mkdir()
    expect_error(root, "edges.jsonl", None, "file not found", "edges.jsonl.gz")


def test_a_bundle_path_that_is_a_file(tmp_path: Path) -> None:
    path = tmp_path / "bundle.zip"
    path.write_bytes(b"PK")
    with pytest.raises(BundleError) as exc:
        load_skb(path)
    assert str(exc.value) == f"{path}: bundle directory not found"


def test_a_directory_without_schema_or_stark_files(tmp_path: Path) -> None:
    with pytest.raises(BundleError) as exc:
        load_skb(tmp_path)
    assert str(exc.value) == "schema.json: file not found"


# --- edges: line numbers on both readers (canonical lines are parsed in bulk) -----------------------------------


@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("blank", [False, True], ids=["canonical", "with-blank-lines"])
@pytest.mark.parametrize(
    ("bad", "fragment"),
    [
        ({"src": 7, "type": "writes", "dst": 999}, "edge dst 999 is not a node id"),
        ({"src": 999, "type": "writes", "dst": 42}, "edge src 999 is not a node id"),
        ({"src": 42, "type": "writes", "dst": 7}, "connects paper → author"),
    ],
    ids=["dangling-dst", "dangling-src", "signature"],
)
def test_edge_errors_name_the_line_in_every_layout(
    tmp_path: Path, gz: bool, blank: bool, bad: dict[str, Any], fragment: str
) -> None:
    rows: list[Any] = [EDGES[0], EDGES[1], EDGES[2], bad, EDGES[3]]
    if blank:
        rows = ["", EDGES[0], "   ", EDGES[1], EDGES[2], bad, EDGES[3]]
    root = write_bundle(tmp_path, edges=rows, gz=gz)
    expect_error(root, "edges.jsonl.gz" if gz else "edges.jsonl", 6 if blank else 4, fragment)


def test_a_dangling_edge_in_a_large_canonical_file(tmp_path: Path) -> None:
    rows: list[Any] = [EDGES[i % len(EDGES)] for i in range(20_000)]
    rows[15_321] = {"src": 7, "type": "writes", "dst": 31337}
    expect_error(write_bundle(tmp_path, edges=rows, gz=True), "edges.jsonl.gz", 15_322, "edge dst 31337")


# --- schema -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("edge", "fragment"),
    [
        ({"name": "writes", "source": "book", "target": "paper"}, "edge type 'writes' source 'book' is not"),
        ({"name": "", "source": "author", "target": "paper"}, "edge_types[0] needs a non-empty string 'name'"),
        ({"name": 5, "source": "author", "target": "paper"}, "edge_types[0] needs a non-empty string 'name'"),
        ({"name": "writes", "target": "paper"}, "edge_types[0] needs a non-empty string 'source'"),
        ({"name": "writes", "source": ["author"], "target": "paper"}, "needs a non-empty string 'source'"),
    ],
)
def test_schema_edge_signature_errors(tmp_path: Path, edge: dict[str, Any], fragment: str) -> None:
    schema = {**SCHEMA, "edge_types": [edge]}
    expect_error(write_bundle(tmp_path, schema=schema, edges=[]), "schema.json", None, fragment)


def test_a_schema_that_is_a_directory(tmp_path: Path) -> None:
    root = write_bundle(tmp_path)
    (root / "schema.json").unlink()
    (root / "schema.json").mkdir()
    expect_error(root, "schema.json", None, "cannot read file")


def test_split_is_for_stark_csv_files_only(tmp_path: Path) -> None:
    path = tmp_path / "dev.jsonl"
    path.write_text(_lines([{"id": "a", "question": "q?", "answers": [1]}]))
    with pytest.raises(BundleError) as exc:
        load_qa(path, split="test")
    assert str(exc.value) == "dev.jsonl: --split applies to STaRK QA csv files only"


# --- an ingest interrupted midway -------------------------------------------------------------------------------


class FailsMidway(HashingEncoder):
    """Encodes the first embedding set, then fails (a model crash, or Ctrl-C) on the next call."""

    def __init__(self, error: BaseException, fail_on_call: int = 2) -> None:
        super().__init__()
        self.error = error
        self.fail_on_call = fail_on_call

    def encode(self, texts, *, progress=None):  # type: ignore[no-untyped-def]
        if self.calls + 1 >= self.fail_on_call:
            self.calls += 1
            raise self.error
        return super().encode(texts, progress=progress)


def previous_index(tmp_path: Path) -> tuple[Path, Path, bytes]:
    bundle = write_tiny_bundle(tmp_path / "bundle")
    ingest(bundle, tmp_path / "idx", HashingEncoder(), progress=False)
    return bundle, tmp_path / "idx", (tmp_path / "idx" / "manifest.json").read_bytes()


def assert_intact(tmp_path: Path, index: Path, manifest: bytes) -> None:
    assert (index / "manifest.json").read_bytes() == manifest
    engine = EmbeddedEngine(open_index(index), HashingEncoder())
    assert engine.ask("chemistry", strategy="bm25", k=3).items
    assert engine.ask("Which papers did Ada Lovelace write?", strategy="af", k=3).items
    leftovers = [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]
    assert leftovers == [], "no work or old directories left beside the index"


@pytest.mark.parametrize("error", [ModelError("the encoder died"), KeyboardInterrupt(), MemoryError()])
def test_an_ingest_failing_midway_leaves_the_previous_index_intact(tmp_path: Path, error: BaseException) -> None:
    bundle, index, manifest = previous_index(tmp_path)
    encoder = FailsMidway(error)
    with pytest.raises(type(error)):
        ingest(bundle, index, encoder, progress=False)
    assert encoder.calls == 2  # the first set was encoded, the second call failed: really midway
    assert_intact(tmp_path, index, manifest)


@pytest.mark.parametrize(
    ("error", "code", "line"),
    [
        (ModelError("the encoder died"), 1, "skbqa: error: the encoder died"),
        (KeyboardInterrupt(), 130, "skbqa: interrupted"),
    ],
)
def test_skbqa_ingest_interrupted_midway_exits_nonzero_with_one_line(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    error: BaseException,
    code: int,
    line: str,
) -> None:
    bundle, index, manifest = previous_index(tmp_path)
    encoder = FailsMidway(error)  # the same model name as the previous index: re-ingesting over it is allowed
    monkeypatch.setattr("skbqa.models.local_encoder.load_encoder", lambda *a, **k: encoder)
    status = cli.main(["ingest", str(bundle), "--index", str(index), "--no-progress"])
    captured = capsys.readouterr()
    assert status == code
    assert captured.err.splitlines() == [line]
    assert captured.out == ""
    assert encoder.calls == 2
    assert (index / "manifest.json").read_bytes() == manifest
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
    assert EmbeddedEngine(open_index(index), HashingEncoder()).ask("chemistry", strategy="bm25", k=3).items
