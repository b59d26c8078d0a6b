"""Pointwise LLM reranker (AF-Retriever Table 1; STaRK's LLM reranker): one scoring prompt per candidate.

The k prompts are independent, so they run in parallel (at most `concurrency` in flight), in prior order so
that, when the deadline cuts the batch short, the scored candidates are the best-ranked ones.

Ordering rule (also for partial results): a candidate without a usable score — its reply was unparseable, its
prompt never finished, or the backend failed — keeps its prior slot; the scored candidates are sorted by score
(ties by prior rank) into the slots the scored ones occupied. With every reply usable this is a plain stable
sort by score; a missing score never pushes a candidate below or above one the LLM did judge.
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial

from skbqa.query.context import Candidate, QueryContext
from skbqa.query.structured import StructuredQuery
from skbqa.stages.rerank.base import RerankOutcome
from skbqa.stages.rerank.descriptions import Description, fit_prompt
from skbqa.stages.rerank.llm_common import LlmBase, RerankRun
from skbqa.stages.rerank.prompts import POINTWISE, parse_score

SCORE_KEY = "llm_pointwise"
# One score ("0.85") plus the odd preamble a small model adds; more only buys rambling (LlmRerankSettings).
REPLY_TOKENS = 64


class PointwiseReranker(LlmBase):
    """PointwiseReranker(stores, model, settings=LlmRerankSettings(), *, describer=None)."""

    name = "pointwise"

    def default_reply_tokens(self, listed: int) -> int:
        return REPLY_TOKENS

    def rerank(
        self, query: QueryContext, parsed: StructuredQuery | None, candidates: list[Candidate]
    ) -> RerankOutcome:
        run = self.start(query)
        if len(candidates) < 2:
            return RerankOutcome(list(candidates), usage=run.meter.close())
        with query.stage("rerank_describe"):
            descriptions = self._describer.describe(candidates)
        jobs = [partial(self._score, query.question, d, run) for d in descriptions]
        results, note = self.fan_out(jobs, run)
        usage = run.meter.close()  # before ordering: calls still in flight must not count
        scores = [r.value if r is not None else None for r in results]
        return RerankOutcome(order_by_scores(candidates, scores), note=note, usage=usage)

    def _score(self, question: str, description: Description, run: RerankRun) -> float | None:
        def render(texts: list[str]) -> str:
            return POINTWISE.format(node_type=description.type_name, query=question, doc_info=texts[0])

        reply_tokens = self.reply_tokens(1)
        fitted = fit_prompt(render, [description], self.prompt_budget(reply_tokens))
        score = parse_score(self.ask(fitted, run, reply_tokens))
        if score is None:
            run.meter.add("unparsed")
        return score


def order_by_scores(candidates: list[Candidate], scores: list[float | None]) -> list[Candidate]:
    """Scored candidates sorted by (-score, prior rank) into the scored slots; unscored ones stay put."""
    scored = {i: s for i, s in enumerate(scores) if s is not None}
    slots = list(scored)
    ranked = sorted(slots, key=lambda i: (-scored[i], i))
    out = list(candidates)
    for slot, source in zip(slots, ranked, strict=True):
        moved = candidates[source]
        out[slot] = replace(moved, scores={**moved.scores, SCORE_KEY: scored[source]})
    return out
