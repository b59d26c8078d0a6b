"""STaRK's `node_info.pkl` fields → each node's name, text and scalar attributes.

Fields seen in the sources: PRIME `{'id', 'type', 'name', 'source', 'details': {...}}`; MAG the columns of its
tables ('DisplayName', or 'title' and 'abstract' for papers); Amazon products `{'title', 'brand', 'category':
[...], 'review': [{...}], ...}` and meta nodes `{'brand_name' | 'category_name' | 'color_name': ...}`.
- name: the first non-empty string among `NAME_KEYS`, then a top-level key ending in '_name'; else the index.
- text: one "key: value" line per other field, skipping 'type' and id-like or '_' keys; dict fields give one
  "field.key: value" line per entry, lists join with "; "; each line and the text are capped (cut marked "…").
- attrs: the top-level scalar fields, numpy scalars converted to Python. Empty values (None, "", "nan", NaN,
  empty lists/dicts: what STaRK's `clean_dict` drops) are skipped everywhere.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from typing import Any

import numpy as np

from skbqa.common.errors import BundleError
from skbqa.skb.model import Scalar
from skbqa.skb.stark_layout import NODE_INFO, NODE_TYPE_DICT, NODE_TYPES

NAME_KEYS = ("name", "title", "DisplayName")
_SCALARS = (str, int, float, bool)


def _read_node_info(
    node_info: Any,
    node_type: np.ndarray,
    type_names: list[str],
    max_field_chars: int,
    max_text_chars: int,
    require_type: bool,
) -> tuple[list[str], list[str], list[dict[str, Scalar]], list[Counter[str]]]:
    n = int(node_type.shape[0])
    if not isinstance(node_info, dict):
        raise BundleError(
            NODE_INFO, None, f"expected a dict of node index → fields, got {type(node_info).__name__}"
        )
    if len(node_info) != n:
        raise BundleError(NODE_INFO, None, f"{len(node_info)} nodes, but {NODE_TYPES} has {n}")
    for key in node_info:
        idx = _as_int(key)
        if idx is None or not 0 <= idx < n:
            raise BundleError(NODE_INFO, None, f"node key {key!r} is not an integer index in 0..{n - 1}")
    # n distinct integer keys, all in 0..n-1: exactly the indices 0..n-1.
    names: list[str] = []
    texts: list[str] = []
    attrs: list[dict[str, Scalar]] = []
    name_keys: list[Counter[str]] = [Counter() for _ in type_names]
    for i in range(n):
        raw = node_info[i]
        if not isinstance(raw, dict):
            raise BundleError(NODE_INFO, None, f"node {i}: fields must be a dict, got {type(raw).__name__}")
        try:
            info: dict[str, Any] = _plain(raw)
        except RecursionError:
            raise BundleError(NODE_INFO, None, f"node {i}: fields are nested too deeply") from None
        code = int(node_type[i])
        declared = info.get("type")
        if isinstance(declared, str) and declared != type_names[code]:
            raise BundleError(
                NODE_INFO, None, f"node {i} has 'type' {declared!r}, but {NODE_TYPES} says {type_names[code]!r}"
            )
        if require_type and not isinstance(declared, str):
            raise BundleError(
                NODE_TYPE_DICT,
                None,
                f"file not found, and node {i} has no 'type' field to check MAG's types against",
            )
        key, node_name = _pick_name(info)
        if key:
            name_keys[code][key] += 1
        names.append(node_name if key else str(i))
        skip = {"type", key} if key else {"type"}
        texts.append(_render_text(info, skip, max_field_chars, max_text_chars))
        attrs.append({k: v for k, v in info.items() if isinstance(v, _SCALARS) and not _is_empty(v)})
    return names, texts, attrs, name_keys


def _pick_name(info: dict[str, Any]) -> tuple[str, str]:
    for key in NAME_KEYS:
        value = info.get(key)
        if isinstance(value, str) and not _is_empty(value):
            return key, _collapse(value)
    for key, value in info.items():
        if key.endswith("_name") and isinstance(value, str) and not _is_empty(value):
            return key, _collapse(value)
    return "", ""


def _render_text(info: dict[str, Any], skip: set[str], max_field: int, max_total: int) -> str:
    lines: list[str] = []
    total = 0
    for key, value in info.items():
        if key in skip or _hidden(key) or _is_empty(value):
            continue
        if isinstance(value, dict):
            entries = [(f"{key}.{k}", v) for k, v in value.items() if not _hidden(k) and not _is_empty(v)]
        else:
            entries = [(key, value)]
        for label, item in entries:
            line = _cap(f"{label}: {_inline(item, max_field)}", max_field)
            lines.append(line)
            total += len(line) + 1
            if total > max_total:
                return _cap("\n".join(lines), max_total)
    return "\n".join(lines)


def _inline(value: Any, budget: int) -> str:
    if isinstance(value, dict):
        items = (f"{k}: {_inline(v, budget)}" for k, v in value.items() if not _hidden(k) and not _is_empty(v))
        return "{" + _join(items, ", ", budget) + "}"
    if isinstance(value, list):
        return _join((_inline(v, budget) for v in value if not _is_empty(v)), "; ", budget)
    return _collapse(str(value))[: budget + 1]


def _join(parts: Iterable[str], sep: str, budget: int) -> str:
    out: list[str] = []
    used = 0
    for part in parts:
        out.append(part)
        used += len(part) + len(sep)
        if used > budget:
            break
    return sep.join(out)


def _cap(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(limit - 1, 0)].rstrip() + "…"


def _collapse(text: str) -> str:
    return " ".join(text.split())


def _hidden(key: str) -> bool:
    return key.startswith("_") or key == "id" or key.endswith("_id") or key.endswith("Id")


def _is_empty(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, str):
        return value.strip() in ("", "nan")
    if isinstance(value, float):
        return math.isnan(value)
    if isinstance(value, list | dict):
        return not value
    return False


def _as_int(value: Any) -> int | None:
    if isinstance(value, bool | np.bool_):
        return None
    if isinstance(value, int | np.integer):
        return int(value)
    return None


def _plain(value: Any) -> Any:
    """Unpickled values → JSON-like Python: numpy scalars/arrays converted, tuples/sets → lists, keys → str."""
    if isinstance(value, np.generic):  # before the builtins: np.str_ / np.float64 subclass str / float
        return _plain(value.item())
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    if isinstance(value, dict):
        return {str(_plain(k)): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return [_plain(v) for v in value.tolist()]
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8", "replace")
    return str(value)
