"""Build a reranker by name: "none", "local", "pointwise", "listwise" or "pairwise".

The LLM rerankers need a ChatModel; asking for one without it is a caller error (InvalidInputError), not a
silent fall-back to another reranker, so a benchmark never measures something other than what it asked for.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from skbqa.common.errors import InvalidInputError
from skbqa.models.chat import ChatModel
from skbqa.query.context import Candidate, QueryContext
from skbqa.query.structured import StructuredQuery
from skbqa.stages.rerank.base import Reranker, RerankOutcome
from skbqa.stages.rerank.llm_common import LlmRerankSettings
from skbqa.stages.rerank.llm_listwise import ListwiseReranker
from skbqa.stages.rerank.llm_pairwise import PairwiseReranker
from skbqa.stages.rerank.llm_pointwise import PointwiseReranker
from skbqa.stages.rerank.local import LexicalSource, LocalReranker, LocalWeights
from skbqa.stages.rerank.pairwise_sort import DEFAULT_MAX_BATCH
from skbqa.stores.index import IndexStores

LLM_RERANKERS = ("pointwise", "listwise", "pairwise")
RERANKERS = ("none", "local", *LLM_RERANKERS)


class NoReranker:
    """Keeps the retrieval order (the baseline every other reranker is measured against)."""

    name = "none"

    def rerank(
        self, query: QueryContext, parsed: StructuredQuery | None, candidates: list[Candidate]
    ) -> RerankOutcome:
        return RerankOutcome(list(candidates))


@dataclass(frozen=True)
class RerankerSettings:
    llm: LlmRerankSettings = field(default_factory=LlmRerankSettings)
    pairwise_max_batch: int = DEFAULT_MAX_BATCH
    local_weights: LocalWeights = field(default_factory=LocalWeights)
    local_lexical_source: LexicalSource = "candidates"
    local_embedding_set: str = "document"


def build_reranker(
    name: str,
    stores: IndexStores,
    chat: ChatModel | None = None,
    settings: RerankerSettings | None = None,
) -> Reranker:
    settings = settings or RerankerSettings()
    if name not in RERANKERS:
        raise InvalidInputError(f"unknown reranker {name!r}; available: {', '.join(RERANKERS)}", reranker=name)
    if name == "none":
        return NoReranker()
    if name == "local":
        return LocalReranker(
            stores,
            weights=settings.local_weights,
            lexical_source=settings.local_lexical_source,
            embedding_set=settings.local_embedding_set,
        )
    if chat is None:
        raise InvalidInputError(
            f"the {name} reranker needs an LLM (a ChatModel); configure one or choose 'local' or 'none'",
            reranker=name,
        )
    if name == "pointwise":
        return PointwiseReranker(stores, chat, settings.llm)
    if name == "listwise":
        return ListwiseReranker(stores, chat, settings.llm)
    return PairwiseReranker(stores, chat, settings.llm, max_batch=settings.pairwise_max_batch)
