"""Loader for STaRK's native processed files (Wu et al. 2024, https://github.com/snap-stanford/stark) as an `SKB`.

`load_stark_skb` takes the directory holding `node_info.pkl`, or a dataset root (see `stark_layout`). Mapping:
- ids: the node indices 0..N-1 (so positions equal ids). Edges are kept as stored; STaRK's own `SKB.__init__`
  makes the graph undirected at load time (`to_undirected`), which this loader does not do.
- schema: node types from the node type dict (ordered by code); one `EdgeType` per distinct *observed*
  (relation, source type, target type) triple, ordered by relation code, then source and target type;
  relations that no edge uses get no signature. Descriptions are empty.
- without both type dicts (MAG), MAG's constants apply, and every node's 'type' field must agree with them.
Names, texts and attributes come from `stark_nodes`; pickles and tensors are read safely (`stark_pickle`,
`stark_tensors`); QA files are read by `stark_qa`.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from skbqa.common.errors import BundleError
from skbqa.skb.model import SKB
from skbqa.skb.schema import EdgeType, NodeType, Schema
from skbqa.skb.stark_layout import (
    _SUBDIRS,
    EDGE_INDEX,
    EDGE_TYPE_DICT,
    EDGE_TYPES,
    MAG_EDGE_TYPES,
    MAG_NODE_TYPES,
    NODE_INFO,
    NODE_TYPE_DICT,
    NODE_TYPES,
    _dataset_name,
    _resolve_dir,
)
from skbqa.skb.stark_nodes import _as_int, _plain, _read_node_info
from skbqa.skb.stark_pickle import _load_pickle
from skbqa.skb.stark_tensors import _import_torch, _load_tensor, _map_codes

logger = logging.getLogger(__name__)

MAX_FIELD_CHARS = 2000
MAX_TEXT_CHARS = 8000


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
