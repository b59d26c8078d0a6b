"""`bm25`: lexical retrieval over node documents (type, name, text, attributes)."""

from __future__ import annotations

from skbqa.query.context import Candidate, QueryContext
from skbqa.stores.index import IndexStores


class Bm25Strategy:
    name = "bm25"

    def __init__(self, stores: IndexStores) -> None:
        self._bm25 = stores.bm25

    def retrieve(self, query: QueryContext, k: int) -> list[Candidate]:
        with query.stage("bm25"):
            hits = self._bm25.search(query.question, k)
        return [
            Candidate(int(p), float(s), self.name, {"bm25": float(s)})
            for p, s in zip(hits.keys, hits.scores, strict=True)
        ]
