"""The pipeline's stage cores: `StageMessage` in, `StageMessage` (and answers for the gateway) out.

Each service runs one core, in two shells (a bus worker and a gRPC `Stage` servicer); the embedded server runs all
five in sequence in one process. The cores call the very methods `AfStrategy.retrieve` composes (parse → symbols →
ground → rank → rerank), so the distributed answers are the embedded ones.

`sage` seeded by `af` (the default seed) runs af's stages too, with the base options, and then the SAGE expansion
(`SageStrategy.expand`, the code the embedded strategy runs) after step 8 as embedded mode does: in the ranking
stage when step 8 does nothing (no reranker: the default), else in the reranker stage right after step 8.
Other strategies have no stage boundaries inside them: the parser, symbols and grounding stages pass their
requests through and the ranking stage runs the whole strategy.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from skbqa.bus import topics
from skbqa.common.errors import InvalidInputError, SkbqaError
from skbqa.distributed import codec
from skbqa.models.encoder import Encoder
from skbqa.observability.metrics import get_metrics
from skbqa.pipeline import check_request, render
from skbqa.sage.strategy import SageOptions, SageStrategy, base_query
from skbqa.stores.index import IndexStores
from skbqa.strategies.af import AfStrategy
from skbqa.strategies.af_config import AfConfig
from skbqa.strategies.base import QueryContext, Strategy
from skbqa.v1 import stages_pb2

StageMessage = stages_pb2.StageMessage
AnswerEnvelope = stages_pb2.AnswerEnvelope
ROLES = ("parser", "symbols", "grounding", "ranking", "reranker")


@dataclass
class StageOutput:
    forward: StageMessage | None  # to the next stage's topic (None: the request ends here)
    answers: list[AnswerEnvelope] = field(default_factory=list)  # to skbqa.answer (partial, final)


@dataclass
class StageRuntime:
    """What every stage core reads: the index's stores (with whichever adapters the service was given), the
    encoder and the strategies."""

    stores: IndexStores
    encoder: Encoder
    strategies: Mapping[str, Strategy]

    @property
    def af(self) -> AfStrategy:
        strategy = self.strategies["af"]
        assert isinstance(strategy, AfStrategy)
        return strategy


class StageCore(Protocol):
    role: str
    input_topic: str
    output_topic: str

    def process(self, message: StageMessage) -> StageOutput: ...

    def warm(self) -> None: ...

    def probe(self) -> str:
        """ "" when the stage can serve; otherwise why not (its health turns NOT_SERVING)."""
        ...


# ------------------------------------------------------------------------------------------------ helpers


def open_query(message: StageMessage, encoder: Encoder) -> QueryContext:
    """The request's QueryContext as the previous stage left it (options, notes, the question embedding)."""
    query = QueryContext(
        message.question,
        encoder,
        options=dict(codec.from_json(message.options_json)),
        notes=dict(codec.from_json(message.notes_json)),
    )
    query.reuse_embedding(codec.embedding_from_bytes(message.question_embedding))
    return query


def close_query(message: StageMessage, query: QueryContext) -> None:
    """Write back what this stage added: notes, the embedding (once computed) and its step timings (ms)."""
    message.notes_json = codec.to_json(query.notes)
    if not message.question_embedding and query.embedding_if_computed is not None:
        message.question_embedding = codec.embedding_to_bytes(query.embedding_if_computed)
    for name, seconds in query.timings.items():
        message.timings_ms[name] = message.timings_ms[name] + seconds * 1000


def check_message(runtime: StageRuntime, message: StageMessage) -> None:
    """Refuse (InvalidInputError) what no stage could process: the gateway validates its requests, but a direct
    `Stage/Process` call or a foreign producer on the bus does not go through it. Cheap enough for every stage."""
    check_request(runtime.strategies, message.strategy, message.k, message.question)
    try:
        options = codec.from_json(message.options_json)
        notes = codec.from_json(message.notes_json)
    except ValueError as exc:
        raise InvalidInputError(f"options_json and notes_json must be JSON: {exc}") from None
    if not isinstance(options, dict) or not isinstance(notes, dict):
        raise InvalidInputError("options_json and notes_json must be JSON objects")
    if len(message.question_embedding) % 4:
        raise InvalidInputError("question_embedding must be little-endian float32 values")


@dataclass(frozen=True)
class AfPlan:
    """How a request runs af's steps in the stages: as `af` itself, or as the seeds of `sage` (`sage` set)."""

    config: AfConfig
    sage: SageOptions | None = None

    @property
    def reranks(self) -> bool:
        """Whether step 8 can change the list (AfStrategy.rerank returns it unchanged otherwise)."""
        return self.config.steps == "1-8" and self.config.reranker != "none"

    def af_query(self, query: QueryContext) -> QueryContext:
        """The context af's steps see: sage's base options; question, embedding, notes and timings shared."""
        return query if self.sage is None else base_query(query, self.sage)


def af_plan(runtime: StageRuntime, message: StageMessage) -> AfPlan | None:
    """None when the request does not run af's steps stage by stage (its ranking stage runs it whole)."""
    options = dict(codec.from_json(message.options_json))
    if message.strategy == "af":
        return AfPlan(runtime.af.config.with_options(options))
    if message.strategy == SageStrategy.name:
        sage = SageOptions.parse(options, runtime.strategies)
        if sage.seed == "af":
            return AfPlan(runtime.af.config.with_options(dict(sage.base_options or {})), sage)
    return None


def _sage(runtime: StageRuntime) -> SageStrategy:
    strategy = runtime.strategies[SageStrategy.name]
    assert isinstance(strategy, SageStrategy)
    return strategy


def _answer(message: StageMessage, kind: Any, stage: str, answer: bytes) -> AnswerEnvelope:
    return AnswerEnvelope(
        request_id=message.request_id, kind=kind, stage=stage, answer=answer, gateway_id=message.gateway_id
    )


def _copy(message: StageMessage) -> StageMessage:
    out = StageMessage()
    out.CopyFrom(message)
    return out


def _elapsed_start(message: StageMessage) -> float:
    """A perf_counter origin such that "total" counts from when the gateway accepted the request."""
    waited = max(0.0, time.time() - message.accepted_unix_ms / 1000) if message.accepted_unix_ms else 0.0
    return time.perf_counter() - waited


def _report_llm(role: str, usage: Any, fallback: Any) -> None:
    """LLM tokens and calls of this stage, and a fallback (LLM down, slow or unparseable) as an error kind."""
    if usage or fallback:
        metrics = get_metrics()
        if usage:
            metrics.count_llm(role, usage)
        if fallback:
            metrics.count_error(role, "llm_fallback")


# ------------------------------------------------------------------------------------------------ cores


class _Stage:
    role = ""
    input_topic = ""
    output_topic = ""

    def __init__(self, runtime: StageRuntime) -> None:
        self.runtime = runtime

    def process(self, message: StageMessage) -> StageOutput:
        check_message(self.runtime, message)
        return self._process(message)

    def _process(self, message: StageMessage) -> StageOutput:
        raise NotImplementedError

    def warm(self) -> None:
        """Build what the first request would otherwise pay for; called before the service reports ready."""

    def probe(self) -> str:
        return ""


class ParseStage(_Stage):
    """Steps 1–3 (af): the structured query."""

    role, input_topic, output_topic = "parser", topics.QUERY, topics.PARSED

    def warm(self) -> None:
        self.runtime.af.warm(self.runtime.encoder)

    def _process(self, message: StageMessage) -> StageOutput:
        out = _copy(message)
        plan = af_plan(self.runtime, message)
        if plan is not None:
            query = open_query(message, self.runtime.encoder)
            if plan.sage is not None:
                _sage(self.runtime).graph()  # as embedded sage: fail before running the base without a graph
                query.embedding  # noqa: B018 -- as embedded sage: embed once, the base's context inherits it
            parsed = self.runtime.af.parse(plan.af_query(query), plan.config)
            _report_llm(self.role, query.notes.get("llm_usage"), query.notes.get("parser_fallback"))
            out.parsed.CopyFrom(codec.query_to_proto(parsed))
            out.parsed_set = True
            close_query(out, query)
        return StageOutput(out)


class SymbolsStage(_Stage):
    """Step 4 (af): candidate nodes per constant, attribute filters."""

    role, input_topic, output_topic = "symbols", topics.PARSED, topics.SYMBOLS

    def warm(self) -> None:
        self.runtime.af.lexicon()
        self.runtime.af.catalog()

    def _process(self, message: StageMessage) -> StageOutput:
        out = _copy(message)
        plan = af_plan(self.runtime, message)
        if plan is not None and message.parsed_set:
            query = open_query(message, self.runtime.encoder)
            if self.runtime.af.grounds(plan.config):
                parsed = codec.query_from_proto(message.parsed)
                ranked = self.runtime.af.symbols(plan.af_query(query), parsed, plan.config)
                # symbols() may move unapplicable constraints into the text constraints: send the query on too
                out.parsed.CopyFrom(codec.query_to_proto(parsed))
                del out.symbol_sets[:]
                out.symbol_sets.extend(codec.symbol_sets_to_proto(ranked))
                out.symbols_set = True
                close_query(out, query)
        return StageOutput(out)


class GroundingStage(_Stage):
    """Step 5 (af): Algorithm 2 with scope expansion; the partial answer for AskStream."""

    role, input_topic, output_topic = "grounding", topics.SYMBOLS, topics.GROUNDED

    def probe(self) -> str:
        """Grounding cannot be approximated: without its graph store the service is not serving."""
        try:
            self.runtime.stores.graph.degree(np.zeros(1, np.int64))
        except SkbqaError as exc:
            return str(exc).splitlines()[0]
        return ""

    def _process(self, message: StageMessage) -> StageOutput:
        out = _copy(message)
        answers: list[AnswerEnvelope] = []
        plan = af_plan(self.runtime, message)
        if plan is not None and message.symbols_set:
            query = open_query(message, self.runtime.encoder)
            parsed = codec.query_from_proto(message.parsed)
            ranked = codec.symbol_sets_from_proto(message.symbol_sets)
            scope = self.runtime.af.ground(plan.af_query(query), parsed, ranked, plan.config)
            out.scope.CopyFrom(codec.scope_to_proto(scope))
            out.scope_set = True
            close_query(out, query)
            if message.stream_partial:
                partial = render(
                    self.runtime.stores,
                    query,
                    message.strategy,
                    message.k,
                    self.runtime.af.grounded_candidates(parsed, scope, message.k),
                    _elapsed_start(message),
                )
                partial.timings_ms = {**dict(out.timings_ms), "total": partial.timings_ms["total"]}
                response = codec.answer_to_proto(partial, message.request_id, partial=True)
                answers.append(_answer(message, AnswerEnvelope.PARTIAL, self.role, response.SerializeToString()))
        return StageOutput(out, answers)


class RankingStage(_Stage):
    """Steps 6–7 (af, and sage seeded by af: then the SAGE expansion unless step 8 comes first), or the whole of
    any other strategy."""

    role, input_topic, output_topic = "ranking", topics.GROUNDED, topics.RANKED

    def warm(self) -> None:
        self.runtime.af.lexicon()

    def _process(self, message: StageMessage) -> StageOutput:
        out = _copy(message)
        query = open_query(message, self.runtime.encoder)
        k = message.k
        plan = af_plan(self.runtime, message)
        if plan is not None:
            parsed = codec.query_from_proto(message.parsed)
            scope = codec.scope_from_proto(message.scope, parsed) if message.scope_set else None
            candidates, head = self.runtime.af.rank(plan.af_query(query), parsed, scope, plan.config, k)
            if plan.sage is not None and not plan.reranks:
                candidates = _sage(self.runtime).expand(query, plan.sage, candidates, k)
                head = 0  # nothing left for step 8 (it would not have changed the seeds)
        else:
            candidates = self.runtime.strategies[message.strategy].retrieve(query, k)[:k]
            head = len(candidates)
        del out.candidates[:]
        out.candidates.extend(codec.candidates_to_proto(candidates))
        out.rerank_count = head
        out.ranked_set = True
        close_query(out, query)
        return StageOutput(out)


class RerankStage(_Stage):
    """Step 8 (af), then the answer: node ids, names, reasons and evidence, for the waiting gateway."""

    role, input_topic, output_topic = "reranker", topics.RANKED, topics.ANSWER

    def _process(self, message: StageMessage) -> StageOutput:
        query = open_query(message, self.runtime.encoder)
        candidates = codec.candidates_from_proto(message.candidates)
        plan = af_plan(self.runtime, message)
        if plan is not None:
            parsed = codec.query_from_proto(message.parsed) if message.parsed_set else None
            af_query = plan.af_query(query)
            candidates = self.runtime.af.rerank(af_query, parsed, candidates, message.rerank_count, plan.config)
            _report_llm(self.role, query.notes.get("rerank_usage"), query.notes.get("rerank"))
            if plan.sage is not None and plan.reranks:
                candidates = _sage(self.runtime).expand(query, plan.sage, candidates, message.k)
        final = render(
            self.runtime.stores, query, message.strategy, message.k, candidates, _elapsed_start(message)
        )
        timings = dict(message.timings_ms)
        for name, value in final.timings_ms.items():
            timings[name] = value if name == "total" else timings.get(name, 0.0) + value
        total = timings.pop("total")
        final.timings_ms = {**{name: round(value, 3) for name, value in sorted(timings.items())}, "total": total}
        response = codec.answer_to_proto(final, message.request_id)
        return StageOutput(None, [_answer(message, AnswerEnvelope.FINAL, self.role, response.SerializeToString())])


STAGE_CLASSES: dict[str, type[_Stage]] = {
    "parser": ParseStage,
    "symbols": SymbolsStage,
    "grounding": GroundingStage,
    "ranking": RankingStage,
    "reranker": RerankStage,
}


def build_stage(role: str, runtime: StageRuntime) -> StageCore:
    return STAGE_CLASSES[role](runtime)  # type: ignore[return-value]


def run_stage(core: StageCore, message: StageMessage) -> StageOutput:
    """`core.process`, answering around a lost encoder server or vector store (distributed/degrade.py)."""
    from skbqa.distributed.degrade import FALLBACK_STRATEGY, DegradedBackendError, degrade

    try:
        return core.process(message)
    except DegradedBackendError as exc:
        if message.strategy == FALLBACK_STRATEGY:
            raise
        get_metrics().count_error(core.role, "degraded")
        return core.process(degrade(message, exc))
