"""`hybrid`: dense + sparse fusion (the scoring itself is the ranking stage's `fusion`, which af's step 7 uses too).

Both retrievers propose a pool (top `pool` each); every pooled node is then scored by *both* (exact cosine from
the stored vectors, BM25 from the full score vector), each score is min-max normalised over the pool, and the
two are mixed with `dense_weight`. Scoring the union with both signals avoids the bias of rank fusion against
nodes that only one retriever happened to rank.
"""

from __future__ import annotations

from skbqa.query.context import Candidate, QueryContext
from skbqa.stages.ranking.fusion import DEFAULT_DENSE_WEIGHT, fused_pool
from skbqa.stores.index import IndexStores

DEFAULT_POOL = 100


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
