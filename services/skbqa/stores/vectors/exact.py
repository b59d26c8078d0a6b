"""Exact (brute-force) vector index in numpy: float32 or float16 storage, one matrix product per query batch.

At 98k × 384 a query costs ~5–10 ms on one core, and results are exact, which makes it the embedded default and
the reference the ANN adapters are measured against. Filters are applied before top-k, so a filtered search
always returns min(k, matching entries) results.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from skbqa.stores.vectors.base import Hits

_FILE = "vectors.npz"


class ExactIndex:
    def __init__(self, dim: int, *, dtype: str = "float32") -> None:
        if dtype not in ("float32", "float16"):
            raise ValueError("dtype must be float32 or float16")
        self._dim = dim
        self._dtype = np.dtype(dtype)
        self._keys = np.zeros(0, np.int64)
        self._types = np.zeros(0, np.int16)
        self._vectors = np.zeros((0, dim), self._dtype)
        self._group_by_type()

    @property
    def dim(self) -> int:
        return self._dim

    def __len__(self) -> int:
        return int(self._keys.shape[0])

    def add(self, keys: np.ndarray, vectors: np.ndarray, node_types: np.ndarray) -> None:
        keys = np.asarray(keys, np.int64)
        vectors = np.asarray(vectors)
        if vectors.ndim != 2 or vectors.shape[1] != self._dim or vectors.shape[0] != keys.shape[0]:
            raise ValueError(f"expected ({keys.shape[0]}, {self._dim}) vectors, got {vectors.shape}")
        if np.shape(node_types) != keys.shape:
            raise ValueError(f"expected {keys.shape[0]} node types, got shape {np.shape(node_types)}")
        if np.intersect1d(keys, self._keys).size or np.unique(keys).size != keys.size:
            raise ValueError("keys must be new and unique")
        self._keys = np.concatenate([self._keys, keys])
        self._types = np.concatenate([self._types, np.asarray(node_types, np.int16)])
        self._vectors = np.concatenate([self._vectors, vectors.astype(self._dtype)])
        self._group_by_type()

    def _group_by_type(self) -> None:
        """Store rows grouped by node type (then key), so a type-filtered search multiplies a contiguous view of
        the matrix instead of copying the selected rows; keys are found through a sorted lookup."""
        order = np.lexsort((self._keys, self._types))
        if not np.array_equal(order, np.arange(order.size)):
            self._keys, self._types, self._vectors = self._keys[order], self._types[order], self._vectors[order]
        self._key_rows = np.argsort(self._keys, kind="stable")
        self._sorted_keys = self._keys[self._key_rows]
        codes, starts = np.unique(self._types, return_index=True)
        ends = np.append(starts[1:], self._types.size)[: starts.size]
        self._type_slices = {int(c): (int(a), int(b)) for c, a, b in zip(codes, starts, ends, strict=True)}

    def _rows_for_keys(self, keys: np.ndarray) -> np.ndarray:
        wanted = np.unique(np.asarray(keys, np.int64))
        pos = np.searchsorted(self._sorted_keys, wanted)
        inside = pos < self._sorted_keys.size
        pos, wanted = pos[inside], wanted[inside]
        return np.sort(self._key_rows[pos[self._sorted_keys[pos] == wanted]])

    def _type_rows(self, node_types: Sequence[int]) -> list[tuple[int, int]]:
        return [self._type_slices[int(c)] for c in sorted(set(node_types)) if int(c) in self._type_slices]

    def search(
        self,
        queries: np.ndarray,
        k: int,
        *,
        node_types: Sequence[int] | None = None,
        keys: np.ndarray | None = None,
    ) -> list[Hits]:
        queries = np.atleast_2d(np.asarray(queries, np.float32)).astype(self._dtype)
        empty = [Hits(np.zeros(0, np.int64), np.zeros(0, np.float32)) for _ in range(queries.shape[0])]
        if keys is not None:
            rows = self._rows_for_keys(keys)
            if node_types is not None:
                rows = rows[np.isin(self._types[rows], np.asarray(list(node_types), np.int16))]
            candidate_keys = self._keys[rows]
            matrix_scores = (self._vectors[rows] @ queries.T).astype(np.float32).T if rows.size else None
        elif node_types is not None:
            slices = self._type_rows(node_types)
            candidate_keys = (
                np.concatenate([self._keys[a:b] for a, b in slices]) if slices else np.zeros(0, np.int64)
            )
            parts = [(self._vectors[a:b] @ queries.T).astype(np.float32).T for a, b in slices]
            matrix_scores = np.concatenate(parts, axis=1) if parts else None
        else:
            candidate_keys = self._keys
            matrix_scores = (self._vectors @ queries.T).astype(np.float32).T if self._keys.size else None
        n = candidate_keys.shape[0]
        if matrix_scores is None or n == 0 or k <= 0:
            return empty
        kk = min(k, n)
        results: list[Hits] = []
        for row in matrix_scores:
            top = np.argpartition(-row, kk - 1)[:kk] if kk < n else np.arange(n)
            # Sort by score, then key, so ties come out in a stable, reproducible order.
            top = top[np.lexsort((candidate_keys[top], -row[top]))]
            results.append(Hits(candidate_keys[top], row[top]))
        return results

    def vectors_for(self, keys: np.ndarray) -> np.ndarray:
        """Stored vectors for keys (float32), keys ascending, missing keys skipped: for re-scoring a known set."""
        wanted = np.unique(np.asarray(keys, np.int64))
        pos = np.searchsorted(self._sorted_keys, wanted)
        inside = pos < self._sorted_keys.size
        pos, wanted = pos[inside], wanted[inside]
        return self._vectors[self._key_rows[pos[self._sorted_keys[pos] == wanted]]].astype(np.float32)

    def save(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        np.savez(directory / _FILE, keys=self._keys, types=self._types, vectors=self._vectors)

    @classmethod
    def load(cls, directory: Path, *, dtype: str | None = None) -> ExactIndex:
        with np.load(directory / _FILE) as data:
            vectors = data["vectors"]
            index = cls(int(vectors.shape[1]), dtype=dtype or str(vectors.dtype))
            index._keys = data["keys"]
            index._types = data["types"]
            index._vectors = vectors.astype(index._dtype, copy=False)
        index._group_by_type()
        return index

    def close(self) -> None:
        """Nothing to release; present so every adapter can be used the same way."""
