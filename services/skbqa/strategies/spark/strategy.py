"""`spark`: SPARK, the one-call planner of the SAGE paper (Figure 3; Appendix C.7 steps 1–2).

Per question: ONE chat call writes a plan (`spark.prompts`), `parse_plan` reads it defensively, `PlanExecutor`
runs it over skbqa's own stores, and the answer step's nodes are ranked — by tier first (nodes reached through a
named node's best candidates, as af step 6), then by cosine to the question fused with BM25 over the question
and the plan's search words. When the plan is unusable, the LLM fails, or the plan returns nothing, the answers
come from BM25 + cosine (`fused_pool`) over the answer type, as the paper's fallback; with `fill`, a plan that
returns fewer than k nodes is continued the same way. SAGE's neighbour expansion (C.7 steps 3–4) is not here:
this strategy is the seed retriever.

Without a ChatModel the strategy can be built (the engine lists every strategy) but `retrieve` refuses with an
`InvalidInputError` naming what to configure. Notes: `spark` (the plan, per-step results, warnings, fallback
reason, the reply) and `llm_usage` (the call's tokens).
"""

from __future__ import annotations

import logging
import threading

import numpy as np

from skbqa.common.errors import InvalidInputError
from skbqa.models.chat import ChatModel, ChatReply, LlmError
from skbqa.query.context import Candidate, QueryContext
from skbqa.query.encoder import Encoder
from skbqa.stages.parse.prompts import SchemaProfile
from skbqa.stages.ranking.fusion import fused_pool, min_max
from skbqa.stages.ranking.step import FILL_POOL
from skbqa.stores.index import IndexStores
from skbqa.strategies.af import AfStrategy
from skbqa.strategies.spark.config import SparkConfig
from skbqa.strategies.spark.executor import Execution, PlanExecutor
from skbqa.strategies.spark.plan import Plan, parse_plan
from skbqa.strategies.spark.prompts import spark_prompt

logger = logging.getLogger(__name__)

NEEDS_LLM = "the spark planner needs an LLM: run with --llm and SKBQA_LLM_URL / SKBQA_LLM_MODEL set (docs/llm.md)"
MAX_NOTED_REPLY = 4_000  # characters of the raw reply kept in the notes (for debugging a plan)


class SparkStrategy:
    name = "spark"

    def __init__(
        self,
        stores: IndexStores,
        af: AfStrategy | None = None,
        chat: ChatModel | None = None,
        *,
        config: SparkConfig | None = None,
    ) -> None:
        """`af` lends its name lexicon, attribute catalog and type guess (pass the engine's to share them)."""
        self._stores = stores
        self._af = af if af is not None else AfStrategy(stores)
        self._chat = chat
        self.config = config or SparkConfig()
        self.config.validate()
        self._executor = PlanExecutor(stores, self._af)
        self._profile: SchemaProfile | None = None
        self._lock = threading.Lock()

    @property
    def available(self) -> bool:
        """Whether `retrieve` can run (it needs a ChatModel); callers that sweep every strategy skip it if not."""
        return self._chat is not None

    def profile(self) -> SchemaProfile:
        """The schema material of the prompt, sampled from the node table once."""
        with self._lock:
            if self._profile is None:
                self._profile = SchemaProfile.from_nodes(self._stores.nodes)
            return self._profile

    def warm(self, encoder: Encoder) -> None:
        self.profile()
        self._af.lookups.lexicon()
        self._af.lookups.catalog()

    # ------------------------------------------------------------------------------------------------ retrieve

    def retrieve(self, query: QueryContext, k: int) -> list[Candidate]:
        if self._chat is None:
            raise InvalidInputError(NEEDS_LLM)
        config = self.config.with_options(query.options)
        note: dict[str, object] = {"plan": None, "steps": [], "warnings": [], "fallback": None}
        query.notes["spark"] = note
        warnings: list[str] = []
        plan, reply = self._plan(query, self._chat, config, note)
        execution: Execution | None = None
        answers: list[Candidate] = []
        if plan is not None:
            warnings.extend(plan.warnings)
            if plan.usable:
                note["plan"] = plan.to_dict()
                execution = self._executor.execute(query, plan, config, k)
                ids = self._stores.nodes.ids
                note["steps"] = [r.summary(ids) for r in execution.results.values()]
                warnings.extend(execution.warnings)
                warnings.extend(w for r in execution.results.values() for w in r.warnings)
                answers = self._rank(query, execution, config, k)
                if not answers:
                    note["fallback"] = "the plan returned no nodes"
            else:
                note["fallback"] = f"no usable plan: {plan.problem}"
        note["warnings"] = warnings
        if reply is not None:
            note["reply"] = reply.content[:MAX_NOTED_REPLY]

        answer_type = execution.answer_type if execution is not None else None
        if answer_type is None and plan is not None:
            answer_type = self._executor.resolve_type(plan.target_type, "target_type", warnings)
        if not answers:
            if answer_type is None:
                answer_type = self._af.parse.guess_target_type(query)
            note["fallback_type"] = answer_type
            return self._hybrid(query, config, answer_type, k, None, f"fallback: {note['fallback']}")
        note["answers"] = len(answers)
        if len(answers) >= k or not config.fill:
            return answers
        taken = np.asarray([c.position for c in answers], np.int64)
        strand = f"fill after the plan's {len(answers)} answer(s): BM25 + cosine over {answer_type or 'any type'}"
        return answers + self._hybrid(query, config, answer_type, k - len(answers), taken, strand)

    def _plan(
        self, query: QueryContext, chat: ChatModel, config: SparkConfig, note: dict[str, object]
    ) -> tuple[Plan | None, ChatReply | None]:
        """The one LLM call and its parse; (None, None) when the LLM fails (the note says why)."""
        with query.stage("spark.plan"):
            budget = chat.context_window - config.max_tokens
            messages = spark_prompt(self.profile(), query.question, budget_tokens=budget)
            try:
                reply = chat.chat(
                    messages, max_tokens=config.max_tokens, temperature=0.0, timeout=config.llm_timeout
                )
            except LlmError as exc:
                # not the message: it may quote the endpoint's error body, and that can echo the prompt (the
                # question); the request's own notes keep the whole message
                shown = {k: v for k, v in exc.details.items() if k in ("url", "status", "attempts")}
                logger.warning("spark: the LLM failed (%s %s); BM25 + cosine fallback", type(exc).__name__, shown)
                note["fallback"] = f"the LLM failed: {exc}"
                return None, None
            query.notes["llm_usage"] = {
                "calls": 1,
                "prompt_tokens": reply.prompt_tokens,
                "completion_tokens": reply.completion_tokens,
            }
            return parse_plan(reply.content), reply

    def _rank(self, query: QueryContext, execution: Execution, config: SparkConfig, k: int) -> list[Candidate]:
        answer = execution.answer
        if answer is None or answer.positions.size == 0:
            return []
        with query.stage("spark.rank"):
            keys = answer.positions
            dense = self._stores.vectors[config.rank_embedding].vectors_for(keys) @ query.embedding
            # the plan's search words and unapplied conditions say what the question is about in the SKB's terms
            sparse = self._stores.bm25.scores(" ".join([query.question, *execution.texts]))[keys]
            fused = config.dense_weight * min_max(dense) + (1 - config.dense_weight) * min_max(sparse)
            tiers = answer.tiers if config.tiered else np.zeros(keys.size, np.int64)
            order = np.lexsort((keys, -fused, tiers))[:k]
            out: list[Candidate] = []
            for i in order:
                position = int(keys[i])
                evidence = {
                    "strand": "spark plan",
                    "steps": execution.steps_holding(position),
                    **execution.graph_evidence(self._stores, position),
                }
                scores = {
                    "fused": float(fused[i]),
                    "cosine": float(dense[i]),
                    "bm25": float(sparse[i]),
                    "tier": float(tiers[i]),
                }
                out.append(Candidate(position, float(fused[i]), "spark", scores, evidence))
            return out

    def _hybrid(
        self,
        query: QueryContext,
        config: SparkConfig,
        type_name: str | None,
        count: int,
        exclude: np.ndarray | None,
        strand: str,
    ) -> list[Candidate]:
        codes = self._executor.type_codes
        code = codes.get(type_name or "")
        with query.stage("spark.fallback" if exclude is None else "spark.fill"):
            pool = fused_pool(
                self._stores.bm25,
                self._stores.vectors[config.rank_embedding],
                query,
                max(FILL_POOL, count),
                dense_weight=config.dense_weight,
                node_types=None if code is None else [code],
                exclude=exclude,
            )
            candidates = pool.candidates(count, "hybrid")
        for candidate in candidates:
            candidate.evidence["strand"] = strand
        return candidates
