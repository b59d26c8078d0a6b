"""`hybrid`: dense + sparse fusion.

Both retrievers propose a pool (top `pool` each); every pooled node is then scored by *both* (exact cosine from
the stored vectors, BM25 from the full score vector), each score is min-max normalised over the pool, and the
two are mixed with `dense_weight`. Scoring the union with both signals avoids the bias of rank fusion against
nodes that only one retriever happened to rank.
"""

from __future__ import annotations

import numpy as np

from skbqa.stores.index import IndexStores
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
        vector = query.embedding
        pool = max(self._pool, k)
        with query.stage("vss"):
            dense_hits = self._vectors.search(vector[None, :], pool)[0]
        with query.stage("bm25"):
            sparse_all = self._bm25.scores(query.question)
            sparse_top = np.argpartition(-sparse_all, pool - 1)[:pool] if sparse_all.size > pool else None
        with query.stage("fuse"):
            keys = dense_hits.keys if sparse_top is None else np.union1d(dense_hits.keys, sparse_top)
            dense = self._vectors.vectors_for(keys) @ vector
            sparse = sparse_all[keys]
            fused = self._dense_weight * min_max(dense) + (1 - self._dense_weight) * min_max(sparse)
            order = np.lexsort((keys, -fused))[:k]
        return [
            Candidate(
                int(keys[i]),
                float(fused[i]),
                self.name,
                {"fused": float(fused[i]), "cosine": float(dense[i]), "bm25": float(sparse[i])},
            )
            for i in order
        ]
