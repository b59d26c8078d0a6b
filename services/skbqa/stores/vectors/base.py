"""The `VectorIndex` port: top-k cosine (inner product over unit vectors) with type and id-set filters.

Keys are node *positions* (0..N-1, see `skb.model.SKB`); `node_type` codes come from the SKB schema.
Every adapter passes `tests/contract/test_vector_index.py`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np


@dataclass
class Hits:
    """One query's results, best first."""

    keys: np.ndarray  # int64 positions
    scores: np.ndarray  # float32 cosine similarities

    def __len__(self) -> int:
        return int(self.keys.shape[0])


@runtime_checkable
class VectorIndex(Protocol):
    @property
    def dim(self) -> int: ...

    def __len__(self) -> int: ...

    def add(self, keys: np.ndarray, vectors: np.ndarray, node_types: np.ndarray) -> None:
        """Insert unit vectors with their keys and node-type codes (keys must be new)."""
        ...

    def search(
        self,
        queries: np.ndarray,
        k: int,
        *,
        node_types: Sequence[int] | None = None,
        keys: np.ndarray | None = None,
    ) -> list[Hits]:
        """For each query row, the k most similar entries whose type is in `node_types` and key in `keys`."""
        ...

    def vectors_for(self, keys: np.ndarray) -> np.ndarray:
        """The stored vectors (float32) of the known keys among `keys`, in sorted key order."""
        ...

    def save(self, directory: Path) -> None: ...

    def close(self) -> None: ...
