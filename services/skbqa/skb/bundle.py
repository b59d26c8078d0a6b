"""Loader for the SKB bundle format of ARCHITECTURE.md, with validation that names file, line and problem.

Layout: `schema.json`, `nodes.jsonl[.gz]`, `edges.jsonl[.gz]`, and any number of QA files (`*.jsonl`).
Loading never writes anything; ingest writes its index aside and renames it only when complete.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, TypeGuard

import numpy as np

from skbqa.common.errors import BundleError
from skbqa.skb.fast_edges import read_canonical_edges
from skbqa.skb.jsonl import find_jsonl, read_jsonl
from skbqa.skb.model import SKB, Scalar, lookup_positions
from skbqa.skb.schema import Schema

logger = logging.getLogger(__name__)

SCALARS = (str, int, float, bool, type(None))
_INT64 = (-(2**63), 2**63 - 1)


def is_node_id(value: Any) -> TypeGuard[int]:
    """An integer (not a bool) that fits the int64 id arrays."""
    return isinstance(value, int) and not isinstance(value, bool) and _INT64[0] <= value <= _INT64[1]


def load_bundle(directory: Path | str) -> SKB:
    directory = Path(directory)
    if not directory.is_dir():
        raise BundleError(str(directory), None, "bundle directory not found")
    schema = Schema.load(directory / "schema.json")
    nodes_path = find_jsonl(directory, "nodes")
    edges_path = find_jsonl(directory, "edges")
    ids, types, names, texts, attrs, lines = _read_nodes(nodes_path, schema)
    order = np.argsort(ids, kind="stable")
    ids, types, lines = ids[order], types[order], lines[order]
    dup = np.flatnonzero(ids[1:] == ids[:-1])
    if dup.size:
        first, second = sorted((int(lines[dup[0]]), int(lines[dup[0] + 1])))
        raise BundleError(
            nodes_path.name, second, f"duplicate node id {int(ids[dup[0]])} (first seen on line {first})"
        )
    names = [names[i] for i in order]
    texts = [texts[i] for i in order]
    attrs = [attrs[i] for i in order]
    skb = SKB(schema, ids, types, names, texts, attrs, *_empty_edges())
    skb.edge_src, skb.edge_dst, skb.edge_type = _read_edges(edges_path, skb)
    logger.info("loaded bundle %s: %d nodes, %d edges", directory, skb.num_nodes, skb.num_edges)
    return skb


def _empty_edges() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros(0, np.int16)


def _read_nodes(
    path: Path, schema: Schema
) -> tuple[np.ndarray, np.ndarray, list[str], list[str], list[dict[str, Scalar]], np.ndarray]:
    ids: list[int] = []
    types: list[int] = []
    names: list[str] = []
    texts: list[str] = []
    attrs: list[dict[str, Scalar]] = []
    lines: list[int] = []
    for lineno, obj in read_jsonl(path):
        node_id = obj.get("id")
        if not is_node_id(node_id):
            raise BundleError(path.name, lineno, f"'id' must be a 64-bit integer, got {node_id!r}")
        type_name = obj.get("type")
        if not isinstance(type_name, str) or not schema.has_node_type(type_name):
            raise BundleError(path.name, lineno, f"node type {type_name!r} is not declared in schema.json")
        name = obj.get("name", "")
        text = obj.get("text", "")
        if not isinstance(name, str) or not isinstance(text, str):
            raise BundleError(path.name, lineno, "'name' and 'text' must be strings")
        node_attrs = _check_attrs(obj.get("attrs", {}), path.name, lineno)
        ids.append(node_id)
        types.append(schema.node_code(type_name))
        names.append(name)
        texts.append(text)
        attrs.append(node_attrs)
        lines.append(lineno)
    if not ids:
        raise BundleError(path.name, None, "no nodes")
    return (
        np.asarray(ids, np.int64),
        np.asarray(types, np.int16),
        names,
        texts,
        attrs,
        np.asarray(lines, np.int64),
    )


def _check_attrs(raw: Any, file: str, lineno: int) -> dict[str, Scalar]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise BundleError(file, lineno, "'attrs' must be an object of scalar values")
    for key, value in raw.items():
        if not isinstance(value, SCALARS):
            raise BundleError(
                file, lineno, f"attribute {key!r} must be a scalar (string, number, boolean or null)"
            )
    return raw


def _read_edges(path: Path, skb: SKB) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    schema = skb.schema
    fast = read_canonical_edges(path, schema.edge_names)
    if fast is not None:
        # Canonical lines (what `json.dumps` and `skbqa synth` write): parsed without a Python loop; with no blank
        # lines, edge i sits on line i + 1, which is all the error messages below need.
        src_arr, dst_arr, type_arr = fast
        line_arr: np.ndarray | None = None
    else:
        src_arr, dst_arr, type_arr, line_arr = _read_edge_lines(path, schema)
    src_pos = _positions_or_error(skb, src_arr, line_arr, path.name, "src")
    dst_pos = _positions_or_error(skb, dst_arr, line_arr, path.name, "dst")
    _check_signatures(skb, src_pos, dst_pos, type_arr, line_arr, path.name)
    return src_pos.astype(np.int32), dst_pos.astype(np.int32), type_arr


def _read_edge_lines(path: Path, schema: Schema) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The general reader: any JSON layout, one validated object per line, errors name their line."""
    src: list[int] = []
    dst: list[int] = []
    etype: list[int] = []
    lines: list[int] = []
    for lineno, obj in read_jsonl(path):
        s, t, d = obj.get("src"), obj.get("type"), obj.get("dst")
        if not is_node_id(s) or not is_node_id(d):
            raise BundleError(path.name, lineno, f"'src' and 'dst' must be integer node ids, got {s!r}, {d!r}")
        if not isinstance(t, str) or not schema.has_edge_type(t):
            raise BundleError(path.name, lineno, f"edge type {t!r} is not declared in schema.json")
        src.append(s)
        dst.append(d)
        etype.append(schema.edge_code(t))
        lines.append(lineno)
    return (
        np.asarray(src, np.int64),
        np.asarray(dst, np.int64),
        np.asarray(etype, np.int16),
        np.asarray(lines, np.int64),
    )


def _line(lines: np.ndarray | None, i: int) -> int:
    return int(lines[i]) if lines is not None else i + 1


def _positions_or_error(skb: SKB, ids: np.ndarray, lines: np.ndarray | None, file: str, end: str) -> np.ndarray:
    pos = lookup_positions(skb.node_ids, ids)
    bad = np.flatnonzero(pos < 0)
    if bad.size:
        i = int(bad[0])
        raise BundleError(file, _line(lines, i), f"edge {end} {int(ids[i])} is not a node id in nodes.jsonl")
    return pos


def _check_signatures(
    skb: SKB, src: np.ndarray, dst: np.ndarray, etype: np.ndarray, lines: np.ndarray | None, file: str
) -> None:
    """Every edge's (source type, target type) must be one of the signatures declared for its name."""
    schema = skb.schema
    n_types = len(schema.node_types)
    allowed = np.zeros((len(schema.edge_names), n_types, n_types), dtype=bool)
    for e in schema.edge_types:
        allowed[schema.edge_code(e.name), schema.node_code(e.source), schema.node_code(e.target)] = True
    if src.size == 0:
        return
    ok = allowed[etype, skb.node_type[src], skb.node_type[dst]]
    bad = np.flatnonzero(~ok)
    if bad.size:
        i = int(bad[0])
        name = schema.edge_names[int(etype[i])]
        got = (skb.type_name(int(src[i])), skb.type_name(int(dst[i])))
        raise BundleError(
            file,
            _line(lines, i),
            f"edge '{name}' connects {got[0]} → {got[1]}, but the schema allows only "
            + ", ".join(f"{a} → {b}" for a, b in schema.signatures(name)),
        )
