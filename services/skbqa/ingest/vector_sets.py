"""Writing one embedding set of an index: the exact index, or the ANN adapter for large sets, plus its self-check.

The choice is made here, once, at ingest (`ann`: "auto" = ANN at `ANN_MIN_ROWS` rows when faiss is installed);
`stores.index.open_index` reads whichever was written. An ANN set records its recall@20 against the exact search
on a sample of its own vectors as queries (each query's own row excluded), so every index says how approximate
it is; `bench/scale.py` measures the same on real questions.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np

from skbqa.stores.vectors.ann import ANN_MIN_ROWS, AnnIndex, faiss_available
from skbqa.stores.vectors.exact import ExactIndex

logger = logging.getLogger(__name__)

SELF_CHECK_QUERIES = 100
SELF_CHECK_K = 20


def use_ann(rows: int, ann: str) -> bool:
    if ann == "never":
        return False
    if not faiss_available():
        if ann == "always":
            raise RuntimeError("ann='always' needs faiss (pip install faiss-cpu)")
        if rows >= ANN_MIN_ROWS:
            logger.warning("faiss is not installed: %d vectors get the exact index (slow at this size)", rows)
        return False
    return ann == "always" or rows >= ANN_MIN_ROWS


def write_vector_set(
    directory: Path,
    keys: np.ndarray,
    types: np.ndarray,
    vectors: np.ndarray,
    *,
    dtype: str,
    ann: str = "auto",
) -> dict[str, Any]:
    """Persist one set (vectors may be a memory map of any float dtype); returns its manifest entry."""
    if not use_ann(int(keys.size), ann):
        index = ExactIndex(int(vectors.shape[1]), dtype=dtype)
        index.add(keys, np.asarray(vectors), types)
        index.save(directory)
        return {"index": "exact", "dtype": dtype, "rows": int(keys.size)}
    index_ann = AnnIndex.build(int(vectors.shape[1]), keys, types, vectors)
    index_ann.meta["self_recall@20"] = self_recall(index_ann, keys, types, vectors)
    index_ann.save(directory)
    return {"index": "ann", "dtype": "float16", "rows": int(keys.size), **index_ann.meta}


def self_recall(index: AnnIndex, keys: np.ndarray, types: np.ndarray, vectors: np.ndarray, seed: int = 0) -> float:
    """Mean recall@20 of type-filtered ANN searches against the exact answer, stored vectors as queries."""
    rng = np.random.default_rng(seed)
    picks = np.sort(rng.choice(keys.size, min(SELF_CHECK_QUERIES, keys.size), replace=False))
    queries = np.asarray(vectors[picks], np.float32)
    recalls: list[float] = []
    for code in np.unique(types[picks]).tolist():
        rows = np.flatnonzero(types == code)
        mine = picks[types[picks] == code]
        if rows.size <= SELF_CHECK_K + 1:
            continue
        q = queries[np.searchsorted(picks, mine)]
        exact = _exact_top(vectors, rows, keys, q, SELF_CHECK_K + 1)
        found = index.search(q, SELF_CHECK_K + 1, node_types=[code])
        for row, hits in enumerate(found):
            own = keys[mine[row]]
            truth = [k for k in exact[row] if k != own][:SELF_CHECK_K]
            got = {int(k) for k in hits.keys if k != own}
            recalls.append(len(got & set(truth)) / max(len(truth), 1))
    return round(float(np.mean(recalls)), 4) if recalls else 1.0


def _exact_top(
    vectors: np.ndarray, rows: np.ndarray, keys: np.ndarray, queries: np.ndarray, k: int
) -> list[list[int]]:
    """Exact top-k keys per query over `vectors[rows]`, scanning in float32 blocks (never the whole set at once)."""
    best_scores = np.full((queries.shape[0], 0), -np.inf, np.float32)
    best_keys = np.zeros((queries.shape[0], 0), np.int64)
    for start in range(0, rows.size, 100_000):
        block_rows = rows[start : start + 100_000]
        scores = np.concatenate([best_scores, queries @ np.asarray(vectors[block_rows], np.float32).T], axis=1)
        ids = np.concatenate(
            [best_keys, np.broadcast_to(keys[block_rows], (queries.shape[0], block_rows.size))], axis=1
        )
        kk = min(k, scores.shape[1])
        top = np.argpartition(-scores, kk - 1, axis=1)[:, :kk]
        best_scores = np.take_along_axis(scores, top, axis=1)
        best_keys = np.take_along_axis(ids, top, axis=1)
    order = np.argsort(-best_scores, axis=1, kind="stable")
    return np.take_along_axis(best_keys, order, axis=1).tolist()
