"""Dense + sparse fusion over a pool: both retrievers propose, every pooled node is scored by both (exact cosine from
the stored vectors, BM25 from the full score vector), each score is min-max normalised over the pool, and the two
are mixed. Used by `hybrid` and by af's step 7 (the fill from the predicted type)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from skbqa.query.context import Candidate, QueryContext
from skbqa.stores.text.bm25 import Bm25Index
from skbqa.stores.vectors.base import VectorIndex

DEFAULT_DENSE_WEIGHT = 0.5


def min_max(values: np.ndarray) -> np.ndarray:
    low, high = float(values.min()), float(values.max())
    if high - low < 1e-12:
        return np.zeros_like(values) if high <= 0 else np.ones_like(values)
    return (values - low) / (high - low)


@dataclass
class FusedPool:
    keys: np.ndarray
    fused: np.ndarray
    dense: np.ndarray
    sparse: np.ndarray

    def candidates(self, k: int, source: str) -> list[Candidate]:
        order = np.lexsort((self.keys, -self.fused))[:k]
        return [
            Candidate(
                int(self.keys[i]),
                float(self.fused[i]),
                source,
                {"fused": float(self.fused[i]), "cosine": float(self.dense[i]), "bm25": float(self.sparse[i])},
            )
            for i in order
        ]


def fused_pool(
    bm25: Bm25Index,
    vectors: VectorIndex,
    query: QueryContext,
    pool: int,
    *,
    dense_weight: float = DEFAULT_DENSE_WEIGHT,
    node_types: list[int] | None = None,
    exclude: np.ndarray | None = None,
) -> FusedPool:
    """Top `pool` nodes of each retriever (optionally of some types, minus `exclude`), scored by both."""
    vector = query.embedding
    extra = 0 if exclude is None else int(exclude.size)
    with query.stage("vss"):
        dense_hits = vectors.search(vector[None, :], pool + extra, node_types=node_types)[0]
    with query.stage("bm25"):
        # Only documents with a positive score of the wanted types can be BM25 hits; the scores stay sparse when
        # the question's terms are rare, so this costs the terms' postings, not a pass over every node.
        scored = bm25.query(query.question)
        sparse_top = scored.top(pool + extra, node_types)
    with query.stage("fuse"):
        keys = np.union1d(dense_hits.keys, sparse_top)
        if node_types is not None:
            keys = keys[np.isin(bm25.node_types[keys], node_types)]
        if exclude is not None and exclude.size:
            keys = np.setdiff1d(keys, exclude)
        if keys.size == 0:
            empty = np.zeros(0, np.float32)
            return FusedPool(keys.astype(np.int64), empty, empty, empty)
        dense = vectors.vectors_for(keys) @ vector
        sparse = scored.at(keys)
        fused = dense_weight * min_max(dense) + (1 - dense_weight) * min_max(sparse)
    return FusedPool(keys.astype(np.int64), fused, dense, sparse)
