"""Overload and per-client limits on the public API over real gRPC: the real servicer and server, a backend that
holds calls until the test lets them go, so each refusal is checked while the other calls are really in flight —
RESOURCE_EXHAUSTED at once, in one line, and only for the client over its limit."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from skbqa.serving.gateway.limits import ClientLimits
from skbqa.v1 import api_pb2, api_pb2_grpc
from tests.fakes.backends import GatedBackend, start_api

REQUEST = api_pb2.AskRequest(question="which genes are linked to asthma?", k=2)
QUICK_S = 1.0  # "at once": far below the time the held calls take


def bearer(token: str) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {token}"),)


@pytest.fixture
def pool() -> Iterator[ThreadPoolExecutor]:
    with ThreadPoolExecutor(max_workers=16) as executor:
        yield executor


def refused_quickly(stub: api_pb2_grpc.SkbqaStub, metadata: tuple[tuple[str, str], ...] = ()) -> str:
    """Call Ask expecting RESOURCE_EXHAUSTED within QUICK_S; returns the message."""
    started = time.monotonic()
    with pytest.raises(grpc.RpcError) as caught:
        stub.Ask(REQUEST, timeout=20, metadata=metadata)
    seconds = time.monotonic() - started
    assert caught.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, caught.value.details()
    assert seconds < QUICK_S, f"refusal took {seconds:.2f} s"
    details = caught.value.details()
    assert "\n" not in details and "Traceback" not in details
    return str(details)


def hold(pool: ThreadPoolExecutor, stub: api_pb2_grpc.SkbqaStub, metadata=()) -> Future[api_pb2.AskResponse]:
    return pool.submit(stub.Ask, REQUEST, timeout=20, metadata=metadata)


def test_server_overload_is_refused_at_once_while_calls_are_held(pool: ThreadPoolExecutor) -> None:
    backend = GatedBackend()
    running = start_api(backend, max_inflight=2)
    try:
        with grpc.insecure_channel(f"127.0.0.1:{running.port}") as channel:
            stub = api_pb2_grpc.SkbqaStub(channel)
            held = [hold(pool, stub) for _ in range(2)]
            backend.wait_entered(2)
            for _ in range(5):
                assert "too many requests in flight" in refused_quickly(stub)
            # probes still answer while every API slot is taken (spare threads)
            started = time.monotonic()
            reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=5)
            assert reply.status == health_pb2.HealthCheckResponse.SERVING and time.monotonic() - started < QUICK_S
            backend.gate.set()
            assert all([n.node_id for n in f.result(20).items] == [7, 3] for f in held)
            assert stub.Ask(REQUEST, timeout=20).items  # slots are given back
    finally:
        backend.close()
        running.stop(0)


def test_a_client_over_its_concurrency_is_refused_while_another_is_served(pool: ThreadPoolExecutor) -> None:
    backend = GatedBackend()
    running = start_api(
        backend, max_inflight=16, tokens=[b"token-a", b"token-b"], limits=ClientLimits(max_inflight=2)
    )
    try:
        with grpc.insecure_channel(f"127.0.0.1:{running.port}") as channel:
            stub = api_pb2_grpc.SkbqaStub(channel)
            held_a = [hold(pool, stub, bearer("token-a")) for _ in range(2)]
            backend.wait_entered(2)
            message = refused_quickly(stub, bearer("token-a"))
            assert message == "too many calls at once from this client (limit 2); retry with backoff"
            assert "token-a" not in message
            held_b = [hold(pool, stub, bearer("token-b")) for _ in range(2)]  # same address, another client
            backend.wait_entered(2)
            refused_quickly(stub, bearer("token-b"))
            # a wrong token is UNAUTHENTICATED (checked first), not a client of its own
            with pytest.raises(grpc.RpcError) as caught:
                stub.Ask(REQUEST, timeout=5, metadata=bearer("token-c"))
            assert caught.value.code() == grpc.StatusCode.UNAUTHENTICATED
            backend.gate.set()
            assert all(f.result(20).items for f in held_a + held_b)
            assert stub.Ask(REQUEST, timeout=20, metadata=bearer("token-a")).items  # released on completion
    finally:
        backend.close()
        running.stop(0)


def test_streams_hold_a_client_slot_until_they_end(pool: ThreadPoolExecutor) -> None:
    backend = GatedBackend()
    running = start_api(backend, limits=ClientLimits(max_inflight=1))
    try:
        with grpc.insecure_channel(f"127.0.0.1:{running.port}") as channel:
            stub = api_pb2_grpc.SkbqaStub(channel)
            stream = pool.submit(lambda: list(stub.AskStream(REQUEST, timeout=20)))
            backend.wait_entered(1)
            refused_quickly(stub)
            backend.gate.set()
            assert [e.WhichOneof("event") for e in stream.result(20)] == ["final"]
            assert stub.Ask(REQUEST, timeout=20).items
    finally:
        backend.close()
        running.stop(0)


def test_without_tokens_a_client_is_its_address_across_connections(pool: ThreadPoolExecutor) -> None:
    backend = GatedBackend()
    running = start_api(backend, limits=ClientLimits(max_inflight=1))
    try:
        address = f"127.0.0.1:{running.port}"
        # two channels are two connections (two source ports) from one address: one client
        with grpc.insecure_channel(address) as first, grpc.insecure_channel(address) as second:
            held = hold(pool, api_pb2_grpc.SkbqaStub(first))
            backend.wait_entered(1)
            refused_quickly(api_pb2_grpc.SkbqaStub(second), bearer("made-up"))  # a header is not an identity
            backend.gate.set()
            assert held.result(20).items
    finally:
        backend.close()
        running.stop(0)


def test_rate_limit_over_grpc_limits_one_token_and_serves_another() -> None:
    backend = GatedBackend(open_gate=True)
    running = start_api(backend, tokens=[b"token-a", b"token-b"], limits=ClientLimits(rate_per_s=0.2, burst=3))
    try:
        with grpc.insecure_channel(f"127.0.0.1:{running.port}") as channel:
            stub = api_pb2_grpc.SkbqaStub(channel)
            for _ in range(3):
                assert stub.Ask(REQUEST, timeout=20, metadata=bearer("token-a")).items
            message = refused_quickly(stub, bearer("token-a"))
            assert message.startswith("client request rate over its limit (0.2/s, burst 3); retry in ")
            # IndexStatus is an API call too; health is not
            with pytest.raises(grpc.RpcError) as caught:
                stub.IndexStatus(api_pb2.IndexStatusRequest(), timeout=5, metadata=bearer("token-a"))
            assert caught.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            health = health_pb2_grpc.HealthStub(channel)
            for _ in range(10):
                reply = health.Check(health_pb2.HealthCheckRequest(), timeout=5)
                assert reply.status == health_pb2.HealthCheckResponse.SERVING
            assert stub.Ask(REQUEST, timeout=20, metadata=bearer("token-b")).items
    finally:
        backend.close()
        running.stop(0)


def test_refusals_are_counted_without_client_labels() -> None:
    from skbqa.observability.metrics import get_metrics

    backend = GatedBackend(open_gate=True)
    running = start_api(backend, tokens=[b"token-a"], limits=ClientLimits(rate_per_s=0.1, burst=1))
    try:
        with grpc.insecure_channel(f"127.0.0.1:{running.port}") as channel:
            stub = api_pb2_grpc.SkbqaStub(channel)
            assert stub.Ask(REQUEST, timeout=20, metadata=bearer("token-a")).items
            refused_quickly(stub, bearer("token-a"))
    finally:
        backend.close()
        running.stop(0)
    text = get_metrics().render().decode()
    limited = [line for line in text.splitlines() if 'kind="client_limited"' in line]
    # the process-wide registry may also hold stage servers' refusals from earlier tests: every line names a
    # service, never a client, and this gateway's refusal is among them
    assert any('stage="gateway"' in line for line in limited)
    services = "|".join(("gateway", "parser", "symbols", "grounding", "ranking", "reranker"))
    assert all(re.search(rf'{{kind="client_limited",stage="({services})"}}', line) for line in limited)
    assert 'rpc="ask",status="resource_exhausted"' in text  # label values are lower-cased
    assert "token-a" not in text and "token:" not in text and "peer:" not in text  # no identity as a label
