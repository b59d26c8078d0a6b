"""In-process approximate vector index for large sets: faiss IVF per node type, float16 codes.

Above `ANN_MIN_ROWS` vectors an exact scan per query no longer fits an interactive budget on 2 cores (2M × 384
float32 is 3 GB per set; one pass ≈ 0.3 s). This adapter keeps the `ExactIndex` interface (it is a drop-in for
the stores and strategies) with:

- one partition per node type, because every hot search is type-filtered (step 4 names, step 7 fill) and a
  filter applied *after* an approximate search over all types would starve small types;
- partitions of at least `IVF_MIN_ROWS` rows: an inverted file (spherical k-means, ≈ √n lists, `nprobe` probed per
  query); smaller ones: a flat (exact) scan;
- float16 storage (faiss scalar quantiser QT_fp16): half of float32, and the vectors are read back exactly as
  stored (`vectors_for`, used to re-score known sets) — the index is the only copy of the vectors in memory.

Results are ordered like `ExactIndex` (score descending, then key). A search returns min(k, matching rows):
when the probed lists hold fewer than k rows, it probes again with more lists. Searches restricted to `keys`
are exact (the keys' vectors are read back and scored). faiss is imported here only.
"""

from __future__ import annotations

import json
import logging
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from skbqa.stores.vectors.base import Hits
from skbqa.stores.vectors.exact import ExactIndex

logger = logging.getLogger(__name__)

ANN_MIN_ROWS = 200_000  # a vector set this large gets the ANN adapter at ingest ("auto")
IVF_MIN_ROWS = 50_000  # a node type with fewer rows is scanned exactly
DEFAULT_NPROBE = 128  # type-filtered recall@20 ≈ 0.95 on question vectors at 1M nodes (bench/scale.py sweeps it)
TRAIN_PER_LIST = 40  # k-means training points per list (faiss warns below 39)
KMEANS_ITERATIONS = 10
ADD_CHUNK = 100_000  # rows converted to float32 and added per step
EXACT_CHUNK = 50_000  # keys read back per step by a key-restricted search
META = "ann.json"
_KEYS = "ann_keys.npz"


def faiss_available() -> bool:
    try:
        import faiss  # noqa: F401
    except ImportError:
        return False
    return True


def _faiss() -> Any:
    import faiss

    return faiss


def default_lists(rows: int) -> int:
    return max(1, round(math.sqrt(rows)))


class AnnIndex(ExactIndex):
    """See the module docstring. Filled with `add` (or `build`), persisted with `save`, read with `load`.

    A node type's partition is created by the first `add` that brings that type: an inverted file when that batch
    holds at least `ivf_min_rows` rows of it (its k-means is trained on them), else a flat one. Later adds go into
    the existing partitions (a flat partition stays flat), so ingest adds each set in one batch.
    """

    def __init__(
        self, dim: int, *, nprobe: int = DEFAULT_NPROBE, ivf_min_rows: int = IVF_MIN_ROWS, seed: int = 0
    ) -> None:
        # Deliberately not ExactIndex.__init__: there is no dense matrix here, only the faiss partitions.
        self._dim = dim
        self._dtype = np.dtype("float16")
        self._sorted_keys = np.zeros(0, np.int64)  # ascending
        self._key_types = np.zeros(0, np.int16)  # aligned with _sorted_keys
        self._parts: dict[int, Any] = {}  # type code → faiss index (ids = keys)
        self.nprobe = nprobe
        self._ivf_min_rows = ivf_min_rows
        self._rng = np.random.default_rng(seed)
        self.meta: dict[str, Any] = {}

    @classmethod
    def build(
        cls,
        dim: int,
        keys: np.ndarray,
        types: np.ndarray,
        vectors: np.ndarray,
        *,
        nprobe: int = DEFAULT_NPROBE,
        ivf_min_rows: int = IVF_MIN_ROWS,
    ) -> AnnIndex:
        """`vectors` (any float dtype, may be a memory map) row i belongs to keys[i] of node type types[i]."""
        index = cls(dim, nprobe=nprobe, ivf_min_rows=ivf_min_rows)
        index.add(keys, vectors, types)
        return index

    def add(self, keys: np.ndarray, vectors: np.ndarray, node_types: np.ndarray) -> None:
        keys = np.asarray(keys, np.int64)
        if vectors.ndim != 2 or vectors.shape != (keys.size, self._dim):
            raise ValueError(f"expected ({keys.size}, {self._dim}) vectors, got {vectors.shape}")
        if np.shape(node_types) != keys.shape:
            raise ValueError(f"expected {keys.size} node types, got shape {np.shape(node_types)}")
        if np.unique(keys).size != keys.size or self._present(keys).size:
            raise ValueError("keys must be new and unique")
        types = np.asarray(node_types, np.int16)
        for code in np.unique(types).tolist():
            rows = np.flatnonzero(types == code)
            index = self._parts.get(code)
            if index is None:
                index = self._parts[code] = self._new_part(vectors, rows)
            for start in range(0, rows.size, ADD_CHUNK):
                chunk = rows[start : start + ADD_CHUNK]
                index.add_with_ids(np.ascontiguousarray(vectors[chunk], np.float32), keys[chunk])
            logger.info(
                "ann: type %d, +%d rows (%s)", code, rows.size, "ivf" if hasattr(index, "nlist") else "flat"
            )
        all_keys = np.concatenate([self._sorted_keys, keys])
        all_types = np.concatenate([self._key_types, types])
        order = np.argsort(all_keys, kind="stable")
        self._sorted_keys, self._key_types = all_keys[order], all_types[order]
        self.meta = self._describe()

    def _new_part(self, vectors: np.ndarray, rows: np.ndarray) -> Any:
        faiss = _faiss()
        fp16 = faiss.ScalarQuantizer.QT_fp16
        if rows.size < self._ivf_min_rows:
            return faiss.IndexIDMap2(faiss.IndexScalarQuantizer(self._dim, fp16, faiss.METRIC_INNER_PRODUCT))
        lists = default_lists(rows.size)
        index = faiss.IndexIVFScalarQuantizer(
            faiss.IndexFlatIP(self._dim), self._dim, lists, fp16, faiss.METRIC_INNER_PRODUCT
        )
        index.by_residual = False  # unit vectors are stored as they are: read back exactly (vectors_for)
        index.cp.niter = KMEANS_ITERATIONS
        index.cp.spherical = True
        sample = np.sort(self._rng.choice(rows, min(rows.size, TRAIN_PER_LIST * lists), replace=False))
        if sample.size < 39 * lists:
            index.cp.min_points_per_centroid = 1  # small partitions (tests): no "too few points" warning
        index.train(np.ascontiguousarray(vectors[sample], np.float32))
        index.set_direct_map_type(faiss.DirectMap.Hashtable)  # read-back by key (vectors_for)
        return index

    def _describe(self) -> dict[str, Any]:
        partitions: dict[str, Any] = {}
        for code, index in sorted(self._parts.items()):
            entry: dict[str, Any] = {"rows": int(index.ntotal)}
            entry |= {"kind": "ivf", "lists": int(index.nlist)} if hasattr(index, "nlist") else {"kind": "flat"}
            partitions[str(code)] = entry
        return {"kind": "faiss-ivf", "codec": "fp16", "nprobe": self.nprobe, "partitions": partitions}

    # ------------------------------------------------------------------------------------------------ reads

    @property
    def dim(self) -> int:
        return self._dim

    def __len__(self) -> int:
        return int(self._sorted_keys.shape[0])

    def _present(self, keys: np.ndarray) -> np.ndarray:
        """Sorted unique keys of `keys` that are stored."""
        wanted = np.unique(np.asarray(keys, np.int64))
        pos = np.minimum(np.searchsorted(self._sorted_keys, wanted), max(self._sorted_keys.size - 1, 0))
        return wanted[self._sorted_keys[pos] == wanted] if self._sorted_keys.size else wanted[:0]

    def _types_of(self, present: np.ndarray) -> np.ndarray:
        return self._key_types[np.searchsorted(self._sorted_keys, present)]

    def vectors_for(self, keys: np.ndarray) -> np.ndarray:
        """Stored vectors for keys (float32), keys ascending, missing keys skipped."""
        present = self._present(keys)
        out = np.zeros((present.size, self._dim), np.float32)
        types = self._types_of(present)
        for code in np.unique(types).tolist():
            rows = np.flatnonzero(types == code)
            out[rows] = self._parts[code].reconstruct_batch(present[rows])
        return out

    def search(
        self,
        queries: np.ndarray,
        k: int,
        *,
        node_types: Sequence[int] | None = None,
        keys: np.ndarray | None = None,
    ) -> list[Hits]:
        queries = np.ascontiguousarray(np.atleast_2d(np.asarray(queries, np.float32)))
        if k <= 0 or len(self) == 0:
            return [Hits(np.zeros(0, np.int64), np.zeros(0, np.float32)) for _ in range(queries.shape[0])]
        if keys is not None:
            return self._search_keys(queries, k, node_types, keys)
        codes = (
            sorted(self._parts) if node_types is None else sorted({int(c) for c in node_types} & set(self._parts))
        )
        per_part = [self._search_part(code, queries, k) for code in codes]
        results: list[Hits] = []
        for row in range(queries.shape[0]):
            found_keys = [ids[row] for ids, _ in per_part]
            found_scores = [scores[row] for _, scores in per_part]
            results.append(_best(found_keys, found_scores, k))
        return results

    def _search_part(self, code: int, queries: np.ndarray, k: int) -> tuple[list[np.ndarray], list[np.ndarray]]:
        index = self._parts[code]
        rows = int(index.ntotal)
        kk = min(k, rows)
        if not hasattr(index, "nlist"):
            scores, ids = index.search(queries, kk)
            return [i[i >= 0] for i in ids], [s[i >= 0] for s, i in zip(scores, ids, strict=True)]
        faiss = _faiss()
        nprobe = min(self.nprobe, index.nlist)
        while True:
            scores, ids = index.search(queries, kk, params=faiss.SearchParametersIVF(nprobe=nprobe))
            short = (ids < 0).any(axis=1)
            if not short.any() or nprobe >= index.nlist:
                break
            nprobe = min(index.nlist, nprobe * 4)  # the probed lists held fewer than k rows: widen
        return [i[i >= 0] for i in ids], [s[i >= 0] for s, i in zip(scores, ids, strict=True)]

    def _search_keys(
        self, queries: np.ndarray, k: int, node_types: Sequence[int] | None, keys: np.ndarray
    ) -> list[Hits]:
        present = self._present(keys)
        if node_types is not None:
            present = present[np.isin(self._types_of(present), np.asarray(list(node_types), np.int16))]
        best_keys: list[list[np.ndarray]] = [[] for _ in range(queries.shape[0])]
        best_scores: list[list[np.ndarray]] = [[] for _ in range(queries.shape[0])]
        for start in range(0, present.size, EXACT_CHUNK):
            chunk = present[start : start + EXACT_CHUNK]
            scores = queries @ self.vectors_for(chunk).T
            for row in range(queries.shape[0]):
                top = _top(scores[row], chunk, k)
                best_keys[row].append(chunk[top])
                best_scores[row].append(scores[row][top])
        return [_best(best_keys[r], best_scores[r], k) for r in range(queries.shape[0])]

    # ------------------------------------------------------------------------------------------------ files

    def save(self, directory: Path) -> None:
        faiss = _faiss()
        directory.mkdir(parents=True, exist_ok=True)
        for code, index in self._parts.items():
            faiss.write_index(index, str(directory / f"ann-{code}.faiss"))
        np.savez(directory / _KEYS, keys=self._sorted_keys, types=self._key_types)
        meta = {**self.meta, "dim": self._dim, "nprobe": self.nprobe}
        (directory / META).write_text(json.dumps(meta, indent=1))

    @classmethod
    def load(cls, directory: Path, *, dtype: str | None = None) -> AnnIndex:
        faiss = _faiss()
        faiss.omp_set_num_threads(1)  # one query at a time per request: OpenMP fan-out only adds contention
        meta = json.loads((directory / META).read_text())
        # SKBQA_ANN_NPROBE trades recall for speed at query time without rebuilding (bench/scale.py sweeps it).
        nprobe = int(os.environ.get("SKBQA_ANN_NPROBE") or meta.get("nprobe", DEFAULT_NPROBE))
        index = cls(int(meta["dim"]), nprobe=nprobe)
        with np.load(directory / _KEYS) as data:
            index._sorted_keys, index._key_types = data["keys"], data["types"]
        index._parts = {
            int(code): faiss.read_index(str(directory / f"ann-{code}.faiss")) for code in meta["partitions"]
        }
        index.meta = {k: v for k, v in meta.items() if k != "dim"}
        return index

    def to_exact(self, dtype: str = "float32") -> ExactIndex:
        """Every vector in an `ExactIndex` (for loaders that need a dense copy, e.g. the Milvus loader)."""
        exact = ExactIndex(self._dim, dtype=dtype)
        exact.add(self._sorted_keys, self.vectors_for(self._sorted_keys), self._key_types)
        return exact

    def close(self) -> None:
        """Nothing to release."""


def _top(scores: np.ndarray, keys: np.ndarray, k: int) -> np.ndarray:
    kk = min(k, scores.size)
    if kk == 0:
        return np.zeros(0, np.int64)
    top = np.argpartition(-scores, kk - 1)[:kk] if kk < scores.size else np.arange(scores.size)
    return top[np.lexsort((keys[top], -scores[top]))]


def _best(keys: list[np.ndarray], scores: list[np.ndarray], k: int) -> Hits:
    """Merge partial results: score descending, ties by key, at most k."""
    if not keys:
        return Hits(np.zeros(0, np.int64), np.zeros(0, np.float32))
    all_keys = np.concatenate(keys).astype(np.int64)
    all_scores = np.concatenate(scores).astype(np.float32)
    top = _top(all_scores, all_keys, k)
    return Hits(all_keys[top], all_scores[top])


def is_ann_set(directory: Path) -> bool:
    return (directory / META).is_file()
