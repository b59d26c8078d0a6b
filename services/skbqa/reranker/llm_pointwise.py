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

from skbqa.parser.query import StructuredQuery
from skbqa.reranker.base import RerankOutcome
from skbqa.reranker.descriptions import Description, fit_prompt
from skbqa.reranker.llm_common import Deadline, LlmBase, UsageMeter
from skbqa.reranker.prompts import POINTWISE, parse_score
from skbqa.strategies.base import Candidate, QueryContext

SCORE_KEY = "llm_pointwise"


class PointwiseReranker(LlmBase):
    """PointwiseReranker(stores, model, settings=LlmRerankSettings(), *, describer=None)."""

    name = "pointwise"

    def rerank(
        self, query: QueryContext, parsed: StructuredQuery | None, candidates: list[Candidate]
    ) -> RerankOutcome:
        meter = UsageMeter()
        if len(candidates) < 2:
            return RerankOutcome(list(candidates), usage=meter.as_dict())
        deadline = Deadline(self._settings.deadline)
        with query.stage("rerank_describe"):
            descriptions = self._describer.describe(candidates)
        jobs = [partial(self._score, query.question, d, deadline, meter) for d in descriptions]
        results, note = self.fan_out(jobs, deadline)
        scores = [r.value if r is not None else None for r in results]
        return RerankOutcome(order_by_scores(candidates, scores), note=note, usage=meter.as_dict())

    def _score(
        self, question: str, description: Description, deadline: Deadline, meter: UsageMeter
    ) -> float | None:
        def render(texts: list[str]) -> str:
            return POINTWISE.format(node_type=description.type_name, query=question, doc_info=texts[0])

        fitted = fit_prompt(render, [description], self.prompt_budget)
        meter.level(fitted.level)
        score = parse_score(self.ask(fitted.prompt, deadline, meter))
        if score is None:
            meter.add("unparsed")
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
