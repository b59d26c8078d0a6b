"""The `Reranker` port (AF-Retriever step 8): reorder the top-k candidates; never add or drop one.

Rerankers receive the candidates best-first and return a permutation of them. A reranker that runs out of time
(its deadline) or whose backend fails returns the best order it has so far — at worst the input order — and
says so in `RerankOutcome.note`.
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


class Reranker(Protocol):
    name: str

    def rerank(
        self, query: QueryContext, parsed: StructuredQuery | None, candidates: list[Candidate]
    ) -> RerankOutcome: ...
