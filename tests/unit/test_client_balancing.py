"""The client on several replicas (`IP:PORT,IP:PORT`): calls go round-robin to every replica, a replica that is
gone or reports NOT_SERVING gets none while another serves, and a call refused by one is retried on another; a
bad list is refused with one line before anything connects (names in a list: test_client_names.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from concurrent import futures

import grpc
import pytest
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from skbqa.client import AsyncSkbqaClient, ClientOptions, SkbqaClient
from skbqa.client.addresses import channel_target
from skbqa.common.errors import InvalidInputError
from skbqa.v1 import api_pb2_grpc
from tests.certs import Certs, make_certs
from tests.unit.test_client_sdk import ScriptedServicer


class Replica:
    def __init__(self, certs: Certs | None = None) -> None:
        self.servicer = ScriptedServicer()
        self.health = health.HealthServicer()
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        api_pb2_grpc.add_SkbqaServicer_to_server(self.servicer, self.server)
        health_pb2_grpc.add_HealthServicer_to_server(self.health, self.server)
        if certs is None:
            self.port = self.server.add_insecure_port("127.0.0.1:0")
        else:
            key_and_cert = (certs.server_key.read_bytes(), certs.server_cert.read_bytes())
            self.port = self.server.add_secure_port("127.0.0.1:0", grpc.ssl_server_credentials([key_and_cert]))
        self.server.start()
        self.serving(True)

    def serving(self, yes: bool) -> None:
        status = health_pb2.HealthCheckResponse.SERVING if yes else health_pb2.HealthCheckResponse.NOT_SERVING
        self.health.set("", status)

    @property
    def calls(self) -> int:
        return len(self.servicer.request_ids)


@pytest.fixture()
def replicas() -> Iterator[list[Replica]]:
    running = [Replica(), Replica()]
    yield running
    for replica in running:
        replica.server.stop(grace=None)


def _client(replicas: list[Replica]) -> SkbqaClient:
    target = ",".join(f"127.0.0.1:{r.port}" for r in replicas)
    return SkbqaClient(ClientOptions(target, backoff_initial_s=0.05, backoff_max_s=0.2, deadline_s=10))


def test_calls_go_to_every_replica(replicas: list[Replica]) -> None:
    with _client(replicas) as client:
        for n in range(20):
            assert client.ask(f"q{n}").items[0].node_id == 7
    assert all(r.calls >= 5 for r in replicas), [r.calls for r in replicas]  # pick_first would give one all 20


def test_the_asyncio_client_balances_the_same_way(replicas: list[Replica]) -> None:
    target = ",".join(f"127.0.0.1:{r.port}" for r in replicas)

    async def ask_all() -> None:
        async with AsyncSkbqaClient(ClientOptions(target, deadline_s=10)) as client:
            for n in range(20):
                await client.ask(f"q{n}")

    asyncio.run(ask_all())
    assert all(r.calls >= 5 for r in replicas), [r.calls for r in replicas]


def test_a_replica_gone_gets_no_calls_and_no_call_fails(replicas: list[Replica]) -> None:
    with _client(replicas) as client:
        for n in range(4):
            client.ask(f"warm {n}")
        replicas[0].server.stop(grace=None)
        before = replicas[1].calls
        for n in range(10):  # each refused attempt is retried, and the balancer picks the live replica
            assert client.ask(f"q{n}").items[0].node_id == 7
        stream = [event.kind for event in client.ask_stream("streamed")]
    assert stream == ["partial", "final"]
    assert replicas[1].calls >= before + 11


def test_a_replica_not_serving_is_left_out_while_the_other_serves(replicas: list[Replica]) -> None:
    replicas[0].serving(False)
    with _client(replicas) as client:
        for n in range(10):
            client.ask(f"q{n}")
        assert replicas[0].calls == 0  # the balancer asked its health, as a Service asks a pod's readiness
        replicas[0].serving(True)
        for n in range(30):
            client.ask(f"again {n}")
            if replicas[0].calls:
                break
    assert replicas[0].calls >= 1  # SERVING again: back in the rotation


def test_tls_over_several_replicas_checks_each_certificate(tmp_path) -> None:
    certs = make_certs(tmp_path)
    running = [Replica(certs), Replica(certs)]
    try:
        target = ",".join(f"127.0.0.1:{r.port}" for r in running)
        # the certificates name localhost and 127.0.0.1: checked against the first address, or --server-name
        for name in (None, "localhost"):
            with SkbqaClient(ClientOptions(target, tls_ca=certs.ca, server_name=name, deadline_s=10)) as client:
                for n in range(6):
                    client.ask(f"q{n}")
        assert all(r.calls >= 4 for r in running), [r.calls for r in running]
    finally:
        for replica in running:
            replica.server.stop(grace=None)


def test_addresses_become_one_grpc_target() -> None:
    assert ClientOptions("gateway.example:443").channel_target == "gateway.example:443"
    both = ClientOptions("127.0.0.1:1, 127.0.0.1:2")
    assert both.addresses == ("127.0.0.1:1", "127.0.0.1:2")
    assert both.channel_target == "ipv4:127.0.0.1:1,127.0.0.1:2"
    assert channel_target(("[::1]:1", "[::1]:2")) == "ipv6:[::1]:1,[::1]:2"
    assert ClientOptions("gw-0.gw:1,gw-1.gw:1").addresses == ("gw-0.gw:1", "gw-1.gw:1")  # resolved by the client
    assert ("grpc.enable_retries", 0) in both.channel_options()  # the client's own retries, not gRPC's too


@pytest.mark.parametrize(
    "target",
    ["a.ex ample:1,b.example:2", "a/b:1,c:2", "127.0.0.1:1,", "127.0.0.1:1,127.0.0.1:x", "::1:5,::1:6"],
)
def test_a_bad_list_is_refused_with_one_line(target: str) -> None:
    with pytest.raises(InvalidInputError) as refused:
        ClientOptions(target)
    assert "\n" not in str(refused.value) and len(str(refused.value)) < 200
