"""The vectorised edge reader: same arrays as the line-by-line reader on canonical files, and a clean refusal
(None → the general reader takes over) on anything else, so errors and their line numbers do not change."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from skbqa.common.errors import BundleError
from skbqa.skb import fast_edges
from skbqa.skb.bundle import _read_edge_lines, load_bundle
from skbqa.skb.fast_edges import read_canonical_edges
from skbqa.skb.schema import Schema
from tests.helpers import SCHEMA, write_bundle

NAMES = ["written_by", "has_field", "cites"]


def write_edges(path: Path, lines: list[str]) -> Path:
    data = "".join(line + "\n" for line in lines).encode()
    if path.name.endswith(".gz"):
        with gzip.open(path, "wb") as handle:
            handle.write(data)
    else:
        path.write_bytes(data)
    return path


def canonical(rng: np.random.Generator, n: int) -> list[str]:
    src = rng.integers(0, 10**12, n)
    dst = rng.integers(0, 10**6, n)
    kinds = rng.integers(0, len(NAMES), n)
    return [
        json.dumps({"src": int(s), "type": NAMES[k], "dst": int(d)})
        for s, k, d in zip(src, kinds, dst, strict=True)
    ]


@pytest.mark.parametrize("suffix", [".jsonl", ".jsonl.gz"])
def test_canonical_lines_parse_like_the_general_reader(tmp_path: Path, suffix: str, monkeypatch) -> None:
    monkeypatch.setattr(fast_edges, "CHUNK_BYTES", 4096)  # many chunks, lines cut at chunk borders
    lines = [*canonical(np.random.default_rng(1), 5000), '{"src": 0, "type": "cites", "dst": 7}']
    path = write_edges(tmp_path / f"edges{suffix}", lines)
    got = read_canonical_edges(path, NAMES)
    assert got is not None
    src, dst, types, _ = _read_edge_lines(path, Schema.from_dict(SCHEMA))
    np.testing.assert_array_equal(got[0], src)
    np.testing.assert_array_equal(got[1], dst)
    np.testing.assert_array_equal(got[2], types)


def test_an_unterminated_last_line_and_an_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "edges.jsonl"
    path.write_bytes(b'{"src": 1, "type": "cites", "dst": 2}\n{"src": 3, "type": "has_field", "dst": 4}')
    src, dst, types = read_canonical_edges(path, NAMES)  # type: ignore[misc]
    assert src.tolist() == [1, 3] and dst.tolist() == [2, 4] and types.tolist() == [2, 1]
    path.write_bytes(b"")
    src, dst, types = read_canonical_edges(path, NAMES)  # type: ignore[misc]
    assert src.size == dst.size == types.size == 0


@pytest.mark.parametrize(
    "line",
    [
        '{"type": "cites", "src": 1, "dst": 2}',  # key order
        '{"src": 1, "type": "cites", "dst": 2, "w": 1}',  # extra key
        '{"src":1, "type": "cites", "dst": 2}',  # spacing
        '{"src": 1, "type": "cites", "dst": 2} ',  # trailing space
        '{"src": -1, "type": "cites", "dst": 2}',  # sign
        '{"src": 01, "type": "cites", "dst": 2}',  # leading zero (invalid JSON)
        '{"src": 1.0, "type": "cites", "dst": 2}',  # float
        '{"src": "1", "type": "cites", "dst": 2}',  # string id
        '{"src": 1, "type": "citez", "dst": 2}',  # unknown type
        '{"src": 1, "type": "cite\\u0073", "dst": 2}',  # escaped name
        '{"src": 1, "type": "cites", "dst": 12345678901234567890}',  # beyond 18 digits
        "",  # blank line
    ],
)
def test_anything_else_is_left_to_the_general_reader(tmp_path: Path, line: str) -> None:
    lines = ['{"src": 1, "type": "cites", "dst": 2}', line, '{"src": 3, "type": "cites", "dst": 4}']
    assert read_canonical_edges(write_edges(tmp_path / "edges.jsonl", lines), NAMES) is None


def test_lines_with_one_and_three_commas_do_not_balance_out(tmp_path: Path) -> None:
    lines = ['{"src": 1, "type": "a,b", "dst": 2}', '{"src": 1, "type": "cites" "dst": 2}']
    assert read_canonical_edges(write_edges(tmp_path / "edges.jsonl", lines), [*NAMES, "a,b"]) is None


def test_errors_on_the_fast_path_name_the_line(tmp_path: Path) -> None:
    edges = [{"src": 10, "type": "written_by", "dst": 20}, {"src": 10, "type": "written_by", "dst": 999}]
    bundle = write_bundle(tmp_path / "b", edges=edges)
    with pytest.raises(BundleError, match=r"edges.jsonl:2: edge dst 999 is not a node id"):
        load_bundle(bundle)
    edges = [{"src": 10, "type": "written_by", "dst": 20}, {"src": 20, "type": "written_by", "dst": 10}]
    with pytest.raises(BundleError, match=r"edges.jsonl:2: edge 'written_by' connects author → paper"):
        load_bundle(write_bundle(tmp_path / "c", edges=edges))


def test_a_corrupt_gzip_falls_back_and_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "edges.jsonl.gz"
    path.write_bytes(gzip.compress(b'{"src": 1, "type": "cites", "dst": 2}\n' * 1000)[:-30])
    assert read_canonical_edges(path, NAMES) is None
