"""`vss`: the STaRK baseline — cosine between the question and every node's document *with* relations."""

from __future__ import annotations

from skbqa.query.context import Candidate, QueryContext
from skbqa.stores.index import IndexStores


class VssStrategy:
    name = "vss"

    def __init__(self, stores: IndexStores, embedding_set: str = "relations") -> None:
        self._index = stores.vectors[embedding_set]

    def retrieve(self, query: QueryContext, k: int) -> list[Candidate]:
        vector = query.embedding
        with query.stage("vss"):
            hits = self._index.search(vector[None, :], k)[0]
        return [
            Candidate(int(p), float(s), self.name, {"cosine": float(s)})
            for p, s in zip(hits.keys, hits.scores, strict=True)
        ]
