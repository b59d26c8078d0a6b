"""What every stage core shares: `StageMessage` in, `StageMessage` (and answers for the gateway) out; the runtime it
reads, the request's context rebuilt from the message, and how a request runs af's steps stage by stage.

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

from skbqa.common.errors import InvalidInputError
from skbqa.engine.answers import check_option_names, check_request
from skbqa.observability.metrics import get_metrics
from skbqa.query.context import QueryContext, Strategy
from skbqa.query.encoder import Encoder
from skbqa.serving import codec
from skbqa.stages.config import AfConfig
from skbqa.stores.index import IndexStores
from skbqa.strategies.af import AfStrategy
from skbqa.strategies.sage.strategy import SageOptions, SageStrategy, base_query
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
    check_option_names(message.strategy, options)
    if len(message.question_embedding) % 4:
        raise InvalidInputError("question_embedding must be little-endian float32 values")


@dataclass(frozen=True)
class AfPlan:
    """How a request runs af's steps in the stages: as `af` itself, or as the seeds of `sage` (`sage` set)."""

    config: AfConfig
    sage: SageOptions | None = None

    @property
    def reranks(self) -> bool:
        return self.config.reranks

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


def sage_of(runtime: StageRuntime) -> SageStrategy:
    strategy = runtime.strategies[SageStrategy.name]
    assert isinstance(strategy, SageStrategy)
    return strategy


def answer_envelope(message: StageMessage, kind: Any, stage: str, answer: bytes) -> AnswerEnvelope:
    return AnswerEnvelope(
        request_id=message.request_id, kind=kind, stage=stage, answer=answer, gateway_id=message.gateway_id
    )


def copy_message(message: StageMessage) -> StageMessage:
    out = StageMessage()
    out.CopyFrom(message)
    return out


def elapsed_start(message: StageMessage) -> float:
    """A perf_counter origin such that "total" counts from when the gateway accepted the request."""
    waited = max(0.0, time.time() - message.accepted_unix_ms / 1000) if message.accepted_unix_ms else 0.0
    return time.perf_counter() - waited


def report_llm(role: str, usage: Any, fallback: Any) -> None:
    """LLM tokens and calls of this stage, and a fallback (LLM down, slow or unparseable) as an error kind."""
    if usage or fallback:
        metrics = get_metrics()
        if usage:
            metrics.count_llm(role, usage)
        if fallback:
            metrics.count_error(role, "llm_fallback")


class StageBase:
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
