"""Helpers for tests of the distributed code path in one process: the answers a memory bus carries, the public
API served over a bus backend and its stage workers, and the gateway's measured `Ask` time."""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path

import grpc

from skbqa.bus import topics
from skbqa.bus.memory import MemoryBus
from skbqa.observability.metrics import get_metrics
from skbqa.serving.gateway.bus_backend import BusBackend
from skbqa.serving.stages.core import AnswerEnvelope
from skbqa.serving.worker import StageWorker
from skbqa.v1 import api_pb2_grpc
from tests.fakes.backends import start_api

# Per call, a few statements outside the latency trace (taking the call, returning it) may be preempted on a busy
# machine: the latency-budget tests allow this much beside their 5 %.
LATENCY_SLACK_MS = 2.0


def read_answers(bus: MemoryBus, count: int, timeout_s: float = 5.0) -> list[AnswerEnvelope]:
    """Up to `count` answers from the answer topic, read in a group of their own (waiting at most `timeout_s`)."""
    consumer = bus.consumer([topics.ANSWER], group=f"probe-{uuid.uuid4().hex}")
    found: list[AnswerEnvelope] = []
    deadline = time.monotonic() + timeout_s
    while len(found) < count and time.monotonic() < deadline:
        found += [AnswerEnvelope.FromString(m.value) for m in consumer.poll(0.1, 100)]
    consumer.close()
    return found


@contextlib.contextmanager
def api_over(bus: MemoryBus, workers: Sequence[StageWorker]) -> Iterator[api_pb2_grpc.SkbqaStub]:
    """The real gateway servicer and bus backend on `bus`, with `workers` started; everything stopped after."""
    for worker in workers:
        worker.start()
    backend = BusBackend(bus, poll_timeout_s=0.02, stall_s=0)
    server = start_api(backend)
    try:
        assert backend.wait_ready(10)
        with grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
            yield api_pb2_grpc.SkbqaStub(channel)
    finally:
        server.stop()
        for worker in workers:
            worker.stop()
        backend.close()


def serve_all_in_one(
    index: Path, bus_name: str, colocated: tuple[str, ...] = ()
) -> Iterator[api_pb2_grpc.SkbqaStub]:
    """`--role all` (the gateway and the stage workers in one process, each `colocated` group as one worker) over
    the in-memory bus `bus_name`, as a stub: the distributed code path without processes or a broker."""
    from skbqa.serving.run import start_all_in_one
    from skbqa.serving.settings import ServiceSettings

    settings = ServiceSettings(
        index=index, port=0, role="all", bus_url=f"memory://{bus_name}", colocated=colocated
    )
    running, stop = start_all_in_one(settings)
    try:
        with grpc.insecure_channel(f"127.0.0.1:{running.port}") as channel:
            yield api_pb2_grpc.SkbqaStub(channel)
    finally:
        stop()


def gateway_ask_seconds() -> float:
    """Everything this process's gateway measured end to end for successful `Ask` calls so far."""
    sample = get_metrics().registry.get_sample_value("skbqa_request_seconds_sum", {"rpc": "ask", "status": "ok"})
    return sample or 0.0
