"""STaRK's tensors (`node_types.pt`, `edge_index.pt`, `edge_types.pt`) as int64 numpy arrays, and type codes.

Tensors are read with `torch.load(..., weights_only=True)`, which never runs code from the file; torch is
imported only when a STaRK SKB is loaded.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from skbqa.common.errors import BackendUnavailableError, BundleError
from skbqa.skb.stark_layout import NODE_TYPES


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
