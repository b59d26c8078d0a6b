"""`hybrid`: dense + sparse fusion.

Both retrievers propose a pool (top `pool` each); every pooled node is then scored by *both* (exact cosine from
the stored vectors, BM25 from the full score vector), each score is min-max normalised over the pool, and the
two are mixed with `dense_weight`. Scoring the union with both signals avoids the bias of rank fusion against
nodes that only one retriever happened to rank.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from skbqa.stores.index import IndexStores
from skbqa.stores.text.bm25 import Bm25Index
from skbqa.stores.vectors.exact import ExactIndex
from skbqa.strategies.base import Candidate, QueryContext

DEFAULT_DENSE_WEIGHT = 0.5
DEFAULT_POOL = 100


def min_max(values: np.ndarray) -> np.ndarray:
    low, high = float(values.min()), float(values.max())
    if high - low < 1e-12:
        return np.zeros_like(values) if high <= 0 else np.ones_like(values)
    return (values - low) / (high - low)


class HybridStrategy:
    name = "hybrid"

    def __init__(
        self,
        stores: IndexStores,
        *,
        dense_weight: float = DEFAULT_DENSE_WEIGHT,
        pool: int = DEFAULT_POOL,
        embedding_set: str = "relations",
    ) -> None:
        if not 0.0 <= dense_weight <= 1.0:
            raise ValueError("dense_weight must be within [0, 1]")
        self._bm25 = stores.bm25
        self._vectors = stores.vectors[embedding_set]
        self._dense_weight = dense_weight
        self._pool = pool

    def retrieve(self, query: QueryContext, k: int) -> list[Candidate]:
        pool = fused_pool(self._bm25, self._vectors, query, max(self._pool, k), dense_weight=self._dense_weight)
        return pool.candidates(k, self.name)


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
    vectors: ExactIndex,
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
