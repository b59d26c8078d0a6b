"""The latency trace (observability/hops.py, serving/latency_trace.py) over the real gateway, bus backend and stage
workers on the in-memory bus, with stand-in stage cores: every hop is marked once and in order, the parts add up
to the trace's end to end, each hop is recorded in `skbqa_hop_seconds`, and what carries no trace stays untraced.
The budget against the gateway's own end-to-end time over the real stages: tests/integration/test_grpc_embedded.py.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable, Iterator

import grpc
import pytest

from skbqa.bus import topics
from skbqa.bus.memory import MemoryBus
from skbqa.observability import hops
from skbqa.observability.metrics import Metrics, get_metrics
from skbqa.serving import latency_trace
from skbqa.serving.stages.core import ROLES, AnswerEnvelope, StageMessage, StageOutput
from skbqa.serving.worker import StageWorker
from skbqa.v1 import api_pb2, api_pb2_grpc
from tests.fakes.backends import GatedBackend, GatedStageCore, start_api
from tests.fakes.pipeline import api_over

CHAIN = (topics.QUERY, topics.PARSED, topics.SYMBOLS, topics.GROUNDED, topics.RANKED, topics.ANSWER)


def hop_sum(hop: str) -> float:
    return get_metrics().registry.get_sample_value("skbqa_hop_seconds_sum", {"hop": hop}) or 0.0


def hop_count(hop: str) -> float:
    return get_metrics().registry.get_sample_value("skbqa_hop_seconds_count", {"hop": hop}) or 0.0


def test_the_hop_names_follow_the_pipeline() -> None:
    assert hops.STAGES == ROLES
    stage_hops = tuple(f"{stage}_{part}" for stage in ROLES for part in ("queue", "compute"))
    expected = ("gateway_accept", *stage_hops, "answer_queue", "gateway_return")
    assert expected == hops.HOPS


def test_consecutive_marks_partition_the_time() -> None:
    marks = [("accepted", 100), ("gateway_accept", 130), ("parser_queue", 180), ("parser_compute", 400)]
    assert hops.parts_us(marks) == {"gateway_accept": 30, "parser_queue": 50, "parser_compute": 220}
    timings = hops.budget_timings(hops.parts_us(marks))
    assert timings == {
        "hop.gateway_accept": 0.03,
        "hop.parser_queue": 0.05,
        "hop.parser_compute": 0.22,
        "end_to_end": 0.3,
    }
    assert hops.parts_us(marks[1:]) == {}  # no origin: no trace
    assert hops.parts_us([]) == {}


def test_a_hop_outside_the_allow_list_is_recorded_as_other_and_a_negative_part_as_zero() -> None:
    metrics = Metrics()
    metrics.observe_hop("What is the capital of France?", 0.5)
    metrics.observe_hop("parser_queue", -0.002)  # another host's clock ahead of the publisher's
    assert metrics.registry.get_sample_value("skbqa_hop_seconds_count", {"hop": "other"}) == 1
    assert metrics.registry.get_sample_value("skbqa_hop_seconds_sum", {"hop": "parser_queue"}) == 0.0


def test_a_core_that_forwards_the_request_itself_gets_the_marks_once() -> None:
    request = StageMessage(request_id="r")
    latency_trace.mark(request, hops.ACCEPTED, 10)
    latency_trace.mark(request, hops.GATEWAY_ACCEPT, 20)
    latency_trace.carry(request, StageOutput(forward=request), "parser", 30)
    assert [hop for hop, _ in latency_trace.marks_of(request)] == [
        "accepted",
        "gateway_accept",
        "parser_queue",
        "parser_compute",
    ]
    untraced = StageMessage(request_id="u")
    latency_trace.carry(untraced, StageOutput(forward=untraced), "parser", 30)
    assert not untraced.hops


@contextlib.contextmanager
def pipeline_of(core_for: Callable[[str], type[GatedStageCore]] = lambda _role: GatedStageCore):
    """The gateway's servicer and bus backend, and five stage workers whose cores forward (the last answers)."""
    bus = MemoryBus()
    bus.ensure_topics(topics.ALL)
    cores = [
        core_for(role)(open_gate=True, role=role, topics=(CHAIN[n], CHAIN[n + 1]), final=role == "reranker")
        for n, role in enumerate(ROLES)
    ]
    workers = [
        StageWorker(
            core, bus, group=f"g-{core.role}-{uuid.uuid4().hex[:6]}", poll_timeout_s=0.02, lag_interval_s=0
        )
        for core in cores
    ]
    try:
        with api_over(bus, workers) as stub:
            yield stub
    finally:
        bus.close()


@pytest.fixture
def pipeline() -> Iterator[api_pb2_grpc.SkbqaStub]:
    with pipeline_of() as stub:
        yield stub


def test_every_hop_is_marked_in_order_and_recorded_at_the_gateway(pipeline) -> None:
    before = {hop: (hop_count(hop), hop_sum(hop)) for hop in hops.HOPS}
    traced = 0.0
    for n in range(10):
        response = pipeline.Ask(api_pb2.AskRequest(question=f"question {n}"), timeout=30)
        parts = {key: ms for key, ms in response.timings_ms.items() if key.startswith(hops.TIMING_PREFIX)}
        assert sorted(parts) == sorted(f"hop.{hop}" for hop in hops.HOPS)  # a map: the order is the marks'
        assert all(ms >= 0 for ms in parts.values())
        assert sum(parts.values()) == pytest.approx(response.timings_ms["end_to_end"], abs=0.01)
        traced += response.timings_ms["end_to_end"]
    recorded = sum(hop_sum(hop) - before[hop][1] for hop in hops.HOPS)
    assert all(hop_count(hop) - before[hop][0] == 10 for hop in hops.HOPS)
    assert recorded * 1000 == pytest.approx(traced, rel=1e-3)


def test_a_replayed_answer_carries_no_trace(pipeline) -> None:
    first = pipeline.Ask(api_pb2.AskRequest(question="again", request_id="replay-1"), timeout=30)
    again = pipeline.Ask(api_pb2.AskRequest(question="again", request_id="replay-1"), timeout=30)
    assert "end_to_end" in first.timings_ms
    assert not any(key.startswith(hops.TIMING_PREFIX) for key in again.timings_ms)
    assert "end_to_end" not in again.timings_ms


def test_a_backend_without_a_bus_adds_no_hops() -> None:
    backend = GatedBackend(open_gate=True)  # answers without carrying the trace, like the embedded pipeline
    server = start_api(backend)
    try:
        with grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
            response = api_pb2_grpc.SkbqaStub(channel).Ask(api_pb2.AskRequest(question="q"), timeout=30)
        assert not any(key.startswith(hops.TIMING_PREFIX) for key in response.timings_ms)
    finally:
        backend.close()
        server.stop()


def test_an_answer_without_a_trace_is_passed_through() -> None:
    envelope = AnswerEnvelope(request_id="r", kind=AnswerEnvelope.FINAL)
    response = api_pb2.AskResponse(timings_ms={"total": 3.0})
    latency_trace.finish(envelope, response)
    assert dict(response.timings_ms) == {"total": 3.0}


class _PartialAtGrounding(GatedStageCore):
    """Grounding as in the pipeline: on a streamed request it also answers a partial, then forwards."""

    def process(self, message: StageMessage) -> StageOutput:
        output = super().process(message)
        if message.stream_partial:
            partial = api_pb2.AskResponse(partial=True, timings_ms={"total": 1.0})
            output.answers.append(
                AnswerEnvelope(
                    request_id=message.request_id,
                    kind=AnswerEnvelope.PARTIAL,
                    gateway_id=message.gateway_id,
                    answer=partial.SerializeToString(),
                )
            )
        return output


def test_a_streamed_partial_carries_the_hops_completed_by_then_and_the_final_all() -> None:
    with pipeline_of(lambda role: _PartialAtGrounding if role == "grounding" else GatedStageCore) as stub:
        before = {hop: hop_count(hop) for hop in hops.HOPS}
        events = list(stub.AskStream(api_pb2.AskRequest(question="streamed"), timeout=30))
        after = {hop: hop_count(hop) for hop in hops.HOPS}
    assert [event.WhichOneof("event") for event in events] == ["partial", "final"]
    partial, final = events[0].partial, events[1].final
    done = ("parser", "symbols", "grounding")  # the stages before the partial left
    expected = [
        hops.GATEWAY_ACCEPT,
        *(h for stage in done for h in (hops.queue_hop(stage), hops.compute_hop(stage))),
    ]
    expected += [hops.ANSWER_QUEUE, hops.GATEWAY_RETURN]
    parts = {key: ms for key, ms in partial.timings_ms.items() if key.startswith(hops.TIMING_PREFIX)}
    assert sorted(parts) == sorted(f"hop.{hop}" for hop in expected)
    assert partial.timings_ms["total"] == 1.0  # the stage's own timings stay
    assert sum(parts.values()) == pytest.approx(partial.timings_ms["end_to_end"], abs=0.01)
    final_parts = {key for key in final.timings_ms if key.startswith(hops.TIMING_PREFIX)}
    assert final_parts == {f"hop.{hop}" for hop in hops.HOPS}
    assert final.timings_ms["end_to_end"] >= partial.timings_ms["end_to_end"]
    assert all(after[hop] - before[hop] == 1 for hop in hops.HOPS)  # the histogram counts the call once
