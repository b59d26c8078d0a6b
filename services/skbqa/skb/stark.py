"""Loader for STaRK's native processed files (Wu et al. 2024, https://github.com/snap-stanford/stark).

Layout, as checked against snap-stanford/stark (`stark_qa/tools/io.py` `save_files`/`load_files`,
`stark_qa/skb/knowledge_base.py`, `stark_qa/skb/{prime,mag,amazon}.py`, `stark_qa/retrieval/dataset.py`):

SKB — `save_files` writes every dict as `<key>.pkl` (plain `pickle.dump`) and every tensor as `<key>.pt`
(`torch.save`) into one directory:

- `node_info.pkl`      dict: node index → dict of fields. Node indices are exactly 0..N-1 and index `node_types`.
- `node_types.pt`      LongTensor [N]: type code of each node.
- `node_type_dict.pkl` dict: type code → node type name.
- `edge_index.pt`      LongTensor [2, E]: row 0 = source node index, row 1 = target node index.
- `edge_types.pt`      LongTensor [E]: relation code of each edge.
- `edge_type_dict.pkl` dict: relation code → relation name.

Where the directory is: PRIME `<root>/prime/processed/` (all six files); Amazon `<root>/amazon/processed/cache/
brand-category-color/` (the graph with brand/category/color nodes; `<root>/amazon/processed/` itself holds only
the product graph, without `node_types.pt` / `node_type_dict.pkl`); MAG `<root>/mag/processed/`, which holds no
type dicts because `MagSKB` keeps them as class constants — when *both* dict files are missing (and none is
passed in), the MAG constants below are used, and every node's own 'type' field must then agree with them.
`load_stark_skb` accepts the directory holding `node_info.pkl`, or a dataset root, in which it looks in
`processed/cache/brand-category-color/` and then `processed/`.

Node fields seen in the sources: PRIME `{'id', 'type', 'name', 'source', 'details': {...}}` ('id' is the source
database's id, not the node index); MAG the columns of the MAG tables ('type', 'DisplayName' for author /
institution / field_of_study, 'title' and 'abstract' for papers, ids, counts, -1 for unknown); Amazon products
`{'title', 'brand', 'category': [...], 'feature': [...], 'description': [...], 'review': [{...}], 'qa': [{...}],
...}` and meta nodes `{'brand_name' | 'category_name' | 'color_name': ...}`. Values built from pandas rows are
numpy scalars.

Mapping to the `SKB`:

- ids: the node indices 0..N-1 (so positions equal ids). Edges are kept as stored; STaRK's own `SKB.__init__`
  additionally makes the graph undirected at load time (`to_undirected`), which this loader does not do.
- schema: node types from the node type dict (ordered by code); one `EdgeType` per distinct *observed*
  (relation, source type, target type) triple, ordered by relation code, then source and target type;
  relations that no edge uses get no signature. Descriptions are empty.
- name: the first non-empty string among 'name', 'title', 'DisplayName', then a top-level key ending in
  '_name' (Amazon's brand/category/color nodes); otherwise `str(node index)`. `NodeType.name_attr` is the key
  most often used for that type.
- text: one "key: value" line per remaining top-level field, skipping the name field, 'type', id-like keys
  ('id', '…_id', '…Id') and keys starting with '_'. A dict-valued field becomes one "field.key: value" line per
  entry; lists are joined with "; ", dicts inside lists rendered as "{k: v, …}", whitespace collapsed. Each line
  is capped at `max_field_chars` and the text at `max_text_chars` (cut marked with "…").
- attrs: the top-level scalar fields (str, int, float, bool), numpy scalars converted to Python.
- Empty values — None, "", "nan", NaN, empty lists/dicts (what STaRK's `clean_dict` drops) — are skipped.

Pickles are untrusted input: `pickle.load` on a crafted file runs arbitrary code. They are therefore read with a
restricted `Unpickler` that resolves only built-in containers/scalars (set, frozenset, bytearray, complex),
`_codecs.encode` with latin-1 (how protocol ≤ 2 stores bytes) and numpy scalar / ndarray (incl. protocol 5's
`_frombuffer`) / dtype reconstruction (STaRK's dicts hold numpy scalars from pandas rows; these constructors build data, never call
user code). Any other global is refused with a `BundleError` naming it. Tensors are read with
`torch.load(..., weights_only=True)` for the same reason.

QA (`stark_qa/retrieval/dataset.py`): `<root>/<name>/stark_qa/stark_qa.csv` (or
`stark_qa_human_generated_eval.csv`) with columns `id`, `query`, `answer_ids` — the latter a Python list literal
such as "[1, 2]", which STaRK itself `eval`s and this loader parses with `ast.literal_eval` — plus
`<root>/<name>/split/{train,val,test}.index`, one query id per line (the split directory is a sibling of the
`stark_qa/` directory).
"""

from __future__ import annotations

import ast
import codecs
import csv
import logging
import math
import pickle
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from skbqa.common.errors import BackendUnavailableError, BundleError, InvalidInputError
from skbqa.skb.model import SKB, QAItem, Scalar
from skbqa.skb.schema import EdgeType, NodeType, Schema

logger = logging.getLogger(__name__)

NODE_INFO = "node_info.pkl"
NODE_TYPES = "node_types.pt"
NODE_TYPE_DICT = "node_type_dict.pkl"
EDGE_INDEX = "edge_index.pt"
EDGE_TYPES = "edge_types.pt"
EDGE_TYPE_DICT = "edge_type_dict.pkl"
QA_CSV = "stark_qa.csv"
SPLITS = ("train", "val", "test")

MAX_FIELD_CHARS = 2000
MAX_TEXT_CHARS = 8000
NAME_KEYS = ("name", "title", "DisplayName")

# `MagSKB.node_type_dict` / `MagSKB.edge_type_dict` (stark_qa/skb/mag.py): MAG's processed directory omits them.
MAG_NODE_TYPES = {0: "author", 1: "institution", 2: "field_of_study", 3: "paper"}
MAG_EDGE_TYPES = {
    0: "author___affiliated_with___institution",
    1: "paper___cites___paper",
    2: "paper___has_topic___field_of_study",
    3: "author___writes___paper",
}

_SUBDIRS = (Path("processed") / "cache" / "brand-category-color", Path("processed"))
_SCALARS = (str, int, float, bool)
_SPLIT_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")


# --------------------------------------------------------------------------------------------------- SKB


def is_stark_dir(path: Path | str) -> bool:
    """True when `path` (or its `processed/…` subdirectory) holds STaRK's `node_info.pkl` and `edge_index.pt`."""
    try:
        found = _resolve_dir(Path(path))
        return found is not None and (found / EDGE_INDEX).is_file()
    except OSError:
        return False


def load_stark_skb(
    directory: Path | str,
    *,
    name: str | None = None,
    node_type_dict: Mapping[int, str] | None = None,
    edge_type_dict: Mapping[int, str] | None = None,
    max_field_chars: int = MAX_FIELD_CHARS,
    max_text_chars: int = MAX_TEXT_CHARS,
) -> SKB:
    """Read a STaRK processed SKB directory (see the module docstring); type dicts passed in override the files."""
    directory = Path(directory)
    if not directory.is_dir():
        raise BundleError(str(directory), None, "STaRK directory not found")
    data_dir = _resolve_dir(directory)
    if data_dir is None:
        looked = ", ".join(str(s) + "/" for s in _SUBDIRS)
        raise BundleError(NODE_INFO, None, f"file not found in {directory} (also looked in {looked})")
    torch = _import_torch()

    node_types_raw = _load_tensor(torch, data_dir / NODE_TYPES, ndim=1)
    edge_index = _load_tensor(torch, data_dir / EDGE_INDEX, ndim=2)
    edge_types_raw = _load_tensor(torch, data_dir / EDGE_TYPES, ndim=1)
    n = int(node_types_raw.shape[0])
    if n == 0:
        raise BundleError(NODE_TYPES, None, "no nodes")
    if edge_index.shape[0] != 2:
        raise BundleError(EDGE_INDEX, None, f"expected shape [2, E], got {list(edge_index.shape)}")
    if edge_index.shape[1] != edge_types_raw.shape[0]:
        raise BundleError(
            EDGE_TYPES,
            None,
            f"{edge_types_raw.shape[0]} edge types for {edge_index.shape[1]} edges in {EDGE_INDEX}",
        )
    bad = np.flatnonzero(((edge_index < 0) | (edge_index >= n)).any(axis=0))
    if bad.size:
        j = int(bad[0])
        src, dst = int(edge_index[0, j]), int(edge_index[1, j])
        raise BundleError(
            EDGE_INDEX, None, f"edge {j} ({src} → {dst}) has an endpoint outside the node range 0..{n - 1}"
        )

    node_info = _load_pickle(data_dir / NODE_INFO)
    ntd, etd, fallback = _type_dicts(data_dir, node_type_dict, edge_type_dict)
    node_codes = sorted(ntd)
    node_type = _map_codes(
        node_types_raw, {c: i for i, c in enumerate(node_codes)}, NODE_TYPES, NODE_TYPE_DICT, "node"
    )
    type_names = [ntd[c] for c in node_codes]
    names, texts, attrs, name_keys = _read_node_info(
        node_info, node_type, type_names, max_field_chars, max_text_chars, require_type=fallback
    )

    edge_codes = sorted(etd)
    edge_rank = _map_codes(
        edge_types_raw, {c: i for i, c in enumerate(edge_codes)}, EDGE_TYPES, EDGE_TYPE_DICT, "edge"
    )
    src_t = node_type[edge_index[0]].astype(np.int64)
    dst_t = node_type[edge_index[1]].astype(np.int64)
    t = len(node_codes)
    combos = np.unique((edge_rank.astype(np.int64) * t + src_t) * t + dst_t)
    edge_types: list[EdgeType] = []
    for combo in combos.tolist():
        rank, rest = divmod(combo, t * t)
        sig = EdgeType(etd[edge_codes[rank]], type_names[rest // t], type_names[rest % t])
        if sig not in edge_types:
            edge_types.append(sig)

    node_types = [
        NodeType(type_names[i], "", name_keys[i].most_common(1)[0][0] if name_keys[i] else "name")
        for i in range(t)
    ]
    schema_name = name or _dataset_name(data_dir)
    schema = Schema(schema_name, f"STaRK knowledge base '{schema_name}'", node_types, edge_types)
    name_code = np.array(
        [schema.edge_code(etd[c]) if schema.has_edge_type(etd[c]) else -1 for c in edge_codes] or [0], np.int64
    )
    skb = SKB(
        schema=schema,
        node_ids=np.arange(n, dtype=np.int64),
        node_type=node_type.astype(np.int16),
        names=names,
        texts=texts,
        attrs=attrs,
        edge_src=edge_index[0].astype(np.int32),
        edge_dst=edge_index[1].astype(np.int32),
        edge_type=name_code[edge_rank].astype(np.int16),
    )
    logger.info(
        "loaded STaRK SKB %s: %d nodes, %d edges, %d node types, %d edge signatures%s",
        data_dir,
        skb.num_nodes,
        skb.num_edges,
        len(node_types),
        len(edge_types),
        " (MAG type dicts)" if fallback else "",
    )
    return skb


def _resolve_dir(directory: Path) -> Path | None:
    for candidate in (directory, *(directory / sub for sub in _SUBDIRS)):
        if (candidate / NODE_INFO).is_file():
            return candidate
    return None


def _dataset_name(data_dir: Path) -> str:
    p = data_dir.resolve()
    while p.parent != p and (p.name in ("processed", "cache") or p.parent.name == "cache"):
        p = p.parent
    return p.name or "stark"


def _import_torch() -> Any:
    try:
        import torch
    except ImportError as exc:  # pragma: no cover - torch is a core dependency
        raise BackendUnavailableError(f"reading STaRK .pt files needs torch: {exc}") from None
    return torch


def _load_tensor(torch: Any, path: Path, ndim: int) -> np.ndarray:
    if not path.is_file():
        hint = " (for Amazon use processed/cache/brand-category-color/)" if path.name == NODE_TYPES else ""
        raise BundleError(path.name, None, f"file not found in {path.parent}{hint}")
    try:
        obj = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise BundleError(path.name, None, f"cannot load tensor (weights_only): {first[:300]}") from None
    if not isinstance(obj, torch.Tensor):
        raise BundleError(path.name, None, f"expected a tensor, got {type(obj).__name__}")
    arr = obj.detach().cpu().numpy()
    if arr.ndim != ndim:
        raise BundleError(path.name, None, f"expected a {ndim}-dimensional tensor, got shape {list(arr.shape)}")
    if np.issubdtype(arr.dtype, np.integer):
        return arr.astype(np.int64, copy=False)
    if np.issubdtype(arr.dtype, np.floating) and np.all(np.isfinite(arr)) and np.all(arr == np.round(arr)):
        return arr.astype(np.int64)  # STaRK builds Amazon's product-only node_types with torch.zeros (float)
    raise BundleError(path.name, None, f"expected an integer tensor, got dtype {arr.dtype}")


def _type_dicts(
    data_dir: Path, node_arg: Mapping[int, str] | None, edge_arg: Mapping[int, str] | None
) -> tuple[dict[int, str], dict[int, str], bool]:
    """(node type dict, edge type dict, whether the MAG constants were used)."""
    node_file, edge_file = data_dir / NODE_TYPE_DICT, data_dir / EDGE_TYPE_DICT
    if node_arg is None and edge_arg is None and not node_file.exists() and not edge_file.exists():
        return dict(MAG_NODE_TYPES), dict(MAG_EDGE_TYPES), True
    ntd = _check_type_dict(node_arg if node_arg is not None else _load_pickle(node_file), NODE_TYPE_DICT)
    etd = _check_type_dict(edge_arg if edge_arg is not None else _load_pickle(edge_file), EDGE_TYPE_DICT)
    if len(set(ntd.values())) != len(ntd):
        raise BundleError(NODE_TYPE_DICT, None, "node type names must be unique")
    return ntd, etd, False


def _check_type_dict(raw: Any, file: str) -> dict[int, str]:
    if not isinstance(raw, Mapping) or not raw:
        raise BundleError(file, None, "expected a non-empty dict of integer code → type name")
    out: dict[int, str] = {}
    for key, value in raw.items():
        code = _as_int(key)
        value = _plain(value)
        if code is None or not isinstance(value, str) or not value:
            raise BundleError(file, None, f"entry {key!r}: {value!r} is not integer code → non-empty name")
        out[code] = value
    return out


def _map_codes(codes: np.ndarray, lut: dict[int, int], file: str, dict_file: str, what: str) -> np.ndarray:
    """STaRK type codes → dense indices; a code missing from the dict names the first node/edge that uses it."""
    if codes.size == 0:
        return np.zeros(0, np.int64)
    uniq, inverse = np.unique(codes, return_inverse=True)
    missing = [int(c) for c in uniq.tolist() if int(c) not in lut]
    if missing:
        first = int(np.flatnonzero(codes == missing[0])[0])
        raise BundleError(
            file, None, f"{what} {first} has type code {missing[0]}, which {dict_file} does not define"
        )
    return np.asarray([lut[int(c)] for c in uniq.tolist()], np.int64)[inverse.reshape(-1)]


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


class _RestrictedUnpickler(pickle.Unpickler):
    """Resolves only data constructors: built-in containers/scalars and numpy scalars, arrays and dtypes."""

    _ALLOWED = frozenset(
        {
            ("builtins", "set"),
            ("builtins", "frozenset"),
            ("builtins", "bytearray"),
            ("builtins", "complex"),
            ("numpy", "dtype"),
            ("numpy", "ndarray"),
            ("numpy.core.multiarray", "scalar"),
            ("numpy.core.multiarray", "_reconstruct"),
            ("numpy._core.multiarray", "scalar"),
            ("numpy._core.multiarray", "_reconstruct"),
            ("numpy.core.numeric", "_frombuffer"),  # protocol 5 arrays
            ("numpy._core.numeric", "_frombuffer"),
        }
    )

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) == ("_codecs", "encode"):
            return _latin1_encode
        if (module, name) in self._ALLOWED:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"{module}.{name}")


def _latin1_encode(text: str, encoding: str = "utf-8") -> bytes:
    if encoding.replace("-", "").lower() not in ("latin1", "iso88591"):
        raise pickle.UnpicklingError(f"_codecs.encode with encoding {encoding!r}")
    return codecs.encode(text, "latin-1")


def _load_pickle(path: Path) -> Any:
    if not path.is_file():
        raise BundleError(path.name, None, f"file not found in {path.parent}")
    try:
        with path.open("rb") as handle:
            return _RestrictedUnpickler(handle).load()
    except pickle.UnpicklingError as exc:
        raise BundleError(
            path.name,
            None,
            f"refused or malformed pickle ({exc}): only built-in containers/scalars and numpy scalars/arrays "
            "are allowed, since pickles are untrusted input",
        ) from None
    except Exception as exc:
        raise BundleError(path.name, None, f"cannot unpickle: {type(exc).__name__}: {exc}") from None


# ---------------------------------------------------------------------------------------------------- QA


def load_stark_qa(
    csv_path: Path | str, split_dir: Path | str | None = None, split: str | None = None
) -> list[QAItem]:
    """STaRK's `stark_qa.csv` → QA items (ids as strings, answers as node indices).

    `csv_path` may also be the `stark_qa/` directory or the dataset's QA root holding it. With `split`, only the
    ids of `<split_dir>/<split>.index` are returned, in that file's order; `split_dir` defaults to the `split/`
    directory beside the CSV or beside its parent directory (STaRK's layout). With only `split_dir`, every item
    listed in one of its train/val/test files gets `meta["split"]`. Extra CSV columns land in `meta`.
    """
    path = _resolve_csv(Path(csv_path))
    items = _read_qa_csv(path)
    if split is None and split_dir is None:
        return list(items.values())
    if split is not None:
        if not _SPLIT_NAME.match(split):
            raise InvalidInputError(f"invalid split name {split!r}", split=split)
        sdir = Path(split_dir) if split_dir is not None else _find_split_dir(path)
        if not sdir.is_dir():
            raise BundleError(str(sdir), None, "split directory not found")
        chosen: list[QAItem] = []
        for _lineno, qid in _read_index(sdir / f"{split}.index", items, path.name):
            item = items[qid]
            item.meta["split"] = split
            chosen.append(item)
        return chosen
    assert split_dir is not None
    sdir = Path(split_dir)
    if not sdir.is_dir():
        raise BundleError(str(sdir), None, "split directory not found")
    seen: dict[str, str] = {}
    for name in SPLITS:
        index = sdir / f"{name}.index"
        if not index.is_file():
            continue
        for lineno, qid in _read_index(index, items, path.name):
            if qid in seen:
                raise BundleError(index.name, lineno, f"query id {qid} is also listed in {seen[qid]}.index")
            seen[qid] = name
            items[qid].meta["split"] = name
    return list(items.values())


def _resolve_csv(path: Path) -> Path:
    if path.is_dir():
        for candidate in (path / QA_CSV, path / "stark_qa" / QA_CSV):
            if candidate.is_file():
                return candidate
        raise BundleError(QA_CSV, None, f"file not found in {path} (also looked in stark_qa/)")
    if not path.is_file():
        raise BundleError(str(path), None, "QA file not found")
    return path


def _find_split_dir(csv_path: Path) -> Path:
    candidates = (csv_path.parent / "split", csv_path.parent.parent / "split")
    for candidate in candidates:
        if candidate.is_dir():
            return candidate
    raise BundleError(
        "split", None, f"no split directory found (looked in {', '.join(map(str, candidates))}); pass split_dir"
    )


def _read_qa_csv(path: Path) -> dict[str, QAItem]:
    items: dict[str, QAItem] = {}
    lines: dict[str, int] = {}
    try:
        with path.open(newline="", encoding="utf-8-sig") as handle:
            reader = csv.reader(handle)
            header = next(reader, None)
            if header is None:
                raise BundleError(path.name, None, "empty file")
            header = [h.strip() for h in header]
            missing = [c for c in ("id", "query", "answer_ids") if c not in header]
            if missing:
                raise BundleError(path.name, 1, f"missing column(s) {', '.join(missing)} in header {header}")
            col = {c: header.index(c) for c in ("id", "query", "answer_ids")}
            extra = [
                (i, h)
                for i, h in enumerate(header)
                if h and not h.startswith("Unnamed") and h not in ("id", "query", "answer_ids")
            ]
            start = reader.line_num + 1
            for row in reader:
                lineno, start = start, reader.line_num + 1
                if not any(cell.strip() for cell in row):
                    continue
                if len(row) != len(header):
                    raise BundleError(path.name, lineno, f"expected {len(header)} fields, got {len(row)}")
                qid_raw = row[col["id"]].strip()
                try:
                    qid = str(int(qid_raw))
                except ValueError:
                    raise BundleError(path.name, lineno, f"'id' must be an integer, got {qid_raw!r}") from None
                if qid in items:
                    raise BundleError(
                        path.name, lineno, f"duplicate query id {qid} (first seen on line {lines[qid]})"
                    )
                query = row[col["query"]]
                if not query.strip():
                    raise BundleError(path.name, lineno, "'query' must be a non-empty string")
                raw_answers = row[col["answer_ids"]]
                answers = _parse_answer_ids(raw_answers)
                if answers is None:
                    raise BundleError(
                        path.name,
                        lineno,
                        f"'answer_ids' must be a list literal of integer node ids, got {raw_answers[:80]!r}",
                    )
                meta: dict[str, Any] = {h: row[i] for i, h in extra if row[i].strip()}
                items[qid] = QAItem(qid, query, answers, meta)
                lines[qid] = lineno
    except csv.Error as exc:
        raise BundleError(path.name, None, f"malformed CSV: {exc}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise BundleError(path.name, None, f"cannot read file: {exc}") from None
    return items


def _parse_answer_ids(raw: str) -> list[int] | None:
    """Safe parse of "[1, 2]" (Python or JSON list literal); None when it is anything else."""
    try:
        value = ast.literal_eval(raw.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    if not isinstance(value, list | tuple):
        return None
    if not all(isinstance(a, int) and not isinstance(a, bool) for a in value):
        return None
    return list(value)


def _read_index(path: Path, items: Mapping[str, QAItem], csv_name: str) -> list[tuple[int, str]]:
    if not path.is_file():
        raise BundleError(path.name, None, f"split file not found in {path.parent}")
    out: list[tuple[int, str]] = []
    seen: set[str] = set()
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise BundleError(path.name, None, f"cannot read file: {exc}") from None
    for lineno, line in enumerate(text.splitlines(), start=1):
        raw = line.strip()
        if not raw:
            continue
        try:
            qid = str(int(raw))
        except ValueError:
            raise BundleError(path.name, lineno, f"expected an integer query id, got {raw!r}") from None
        if qid not in items:
            raise BundleError(path.name, lineno, f"query id {qid} is not in {csv_name}")
        if qid in seen:
            raise BundleError(path.name, lineno, f"query id {qid} is listed twice")
        seen.add(qid)
        out.append((lineno, qid))
    return out
