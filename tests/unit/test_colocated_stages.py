"""Co-located stages (serving/stages/chain.py): one worker running consecutive stages in process, over the
in-memory bus with stand-in cores. The role syntax and its errors; every stage keeps its two hops (the co-located
queue hop ≈ 0) and the parts add up; the topics inside the group stay empty; per-stage metrics; errors, expired
deadlines, dead letters and partial answers as separate workers give them; the gateway's liveness probe does
not watch the topics inside a group. Same answers as separate workers over the real stages:
tests/integration/test_colocated_pipeline.py."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from skbqa.bus import topics
from skbqa.bus.memory import MemoryBus
from skbqa.cli.main import main
from skbqa.common.errors import BackendUnavailableError, InvalidInputError
from skbqa.observability import hops
from skbqa.observability.metrics import get_metrics
from skbqa.serving.gateway.stage_liveness import PIPELINE, StageLiveness, watched_stages
from skbqa.serving.stages.chain import StageChain, colocated_groups, service_roles, stage_roles
from skbqa.serving.stages.core import ROLES, AnswerEnvelope, StageCore, StageMessage, StageOutput
from skbqa.serving.stages.registry import run_stage
from skbqa.serving.status import DEADLINE_EXCEEDED, INVALID_ARGUMENT, UNAVAILABLE
from skbqa.serving.worker import StageWorker
from skbqa.v1 import api_pb2, api_pb2_grpc
from tests.fakes.backends import GatedStageCore
from tests.fakes.pipeline import api_over, read_answers

CHAIN = (topics.QUERY, topics.PARSED, topics.SYMBOLS, topics.GROUNDED, topics.RANKED, topics.ANSWER)


def _core(role: str, error: Exception | None = None) -> GatedStageCore:
    n = ROLES.index(role)
    return GatedStageCore(
        open_gate=True, error=error, role=role, topics=(CHAIN[n], CHAIN[n + 1]), final=role == "reranker"
    )


class PartialCore(GatedStageCore):
    """Grounding as it is: a partial answer for the stream, and the request forwarded."""

    def process(self, message: StageMessage) -> StageOutput:
        partial = AnswerEnvelope(request_id=message.request_id, kind=AnswerEnvelope.PARTIAL, stage=self.role)
        return StageOutput(forward=message, answers=[partial])


def _worker(core: StageCore, bus: MemoryBus) -> StageWorker:
    return StageWorker(core, bus, poll_timeout_s=0.02, lag_interval_s=0, retry_backoff_s=0.01)


def _request(deadline_ms: int = 0) -> StageMessage:
    return StageMessage(
        request_id=uuid.uuid4().hex, question="q", strategy="af", k=5, deadline_unix_ms=deadline_ms
    )


@pytest.fixture
def bus() -> Iterator[MemoryBus]:
    memory = MemoryBus()
    memory.ensure_topics(topics.ALL)
    yield memory
    memory.close()


# ------------------------------------------------------------------------------------------------ the role syntax


def test_a_colocated_role_names_consecutive_stages_in_pipeline_order() -> None:
    assert stage_roles("ranking") == ("ranking",)
    assert stage_roles("parser+symbols+grounding") == ("parser", "symbols", "grounding")
    assert service_roles(["parser+symbols+grounding"]) == ("parser+symbols+grounding", "ranking", "reranker")
    assert service_roles(()) == ROLES
    for role, message in [
        ("parser+grounding", "did you mean 'parser\\+symbols\\+grounding'"),
        ("symbols+parser", "did you mean 'parser\\+symbols'"),
        ("parser+gateway", "unknown stage 'gateway'"),
        ("parser+parser", "names a stage twice"),
    ]:
        with pytest.raises(InvalidInputError, match=message):
            stage_roles(role)
    with pytest.raises(InvalidInputError, match="in two co-located groups"):
        colocated_groups(["parser+symbols", "symbols+grounding"])
    with pytest.raises(InvalidInputError, match="two or more stages"):
        colocated_groups(["ranking"])


def test_serve_refuses_a_bad_colocated_role_as_bad_usage(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["serve", "--index", str(tmp_path), "--bus", "kafka://127.0.0.1:9", "--role", "parser+grounding"]
    assert main(argv) == 2
    error = capsys.readouterr().err.strip()
    assert error.count("\n") == 0 and "consecutive and in pipeline order" in error
    assert main([*argv[:-1], "parser+symbols", "--colocated", "ranking"]) == 2
    assert "two or more stages" in capsys.readouterr().err


# ------------------------------------------------------------------------------------------------ the pipeline


@pytest.fixture
def colocated_pipeline(bus: MemoryBus) -> Iterator[api_pb2_grpc.SkbqaStub]:
    """The real gateway servicer and bus backend; parser+symbols+grounding as one worker, then ranking, reranker."""
    group = StageChain([_core("parser"), _core("symbols"), _core("grounding")], run_stage)
    workers = [_worker(group, bus), _worker(_core("ranking"), bus), _worker(_core("reranker"), bus)]
    with api_over(bus, workers) as stub:
        yield stub


def _stage_count(stage: str) -> float:
    labels = {"stage": stage, "strategy": "af", "status": "ok"}
    return get_metrics().registry.get_sample_value("skbqa_stage_seconds_count", labels) or 0.0


def test_colocated_stages_keep_their_hops_and_the_parts_add_up(colocated_pipeline, bus: MemoryBus) -> None:
    before = {stage: _stage_count(stage) for stage in ROLES}
    for n in range(10):
        response = colocated_pipeline.Ask(api_pb2.AskRequest(question=f"question {n}"), timeout=30)
        parts = {key: ms for key, ms in response.timings_ms.items() if key.startswith(hops.TIMING_PREFIX)}
        assert sorted(parts) == sorted(f"hop.{hop}" for hop in hops.HOPS)
        assert all(ms >= 0 for ms in parts.values())
        assert sum(parts.values()) == pytest.approx(response.timings_ms[hops.END_TO_END], abs=0.01)
        # handed over in process: no broker, no poll between the co-located stages
        assert parts["hop.symbols_queue"] < 5 and parts["hop.grounding_queue"] < 5, parts
    assert all(_stage_count(stage) - before[stage] == 10 for stage in ROLES)  # each stage under its own name
    assert bus.end_offsets(topics.PARSED) == [0] * bus.partitions(topics.PARSED)  # the inner topics carry nothing
    assert bus.end_offsets(topics.SYMBOLS) == [0] * bus.partitions(topics.SYMBOLS)


def test_a_partial_goes_out_before_a_later_colocated_stage_fails_and_its_input_is_dead_lettered(
    bus: MemoryBus,
) -> None:
    grounding = PartialCore(open_gate=True, role="grounding", topics=(topics.SYMBOLS, topics.GROUNDED))
    group = StageChain(
        [grounding, _core("ranking", error=BackendUnavailableError("vector store down"))], run_stage
    )
    worker = _worker(group, bus).start()
    dead = bus.consumer([topics.DEAD_LETTER], group="inspect")
    try:
        request = _request()
        bus.publish(topics.SYMBOLS, request.request_id, request.SerializeToString())
        answers = read_answers(bus, 2)
        assert [(a.kind, a.stage) for a in answers] == [
            (AnswerEnvelope.PARTIAL, "grounding"),
            (AnswerEnvelope.ERROR, "ranking"),
        ]
        assert answers[1].status_code == UNAVAILABLE and "in the ranking stage" in answers[1].status_message
        letters = dead.poll(1.0, 10)
        assert len(letters) == 1
        assert letters[0].headers["skbqa-stage"] == "ranking"
        assert letters[0].headers["skbqa-source-topic"] == topics.GROUNDED  # ranking's own input topic
        assert StageMessage.FromString(letters[0].value).request_id == request.request_id
        assert bus.lag(worker.group, [topics.SYMBOLS])[topics.SYMBOLS] == 0  # committed once all was published
    finally:
        worker.stop()


def test_bad_input_and_expired_deadlines_are_answered_by_the_stage_that_meets_them(bus: MemoryBus) -> None:
    symbols = _core("symbols", error=InvalidInputError("no such constant"))
    group = StageChain([_core("parser"), symbols], run_stage)
    worker = _worker(group, bus).start()
    try:
        invalid, expired = _request(), _request(deadline_ms=int(time.time() * 1000) - 1)
        for request in (invalid, expired):
            bus.publish(topics.QUERY, request.request_id, request.SerializeToString())
        answers = {a.request_id: a for a in read_answers(bus, 2)}
        assert (answers[invalid.request_id].stage, answers[invalid.request_id].status_code) == (
            "symbols",
            INVALID_ARGUMENT,
        )
        assert answers[expired.request_id].status_code == DEADLINE_EXCEEDED
        assert "before the parser stage" in answers[expired.request_id].status_message
        assert symbols.calls == 1  # bad input is not retried
    finally:
        worker.stop()


# ------------------------------------------------------------------------------------------------ readiness


class Clock:
    now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_gateway_does_not_watch_the_topics_inside_a_colocated_group(bus: MemoryBus) -> None:
    assert watched_stages(["parser+symbols+grounding"]) == (
        ("parser+symbols+grounding", topics.QUERY),
        ("ranking", topics.GROUNDED),
        ("reranker", topics.RANKED),
    )
    assert watched_stages() == PIPELINE
    bus.publish(topics.PARSED, "left-by-an-earlier-layout", b"x")  # no group will ever read it
    clock = Clock()
    colocated = StageLiveness(bus, stages=watched_stages(["parser+symbols+grounding"]), stall_s=10.0, clock=clock)
    separate = StageLiveness(bus, stall_s=10.0, clock=clock)
    assert colocated.check() == separate.check() == ""
    clock.now = 11.0
    assert colocated.check() == ""
    assert "symbols (1 waiting)" in separate.check()
    # the group itself is watched in its first stage's group, and named as the service it is
    bus.consumer([topics.QUERY], group="skbqa-parser")  # joins, then takes nothing
    bus.publish(topics.QUERY, "r", b"question")
    colocated.check()
    clock.now = 22.0
    assert "parser+symbols+grounding (1 waiting)" in colocated.check()
