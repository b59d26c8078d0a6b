"""Listwise LLM reranker (AF-Retriever Table 1): one prompt listing all k candidates, one ranking back.

Candidates are listed under local ids 1..k in prior order. The reply's ids are taken in order (duplicates and
unknown ids ignored) and every candidate the reply left out follows in prior order, so the result is always a
permutation of the input. A reply without a single usable id, a passed deadline or a backend error leave the
input order unchanged (with a note for the latter two).
"""

from __future__ import annotations

from skbqa.models.chat import LlmError
from skbqa.query.context import Candidate, QueryContext
from skbqa.query.structured import StructuredQuery
from skbqa.stages.rerank.base import RerankOutcome
from skbqa.stages.rerank.descriptions import fit_prompt
from skbqa.stages.rerank.llm_common import DEADLINE_NOTE, LlmBase
from skbqa.stages.rerank.prompts import LISTWISE, listwise_row, parse_ranking

# The reply lists k ids ("12, " is 2–3 tokens) after at most a short preamble. The budget grows with k but is
# capped: a model that has not finished the list by then is rambling (LlmRerankSettings.reply_tokens raises it).
REPLY_TOKENS_PER_CANDIDATE = 8
REPLY_TOKENS_BASE = 32
REPLY_TOKENS_CAP = 1024


class ListwiseReranker(LlmBase):
    """ListwiseReranker(stores, model, settings=LlmRerankSettings(), *, describer=None)."""

    name = "listwise"

    def default_reply_tokens(self, listed: int) -> int:
        return min(REPLY_TOKENS_BASE + REPLY_TOKENS_PER_CANDIDATE * listed, REPLY_TOKENS_CAP)

    def rerank(
        self, query: QueryContext, parsed: StructuredQuery | None, candidates: list[Candidate]
    ) -> RerankOutcome:
        run = self.start(query)
        if len(candidates) < 2:
            return RerankOutcome(list(candidates), usage=run.meter.close())
        with query.stage("rerank_describe"):
            descriptions = self._describer.describe(candidates)
        types = [d.type_name for d in descriptions]

        def render(texts: list[str]) -> str:
            rows = "\n".join(listwise_row(i, t, x) for i, (t, x) in enumerate(zip(types, texts, strict=True), 1))
            return LISTWISE.format(possible_answers=rows, query=query.question)

        reply_tokens = self.reply_tokens(len(candidates))
        fitted = fit_prompt(render, descriptions, self.prompt_budget(reply_tokens))
        # One prompt needs no thread: the call's own timeout enforces the deadline.
        run.meter.queue(1)
        try:
            reply = self.ask(fitted, run, reply_tokens)
        except LlmError as error:
            note = DEADLINE_NOTE if run.deadline.passed else f"llm error: {error}"
            return RerankOutcome(list(candidates), note=note, usage=run.meter.close())
        ids = parse_ranking(reply, len(candidates))
        if not ids:
            run.meter.add("unparsed")
        return RerankOutcome(order_by_ids(candidates, ids), usage=run.meter.close())


def order_by_ids(candidates: list[Candidate], ids: list[int]) -> list[Candidate]:
    """Candidates named by local id (1-based) first, in that order, then the rest in prior order."""
    named = [i - 1 for i in dict.fromkeys(ids) if 1 <= i <= len(candidates)]
    chosen = set(named)
    return [candidates[i] for i in named] + [c for i, c in enumerate(candidates) if i not in chosen]
