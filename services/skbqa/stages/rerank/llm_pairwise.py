"""Pairwise LLM reranker (AF-Retriever Table 1, the paper's chosen step 8): binary insertion sort with one A.2
pairwise prompt per comparison.

The sort is `pairwise_sort`'s batched binary insertion: every round's comparisons are independent and go out
together (at most `concurrency` in flight): ≈ k·log2 k prompts (≈ 64 for k = 20) in ≈ 19 sequential rounds,
counted in `usage["rounds"]`. An unparseable reply keeps the prior order for that comparison. When the
deadline passes or the backend fails, the result is the sorted prefix (the items of every completed batch)
followed by the not-yet-inserted items in prior order.
"""

from __future__ import annotations

from functools import partial

from skbqa.common.errors import InvalidInputError
from skbqa.models.chat import ChatModel
from skbqa.query.context import Candidate, QueryContext
from skbqa.query.structured import StructuredQuery
from skbqa.stages.rerank.base import RerankOutcome
from skbqa.stages.rerank.descriptions import Description, NodeDescriber, fit_prompt
from skbqa.stages.rerank.llm_common import LlmBase, LlmRerankSettings, RerankRun
from skbqa.stages.rerank.pairwise_sort import DEFAULT_MAX_BATCH, Task, insert_batch, next_batch
from skbqa.stages.rerank.prompts import PAIRWISE, parse_choice
from skbqa.stores.index import IndexStores

# One id ("7"), with room for a short sentence around it; more only buys rambling (LlmRerankSettings).
REPLY_TOKENS = 32


class PairwiseReranker(LlmBase):
    """PairwiseReranker(stores, model, settings=LlmRerankSettings(), *, describer=None, max_batch=16)."""

    name = "pairwise"

    def __init__(
        self,
        stores: IndexStores,
        model: ChatModel,
        settings: LlmRerankSettings | None = None,
        *,
        describer: NodeDescriber | None = None,
        max_batch: int = DEFAULT_MAX_BATCH,
    ) -> None:
        super().__init__(stores, model, settings, describer=describer)
        if max_batch < 1:
            raise InvalidInputError(f"max_batch must be at least 1, got {max_batch}")
        self._max_batch = max_batch

    def default_reply_tokens(self, listed: int) -> int:
        return REPLY_TOKENS

    def rerank(
        self, query: QueryContext, parsed: StructuredQuery | None, candidates: list[Candidate]
    ) -> RerankOutcome:
        run = self.start(query)
        run.meter.add("rounds", 0)
        if len(candidates) < 2:
            return RerankOutcome(list(candidates), usage=run.meter.close())
        with query.stage("rerank_describe"):
            descriptions = self._describer.describe(candidates)
        items = list(range(len(candidates)))
        ordered, done, note = [0], 1, ""
        while done < len(items):
            batch = next_batch(len(ordered), items[done:], self._max_batch)
            task = insert_batch(ordered, batch, self._max_batch)
            merged, note = self._drive(task, query.question, descriptions, run)
            if merged is None:
                break
            ordered, done = merged, done + len(batch)
        order = ordered + items[done:]
        return RerankOutcome([candidates[i] for i in order], note=note, usage=run.meter.close())

    def _drive(
        self,
        task: Task[list[int]],
        question: str,
        descriptions: list[Description],
        run: RerankRun,
    ) -> tuple[list[int] | None, str]:
        """Run one batch insertion round by round; (None, note) when it had to stop."""
        answers: list[bool] | None = None
        while True:
            try:
                request = next(task) if answers is None else task.send(answers)
            except StopIteration as stop:
                return stop.value, ""
            run.meter.add("rounds")
            jobs = [partial(self._before, a, b, question, descriptions, run) for a, b in request]
            results, note = self.fan_out(jobs, run)
            if note:
                return None, note
            answers = [r.value for r in results if r is not None]

    def _before(self, a: int, b: int, question: str, descriptions: list[Description], run: RerankRun) -> bool:
        """Whether item a should rank before item b. Shown in prior order under their 1-based local ids."""
        first, second = min(a, b), max(a, b)
        one, two = descriptions[first], descriptions[second]

        def render(texts: list[str]) -> str:
            return PAIRWISE.format(
                node1_id=first + 1,
                node_type_1=one.type_name,
                doc_info_1=texts[0],
                node2_id=second + 1,
                node_type_2=two.type_name,
                doc_info_2=texts[1],
                query=question,
            )

        reply_tokens = self.reply_tokens(2)
        fitted = fit_prompt(render, [one, two], self.prompt_budget(reply_tokens))
        choice = parse_choice(self.ask(fitted, run, reply_tokens), first + 1, second + 1)
        if choice is None:
            run.meter.add("unparsed")
            return a < b  # keep the prior order
        return choice == a + 1
