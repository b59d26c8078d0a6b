"""The `Reranker` port (AF-Retriever step 8): reorder the top-k candidates; never add or drop one.

Rerankers receive the candidates best-first and return a permutation of them. A reranker that runs out of time
(its deadline) or whose backend fails returns the best order it has so far — at worst the input order — and
says so in `RerankOutcome.note`. One served through a backend with a fallback (Ray Serve) says in
`RerankOutcome.degraded` when the fallback answered.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from skbqa.query.context import Candidate, QueryContext
from skbqa.query.structured import StructuredQuery


@dataclass
class RerankOutcome:
    candidates: list[Candidate]
    note: str = ""  # "" when the reranker finished; otherwise why it stopped early (deadline, backend error)
    # LLM rerankers: prompts / tokens (answered calls only), failed, skipped, abandoned… (see UsageMeter)
    usage: dict[str, int] = field(default_factory=dict)
    # "" normally; why the reranker's usual backend was not used, when another path answered instead (Ray down:
    # the same reranker in process, `ray_fallback`). Step 8 flags the answer degraded with it.
    degraded: str = ""


class Reranker(Protocol):
    name: str

    def rerank(
        self, query: QueryContext, parsed: StructuredQuery | None, candidates: list[Candidate]
    ) -> RerankOutcome: ...
