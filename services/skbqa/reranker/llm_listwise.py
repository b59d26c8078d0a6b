"""Listwise LLM reranker (AF-Retriever Table 1): one prompt listing all k candidates, one ranking back.

Candidates are listed under local ids 1..k in prior order. The reply's ids are taken in order (duplicates and
unknown ids ignored) and every candidate the reply left out follows in prior order, so the result is always a
permutation of the input. A reply without a single usable id, a passed deadline or a backend error leave the
input order unchanged (with a note for the latter two).
"""

from __future__ import annotations

from skbqa.models.chat import LlmError
from skbqa.parser.query import StructuredQuery
from skbqa.reranker.base import RerankOutcome
from skbqa.reranker.descriptions import fit_prompt
from skbqa.reranker.llm_common import DEADLINE_NOTE, Deadline, LlmBase, UsageMeter
from skbqa.reranker.prompts import LISTWISE, listwise_row, parse_ranking
from skbqa.strategies.base import Candidate, QueryContext


class ListwiseReranker(LlmBase):
    """ListwiseReranker(stores, model, settings=LlmRerankSettings(), *, describer=None)."""

    name = "listwise"
    # The reply lists k ids (a few tokens each) after any reasoning: reserve more than for one score or choice.
    default_reply_tokens = 4096

    def rerank(
        self, query: QueryContext, parsed: StructuredQuery | None, candidates: list[Candidate]
    ) -> RerankOutcome:
        meter = UsageMeter()
        if len(candidates) < 2:
            return RerankOutcome(list(candidates), usage=meter.as_dict())
        deadline = Deadline(self._settings.deadline)
        with query.stage("rerank_describe"):
            descriptions = self._describer.describe(candidates)
        types = [d.type_name for d in descriptions]

        def render(texts: list[str]) -> str:
            rows = "\n".join(listwise_row(i, t, x) for i, (t, x) in enumerate(zip(types, texts, strict=True), 1))
            return LISTWISE.format(possible_answers=rows, query=query.question)

        fitted = fit_prompt(render, descriptions, self.prompt_budget)
        meter.level(fitted.level)
        # One prompt needs no thread: the call's own timeout enforces the deadline.
        try:
            reply = self.ask(fitted.prompt, deadline, meter)
        except LlmError as error:
            note = DEADLINE_NOTE if deadline.passed else f"llm error: {error}"
            return RerankOutcome(list(candidates), note=note, usage=meter.as_dict())
        ids = parse_ranking(reply, len(candidates))
        if not ids:
            meter.add("unparsed")
        return RerankOutcome(order_by_ids(candidates, ids), usage=meter.as_dict())


def order_by_ids(candidates: list[Candidate], ids: list[int]) -> list[Candidate]:
    """Candidates named by local id (1-based) first, in that order, then the rest in prior order."""
    named = [i - 1 for i in dict.fromkeys(ids) if 1 <= i <= len(candidates)]
    chosen = set(named)
    return [candidates[i] for i in named] + [c for i, c in enumerate(candidates) if i not in chosen]
