"""The pipeline's stage cores: `StageMessage` in, `StageMessage` (and answers for the gateway) out.

Each service runs one core, in two shells (a bus worker and a gRPC `Stage` servicer); the embedded server runs all
five in sequence in one process. The cores call the very methods `AfStrategy.retrieve` composes (parse → symbols →
ground → rank → rerank), so the distributed answers are the embedded ones. Strategies other than `af` have no
stage boundaries inside them: the parser, symbols and grounding stages pass their requests through and the
ranking stage runs the whole strategy.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from skbqa.bus import topics
from skbqa.common.errors import SkbqaError
from skbqa.distributed import codec
from skbqa.models.encoder import Encoder
from skbqa.observability.metrics import get_metrics
from skbqa.pipeline import render
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


def _af_config(runtime: StageRuntime, message: StageMessage, query: QueryContext) -> AfConfig:
    return runtime.af.config.with_options(query.options)


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

    def warm(self) -> None:
        """Build what the first request would otherwise pay for; called before the service reports ready."""

    def probe(self) -> str:
        return ""


class ParseStage(_Stage):
    """Steps 1–3 (af): the structured query."""

    role, input_topic, output_topic = "parser", topics.QUERY, topics.PARSED

    def warm(self) -> None:
        self.runtime.af.warm(self.runtime.encoder)

    def process(self, message: StageMessage) -> StageOutput:
        out = _copy(message)
        if message.strategy == "af":
            query = open_query(message, self.runtime.encoder)
            parsed = self.runtime.af.parse(query, _af_config(self.runtime, message, query))
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

    def process(self, message: StageMessage) -> StageOutput:
        out = _copy(message)
        query = open_query(message, self.runtime.encoder)
        if message.strategy == "af" and message.parsed_set:
            config = _af_config(self.runtime, message, query)
            if self.runtime.af.grounds(config):
                parsed = codec.query_from_proto(message.parsed)
                ranked = self.runtime.af.symbols(query, parsed, config)
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

    def process(self, message: StageMessage) -> StageOutput:
        out = _copy(message)
        answers: list[AnswerEnvelope] = []
        if message.strategy == "af" and message.symbols_set:
            query = open_query(message, self.runtime.encoder)
            config = _af_config(self.runtime, message, query)
            parsed = codec.query_from_proto(message.parsed)
            ranked = codec.symbol_sets_from_proto(message.symbol_sets)
            scope = self.runtime.af.ground(query, parsed, ranked, config)
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
    """Steps 6–7 (af; SAGE expansion lives in the `sage` strategy), or the whole of any other strategy."""

    role, input_topic, output_topic = "ranking", topics.GROUNDED, topics.RANKED

    def warm(self) -> None:
        self.runtime.af.lexicon()

    def process(self, message: StageMessage) -> StageOutput:
        out = _copy(message)
        query = open_query(message, self.runtime.encoder)
        k = message.k
        if message.strategy == "af":
            config = _af_config(self.runtime, message, query)
            parsed = codec.query_from_proto(message.parsed)
            scope = codec.scope_from_proto(message.scope, parsed) if message.scope_set else None
            candidates, head = self.runtime.af.rank(query, parsed, scope, config, k)
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

    def process(self, message: StageMessage) -> StageOutput:
        query = open_query(message, self.runtime.encoder)
        candidates = codec.candidates_from_proto(message.candidates)
        if message.strategy == "af":
            config = _af_config(self.runtime, message, query)
            parsed = codec.query_from_proto(message.parsed) if message.parsed_set else None
            candidates = self.runtime.af.rerank(query, parsed, candidates, message.rerank_count, config)
            _report_llm(self.role, query.notes.get("rerank_usage"), query.notes.get("rerank"))
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
