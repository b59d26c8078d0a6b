"""Bad change input gets one clear error naming the line and the problem, and nothing of a rejected batch is
applied: unknown types, an edge to a missing node, a type change, malformed JSON, an oversized field, a directory."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

from skbqa.changes.format import MAX_LINE_BYTES, ChangeError, read_changes
from skbqa.changes.updater import IndexUpdater
from skbqa.ingest.builder import ingest
from tests.helpers import HashingEncoder, write_bundle


def _lines(path: Path, *changes: object) -> Path:
    path.write_text("".join((c if isinstance(c, str) else json.dumps(c)) + "\n" for c in changes))
    return path


@pytest.fixture
def index(tmp_path: Path) -> Path:
    target = tmp_path / "index"
    ingest(write_bundle(tmp_path / "bundle"), target, HashingEncoder(), progress=False)
    return target


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ('{"op": "upsert_node", "node": {"id": 5}', "malformed JSON"),
        ('{"op": "rename_node", "id": 1}', "'op' must be one of"),
        ('{"op": "delete_node", "id": "seven"}', "'id' must be a 64-bit integer"),
        ('{"op": "add_edge", "src": 1, "type": "", "dst": 2}', "'type' must be a non-empty string"),
        (
            '{"op": "upsert_node", "node": {"id": 1, "type": "t", "attrs": {"a": [1]}}}',
            "'attrs' must be an object",
        ),
        ("[1, 2]", "each change must be a JSON object"),
    ],
)
def test_malformed_lines_name_their_line(tmp_path: Path, line: str, problem: str) -> None:
    path = _lines(tmp_path / "changes.jsonl", {"op": "delete_node", "id": 1}, line)
    with pytest.raises(ChangeError) as error:
        read_changes(path)
    assert str(error.value).startswith("changes.jsonl:2: ") and problem in str(error.value)


def test_an_oversized_line_is_refused_without_reading_it_whole(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl.gz"
    with gzip.open(path, "wt") as handle:
        handle.write(json.dumps({"op": "delete_node", "id": 1}) + "\n")
        handle.write(
            '{"op": "upsert_node", "node": {"id": 9, "type": "t", "text": "' + "x" * (MAX_LINE_BYTES + 10)
        )
        handle.write('"}}\n')
    with pytest.raises(ChangeError, match=r"big.jsonl.gz:2: the change is longer than the 8 MiB limit"):
        read_changes(path)


def test_a_directory_is_not_a_change_file(tmp_path: Path) -> None:
    with pytest.raises(ChangeError, match="is a directory"):
        read_changes(tmp_path)


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"op": "upsert_node", "node": {"id": 77, "type": "planet", "name": "x"}}, "node type 'planet' is not"),
        ({"op": "add_edge", "src": 1, "type": "orbits", "dst": 2}, "edge type 'orbits' is not declared"),
        ({"op": "add_edge", "src": "SAME", "type": "EDGE", "dst": 424242}, "edge dst 424242 is not a node"),
        ({"op": "upsert_node", "node": {"id": "SAME", "type": "OTHER", "name": "x"}}, "an upsert cannot make it"),
    ],
)
def test_a_change_that_does_not_fit_refuses_the_whole_batch(index: Path, change: dict, problem: str) -> None:
    updater = IndexUpdater(index, HashingEncoder())
    try:
        nodes, edges = dict(updater.state.nodes), set(updater.state.edges)
        first_id, first = next(iter(nodes.items()))
        schema = updater.state.schema
        edge = schema.edge_types[0]
        change = json.loads(
            json.dumps(change)
            .replace('"SAME"', str(first_id))
            .replace(
                '"OTHER"',
                json.dumps(next(t.name for t in schema.node_types if schema.node_code(t.name) != first.type)),
            )
            .replace('"EDGE"', json.dumps(edge.name))
        )
        good = {"op": "upsert_node", "node": {"id": 123456, "type": schema.node_types[0].name, "name": "fine"}}
        from skbqa.changes.format import parse_change

        batch = [(1, parse_change(good, "f", 1)), (2, parse_change(change, "f", 2))]
        with pytest.raises(ChangeError) as error:
            updater.submit(batch, "f")
        assert str(error.value).startswith("f:2: ") and problem in str(error.value)
        assert updater.state.nodes == nodes and updater.state.edges == edges and updater.accepted == 0
        assert updater.log.last_version() == 0
    finally:
        updater.close()


def test_the_cli_says_one_line_and_exits_2(index: Path, tmp_path: Path) -> None:
    path = _lines(tmp_path / "c.jsonl", {"op": "delete_node", "id": 1}, '{"op": "add_edge"')
    result = subprocess.run(
        [sys.executable, "-m", "skbqa", "update", str(path), "--index", str(index)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0 and "c.jsonl:2: malformed JSON" in result.stderr
    directory = subprocess.run(
        [sys.executable, "-m", "skbqa", "update", str(tmp_path), "--index", str(index)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert directory.returncode == 2 and "is a directory" in directory.stderr
