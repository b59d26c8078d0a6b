"""The gateway's readiness follows the pipeline: a stage whose input waits without progress for the stall time
is reported (and a stage that takes its work again is not), on the in-memory bus."""

from __future__ import annotations

import time

import pytest

from skbqa.bus import topics
from skbqa.bus.memory import MemoryBus
from skbqa.observability.metrics import get_metrics
from skbqa.serving.gateway.bus_backend import BusBackend
from skbqa.serving.gateway.stage_liveness import StageLiveness


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def bus() -> MemoryBus:
    bus = MemoryBus()
    bus.ensure_topics(topics.ALL)
    return bus


def test_an_idle_pipeline_is_ready(bus: MemoryBus) -> None:
    clock = Clock()
    liveness = StageLiveness(bus, stall_s=10.0, clock=clock)
    assert liveness.check() == ""
    clock.now = 60.0
    assert liveness.check() == ""


def test_a_stage_that_takes_no_work_is_reported_after_the_stall_time(bus: MemoryBus) -> None:
    clock = Clock()
    liveness = StageLiveness(bus, stall_s=10.0, clock=clock)
    parser = bus.consumer([topics.QUERY], group="skbqa-parser")  # joins, then stops taking work
    for i in range(3):
        bus.publish(topics.QUERY, f"r{i}", b"question")
    assert liveness.check() == ""  # work just arrived
    clock.now = 9.0
    assert liveness.check() == ""
    clock.now = 10.5
    reason = liveness.check()
    assert "parser (3 waiting)" in reason and "no live consumer" in reason
    assert b'skbqa_stage_stalled{stage="parser"} 1.0' in get_metrics().render()
    # the stage takes its work again: ready at the next probe
    parser.commit(parser.poll(0.1, max_records=10))
    clock.now = 11.0
    assert liveness.check() == ""
    assert b'skbqa_stage_stalled{stage="parser"} 0.0' in get_metrics().render()


def test_a_stage_slower_than_its_load_is_not_stalled_while_answers_flow(bus: MemoryBus) -> None:
    clock = Clock()
    answered: list[float] = []
    liveness = StageLiveness(
        bus, stall_s=10.0, clock=clock, last_answer=lambda: answered[-1] if answered else None
    )
    symbols = bus.consumer([topics.PARSED], group="skbqa-symbols")
    for step in range(6):
        for i in range(4):
            bus.publish(topics.PARSED, f"r{step}-{i}", b"parsed")
        symbols.commit(symbols.poll(0.1, max_records=3))  # slower than the arrivals (its lag only grows)
        clock.now = step * 4.0
        answered.append(clock.now)  # but answers come back
        assert liveness.check() == "", step
    clock.now += 10.0  # answers stop: the growing lag is a stall now
    assert "stage symbols" in liveness.check()


def test_the_gateway_is_not_ready_while_a_stage_is_stalled(bus: MemoryBus) -> None:
    backend = BusBackend(bus, stall_s=0.2)
    try:
        assert backend.wait_ready(5.0)
        assert backend.probe() == ""
        bus.publish(topics.GROUNDED, "r1", b"grounded")  # nobody consumes skbqa.grounded
        backend.probe()
        deadline = time.monotonic() + 5.0
        while not backend.probe() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert "stage ranking (1 waiting)" in backend.probe()
    finally:
        backend.close()
