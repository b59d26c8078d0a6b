"""The consumer-lag exporter (skbqa_kafka_lag) over the in-memory bus, on its own and inside a StageWorker: lag
shows the uncommitted messages and drops to 0 after consume + commit; a failing or hanging `lag` call is counted,
never fatal; the exporter thread stops with the worker. (The Kafka path: tests/integration/test_distributed_stack.py
reads the series from Prometheus.)"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Sequence

import pytest

from skbqa.bus import topics
from skbqa.bus.memory import MemoryBus
from skbqa.observability.metrics import Metrics, get_metrics
from skbqa.serving.lag import LagExporter
from skbqa.serving.stages.core import StageMessage
from skbqa.serving.worker import StageWorker
from tests.fakes.backends import GatedStageCore


def lag_value(metrics: Metrics, topic: str, group: str) -> float | None:
    return metrics.registry.get_sample_value("skbqa_kafka_lag", {"topic": topic, "group": group})


def errors(metrics: Metrics, stage: str, kind: str) -> float:
    return metrics.registry.get_sample_value("skbqa_errors_total", {"stage": stage, "kind": kind}) or 0.0


def wait_for(check: Callable[[], bool], timeout_s: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


@pytest.fixture
def bus():
    memory = MemoryBus()
    yield memory
    memory.close()


def test_lag_counts_uncommitted_messages_then_zero_after_commit(bus) -> None:
    metrics = Metrics()
    exporter = LagExporter(bus, "g", ["work"], stage="parser", metrics=metrics)
    for i in range(7):
        bus.publish("work", f"r{i}", b"x")
    assert exporter.export_once() == {"work": 7}
    assert lag_value(metrics, "work", "g") == 7

    consumer = bus.consumer(["work"], group="g")
    batch = consumer.poll(1.0, 100)
    assert len(batch) == 7
    exporter.export_once()
    assert lag_value(metrics, "work", "g") == 7  # read but not committed: still behind
    consumer.commit(batch)
    exporter.export_once()
    assert lag_value(metrics, "work", "g") == 0
    consumer.close()


class _BrokenBus:
    """A bus whose `lag` raises, or blocks until released."""

    def __init__(self, *, block: threading.Event | None = None) -> None:
        self.block = block
        self.calls = 0

    def lag(self, group: str, topics: Sequence[str]) -> dict[str, int]:
        self.calls += 1
        if self.block is not None:
            self.block.wait(10)
            return dict.fromkeys(topics, 3)
        raise ConnectionError("broker away\nsecond line")


def test_a_failing_lag_call_is_counted_and_the_loop_goes_on() -> None:
    metrics = Metrics()
    broken = _BrokenBus()
    exporter = LagExporter(broken, "g", ["work"], stage="parser", interval_s=0.01, metrics=metrics).start()  # type: ignore[arg-type]
    try:
        # the count follows the call: wait for it, not for the call, or a loaded machine reads it in between
        assert wait_for(lambda: errors(metrics, "parser", "lag") >= 3), (
            "the exporter stopped after the first failure"
        )
        assert broken.calls >= 3
        assert lag_value(metrics, "work", "g") is None  # no made-up value
    finally:
        exporter.stop()


def test_a_hanging_lag_call_times_out_and_is_not_piled_up() -> None:
    metrics = Metrics()
    release = threading.Event()
    stuck = _BrokenBus(block=release)
    exporter = LagExporter(stuck, "g", ["work"], stage="ranking", timeout_s=0.05, metrics=metrics)  # type: ignore[arg-type]
    started = time.monotonic()
    assert exporter.export_once() is None
    assert time.monotonic() - started < 2
    assert errors(metrics, "ranking", "lag_timeout") == 1
    assert exporter.export_once() is None  # still stuck: no second call behind it
    assert stuck.calls == 1
    release.set()
    assert wait_for(lambda: exporter._call is not None and not exporter._call.is_alive())
    assert exporter.export_once() == {"work": 3}
    assert lag_value(metrics, "work", "g") == 3


def test_bad_interval_is_refused(bus) -> None:
    with pytest.raises(ValueError):
        LagExporter(bus, "g", ["work"], stage="parser", interval_s=0)


def _request() -> StageMessage:
    return StageMessage(request_id=uuid.uuid4().hex, question="q", strategy="af", k=5)


def test_a_stage_worker_exports_its_groups_lag_and_stops_it_with_itself(bus) -> None:
    core = GatedStageCore(role="reranker", topics=(topics.RANKED, topics.ANSWER), final=True)
    group = f"lag-{uuid.uuid4().hex[:8]}"
    metrics = get_metrics()  # the worker records on the process-wide instance, as in a service
    worker = StageWorker(core, bus, group=group, poll_timeout_s=0.02, lag_interval_s=0.02).start()
    try:
        for _ in range(5):
            message = _request()
            bus.publish(topics.RANKED, message.request_id, message.SerializeToString())
        core.wait_entered(1, 5)
        assert wait_for(lambda: lag_value(metrics, topics.RANKED, group) == 5), lag_value(
            metrics, topics.RANKED, group
        )
        core.gate.set()
        assert wait_for(lambda: lag_value(metrics, topics.RANKED, group) == 0), lag_value(
            metrics, topics.RANKED, group
        )
    finally:
        core.gate.set()
        worker.stop()
    assert worker.lag is not None and worker.lag._thread is not None
    assert not worker.lag._thread.is_alive()


def test_the_lag_exporter_can_be_turned_off(bus) -> None:
    worker = StageWorker(GatedStageCore(), bus, lag_interval_s=0)
    assert worker.lag is None


def test_a_stage_worker_counts_the_message_in_hand_as_in_flight(bus) -> None:
    core = GatedStageCore(role="reranker", topics=(topics.RANKED, topics.ANSWER), final=True)
    metrics = get_metrics()

    def inflight() -> float:
        return metrics.registry.get_sample_value("skbqa_inflight", {"service": "reranker"}) or 0.0

    worker = StageWorker(core, bus, poll_timeout_s=0.02, lag_interval_s=0).start()
    try:
        message = _request()
        bus.publish(topics.RANKED, message.request_id, message.SerializeToString())
        core.wait_entered(1, 5)
        assert inflight() == 1
        core.gate.set()
        assert wait_for(lambda: worker.processed == 1)
        assert inflight() == 0
    finally:
        core.gate.set()
        worker.stop()
