"""An answer that reaches the gateway after its call ended without one is counted as late, not as a duplicate;
a second copy of an answer already delivered is a duplicate."""

from __future__ import annotations

import time

from skbqa.bus import topics
from skbqa.bus.memory import MemoryBus
from skbqa.observability.metrics import get_metrics
from skbqa.serving.gateway.bus_backend import BusBackend
from skbqa.serving.stages.core import AnswerEnvelope, StageMessage


def outcome(name: str) -> float:
    value = get_metrics().registry.get_sample_value("skbqa_messages_total", {"stage": "gateway", "outcome": name})
    return value or 0.0


def answer(bus: MemoryBus, backend: BusBackend, request_id: str) -> None:
    envelope = AnswerEnvelope(request_id=request_id, gateway_id=backend.gateway_id, kind=AnswerEnvelope.FINAL)
    bus.publish(topics.ANSWER, request_id, envelope.SerializeToString())


def wait_until(check, within_s: float = 5.0) -> None:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.02)
    raise AssertionError("not within time")


def test_an_answer_after_the_call_ended_is_late_and_a_second_copy_a_duplicate() -> None:
    bus = MemoryBus()
    bus.ensure_topics(topics.ALL)
    backend = BusBackend(bus)
    try:
        assert backend.wait_ready(5)
        late, duplicate = outcome("late"), outcome("duplicate")
        timed_out = backend.submit(StageMessage(request_id="r-timed-out", question="q", strategy="bm25", k=1), 5)
        backend.forget(timed_out)  # the call's deadline passed: it ended without an answer
        answer(bus, backend, "r-timed-out")
        wait_until(lambda: outcome("late") == late + 1)
        answer(bus, backend, "r-timed-out")
        wait_until(lambda: outcome("duplicate") == duplicate + 1)
        assert outcome("late") == late + 1

        served = backend.submit(StageMessage(request_id="r-served", question="q", strategy="bm25", k=1), 5)
        answer(bus, backend, "r-served")
        assert served.next(5).request_id == "r-served"
        backend.forget(served)
        answer(bus, backend, "r-served")
        wait_until(lambda: outcome("duplicate") == duplicate + 2)
        assert outcome("late") == late + 1
    finally:
        backend.close()
        bus.close()
