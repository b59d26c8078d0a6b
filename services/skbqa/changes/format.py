"""The change format: one JSON object per line (`.jsonl` or `.jsonl.gz`), checked like the bundle loader checks a
bundle, so every error names the file, the line and the problem.

    {"op": "upsert_node", "node": {"id": 7, "type": "drug", "name": "...", "attrs": {...}, "text": "..."}}
    {"op": "delete_node", "id": 7}
    {"op": "add_edge", "src": 7, "type": "indication", "dst": 12}
    {"op": "remove_edge", "src": 7, "type": "indication", "dst": 12}

This module checks shape only (fields, types, sizes); whether a change fits the schema and the knowledge base
(`changes.state`) is checked when it is applied.
"""

from __future__ import annotations

import gzip
import json
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skbqa.common.errors import BundleError, clip
from skbqa.skb.bundle import SCALARS, is_node_id
from skbqa.skb.jsonl import LONE_SURROGATE, has_lone_surrogate, json_problem
from skbqa.skb.model import Scalar

MAX_LINE_BYTES = 8 << 20  # one change; a longer line is refused before it is read whole
MAX_BATCH = 1_000_000  # changes in one file or one ApplyChanges call
OPS = ("upsert_node", "delete_node", "add_edge", "remove_edge")


class ChangeError(BundleError):
    """A change that cannot be applied; names where it came from (file or stream), its line and the problem."""


@dataclass(frozen=True)
class UpsertNode:
    id: int
    type: str
    name: str
    text: str
    attrs: Mapping[str, Scalar] = field(default_factory=dict)


@dataclass(frozen=True)
class DeleteNode:
    id: int


@dataclass(frozen=True)
class AddEdge:
    src: int
    type: str
    dst: int


@dataclass(frozen=True)
class RemoveEdge:
    src: int
    type: str
    dst: int


Change = UpsertNode | DeleteNode | AddEdge | RemoveEdge


def _id(obj: Mapping[str, Any], key: str, where: str, line: int) -> int:
    value = obj.get(key)
    if not is_node_id(value):
        raise ChangeError(where, line, f"'{key}' must be a 64-bit integer node id, got {clip(repr(value))}")
    return value


def _string(obj: Mapping[str, Any], key: str, where: str, line: int, *, required: bool) -> str:
    value = obj.get(key, None if required else "")
    if not isinstance(value, str) or (required and not value):
        raise ChangeError(where, line, f"'{key}' must be a {'non-empty ' if required else ''}string")
    return value


def parse_change(obj: Any, where: str, line: int) -> Change:
    """One decoded line → a change; ChangeError naming `where:line` when its shape is wrong."""
    if not isinstance(obj, dict):
        raise ChangeError(where, line, "each change must be a JSON object")
    op = obj.get("op")
    if op not in OPS:
        raise ChangeError(where, line, f"'op' must be one of {', '.join(OPS)}, got {clip(repr(op))}")
    if op == "upsert_node":
        node = obj.get("node")
        if not isinstance(node, dict):
            raise ChangeError(where, line, "upsert_node needs 'node': an object with id, type, name, text, attrs")
        attrs = node.get("attrs") or {}
        if not isinstance(attrs, dict) or not all(isinstance(v, SCALARS) for v in attrs.values()):
            raise ChangeError(where, line, "'attrs' must be an object of scalar values")
        return UpsertNode(
            id=_id(node, "id", where, line),
            type=_string(node, "type", where, line, required=True),
            name=_string(node, "name", where, line, required=False),
            text=_string(node, "text", where, line, required=False),
            attrs=attrs,
        )
    if op == "delete_node":
        return DeleteNode(_id(obj, "id", where, line))
    kind = AddEdge if op == "add_edge" else RemoveEdge
    return kind(
        _id(obj, "src", where, line),
        _string(obj, "type", where, line, required=True),
        _id(obj, "dst", where, line),
    )


def change_to_json(change: Change) -> dict[str, Any]:
    """The line a change is written as (the log stores changes in exactly this form)."""
    if isinstance(change, UpsertNode):
        node = {
            "id": change.id,
            "type": change.type,
            "name": change.name,
            "attrs": dict(change.attrs),
            "text": change.text,
        }
        return {"op": "upsert_node", "node": node}
    if isinstance(change, DeleteNode):
        return {"op": "delete_node", "id": change.id}
    op = "add_edge" if isinstance(change, AddEdge) else "remove_edge"
    return {"op": op, "src": change.src, "type": change.type, "dst": change.dst}


def decode_line(raw: bytes, where: str, line: int) -> Change | None:
    """A line's bytes → its change (None for a blank line)."""
    if len(raw) > MAX_LINE_BYTES:
        raise ChangeError(where, line, f"the change is longer than the {MAX_LINE_BYTES >> 20} MiB limit per line")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ChangeError(where, line, f"not UTF-8: {exc.reason}") from None
    if not text.strip():
        return None
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ChangeError(where, line, f"malformed JSON: {exc.msg} (column {exc.colno})") from None
    except (ValueError, RecursionError) as exc:
        raise ChangeError(where, line, f"malformed JSON: {json_problem(exc)}") from None
    if has_lone_surrogate(text, obj):
        raise ChangeError(where, line, LONE_SURROGATE)
    return parse_change(obj, where, line)


def read_changes(path: Path) -> list[tuple[int, Change]]:
    """Every change of a file with its line number; the first problem raises ChangeError (nothing is applied
    from a file with a bad line)."""
    path = Path(path)
    if path.is_dir():
        raise ChangeError(str(path), None, "is a directory, not a change file (.jsonl or .jsonl.gz)")
    if not path.is_file():
        raise ChangeError(str(path), None, "change file not found")
    return list(_numbered(path))


def _numbered(path: Path) -> Iterator[tuple[int, Change]]:
    opener: Any = gzip.open if path.name.endswith(".gz") else open
    count = 0
    try:
        with opener(path, "rb") as handle:
            line = 0
            while True:
                raw = handle.readline(MAX_LINE_BYTES + 1)
                if not raw:
                    return
                line += 1
                if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
                    decode_line(raw, path.name, line)  # raises: too long
                change = decode_line(raw, path.name, line)
                if change is None:
                    continue
                count += 1
                if count > MAX_BATCH:
                    raise ChangeError(path.name, line, f"more than {MAX_BATCH:,} changes in one file; split it")
                yield line, change
    except (OSError, EOFError, zlib.error) as exc:
        raise ChangeError(path.name, None, f"cannot read file: {clip(str(exc))}") from None
