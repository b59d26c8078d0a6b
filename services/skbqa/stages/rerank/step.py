"""Step 8 of af: reorder the pipeline's k with the configured reranker (none by default; the local scored
reranker, or the LLM rerankers when the engine has a ChatModel); never adds or drops a candidate. Serves the
embedded strategy and the reranker service (which may hand it Ray Serve deployments instead)."""

from __future__ import annotations

from collections.abc import Mapping

from skbqa.common.errors import InvalidInputError
from skbqa.models.chat import ChatModel
from skbqa.query.context import Candidate, QueryContext
from skbqa.query.structured import StructuredQuery
from skbqa.stages.config import AfConfig
from skbqa.stages.rerank.base import Reranker
from skbqa.stores.index import IndexStores


def rerank_degraded(name: str, reason: str) -> dict[str, str]:
    """The `degraded` note of an answer whose step 8 ran in process because its backend (Ray) was unavailable;
    the ranking is the one the backend would have given (same reranker, same index)."""
    return {"reason": reason.splitlines()[0], "stage": "rerank", "answered_by": f"{name} reranker in process"}


class RerankStep:
    def __init__(
        self, stores: IndexStores, chat: ChatModel | None, rerankers: Mapping[str, Reranker] | None = None
    ) -> None:
        if rerankers is None:
            from skbqa.stages.rerank.registry import LLM_RERANKERS, build_reranker

            # Without an LLM: the local reranker; the LLM rerankers when a ChatModel is given.
            names = ["local", *(LLM_RERANKERS if chat is not None else ())]
            rerankers = {name: build_reranker(name, stores, chat) for name in names}
        self.rerankers = dict(rerankers)

    def use(self, rerankers: Mapping[str, Reranker]) -> None:
        """Serve step 8 with these rerankers (e.g. Ray Serve deployments) instead of the in-process ones."""
        self.rerankers.update(rerankers)

    def run(
        self,
        query: QueryContext,
        parsed: StructuredQuery | None,
        candidates: list[Candidate],
        head: int,
        config: AfConfig,
    ) -> list[Candidate]:
        """Reorder the first `head` candidates (the pipeline's k)."""
        if not config.reranks or head == 0:
            return candidates
        reranker = self.rerankers.get(config.reranker)
        if reranker is None:
            raise InvalidInputError(
                f"reranker {config.reranker!r} is not configured (LLM rerankers need an LLM: `--llm`); "
                f"available: none, {', '.join(sorted(self.rerankers))}"
            )
        with query.stage("rerank"):
            outcome = reranker.rerank(query, parsed, candidates[:head])
        if outcome.note:
            query.notes["rerank"] = outcome.note
        if outcome.usage:
            query.notes["rerank_usage"] = outcome.usage
        if outcome.degraded:
            # The same key a lost encoder server sets (serving/degrade.py): the API's `degraded` flag reads it.
            # `setdefault`: a request already degraded earlier keeps the first reason.
            query.notes.setdefault("degraded", rerank_degraded(reranker.name, outcome.degraded))
        return outcome.candidates + candidates[head:]
