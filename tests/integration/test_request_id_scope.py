"""Idempotent retries by `request_id` over real gRPC: an id is the caller's own (scoped to the client identity the
per-client limits use), bound to the request it was first used for, validated before any cached answer is
served, and never a way to reach another caller's answers — not from the cache, and not while both calls are
in flight on the bus. The answer cache is bounded in bytes."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import grpc
import pytest

from skbqa.bus import topics
from skbqa.bus.memory import MemoryBus
from skbqa.serving.gateway.bus_backend import BusBackend
from skbqa.serving.grpc_server import RunningServer, start_server
from skbqa.serving.stages.core import AnswerEnvelope, StageMessage
from skbqa.v1 import api_pb2, api_pb2_grpc
from tests.fakes.backends import GatedBackend, start_api

TOKENS = [b"token-a", b"token-b"]


def bearer(token: str) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {token}"),)


def ask(question: str, request_id: str, **fields: Any) -> api_pb2.AskRequest:
    return api_pb2.AskRequest(question=question, request_id=request_id, **{"k": 2, **fields})


class CountingBackend(GatedBackend):
    """Answers at once; counts the requests that reached it (a cache hit does not)."""

    def __init__(self, items: tuple[int, ...] = (7, 3)) -> None:
        super().__init__(items, open_gate=True)
        self.submitted = 0

    def submit(self, message: StageMessage, timeout_s: float | None = None) -> Any:
        self.submitted += 1
        return super().submit(message, timeout_s)


@pytest.fixture
def api() -> Iterator[tuple[api_pb2_grpc.SkbqaStub, CountingBackend]]:
    backend = CountingBackend()
    running = start_api(backend, tokens=list(TOKENS))
    try:
        with grpc.insecure_channel(f"127.0.0.1:{running.port}") as channel:
            yield api_pb2_grpc.SkbqaStub(channel), backend
    finally:
        backend.close()
        running.stop(0)


def test_another_client_reusing_a_request_id_gets_its_own_answer(api) -> None:
    stub, backend = api
    first = stub.Ask(ask("private question of a", "shared-id"), timeout=20, metadata=bearer("token-a"))
    assert first.question == "private question of a" and first.request_id == "shared-id"
    # b reuses a's id: b's own question is answered, a's question and answers are not served to b
    other = stub.Ask(ask("question of b", "shared-id"), timeout=20, metadata=bearer("token-b"))
    assert other.question == "question of b" and other.request_id == "shared-id"
    assert backend.submitted == 2
    # b answers first under an id a will use later: a is not given b's planted answer
    planted = stub.Ask(ask("planted by b", "next-id"), timeout=20, metadata=bearer("token-b"))
    assert planted.question == "planted by b"
    real = stub.Ask(ask("real question of a", "next-id"), timeout=20, metadata=bearer("token-a"))
    assert real.question == "real question of a"
    # a's own retry is still answered once, from the cache
    submitted = backend.submitted
    assert stub.Ask(ask("private question of a", "shared-id"), timeout=20, metadata=bearer("token-a")) == first
    assert backend.submitted == submitted


def test_a_request_id_reused_for_a_different_request_is_refused(api) -> None:
    stub, _ = api
    first = stub.Ask(ask("which genes?", "r-1"), timeout=20, metadata=bearer("token-a"))
    for changed in (
        ask("which proteins?", "r-1"),
        ask("which genes?", "r-1", k=3),
        ask("which genes?", "r-1", strategy="bm25"),
        ask("which genes?", "r-1", options={"alpha": "0.5"}),
    ):
        with pytest.raises(grpc.RpcError) as caught:
            stub.Ask(changed, timeout=20, metadata=bearer("token-a"))
        assert caught.value.code() == grpc.StatusCode.ALREADY_EXISTS
        details = caught.value.details()
        assert "request_id" in details and "different request" in details and "\n" not in details
        assert "which genes" not in details  # nothing of the earlier request is told
    assert stub.Ask(ask("which genes?", "r-1"), timeout=20, metadata=bearer("token-a")) == first


def test_a_request_is_validated_before_a_cached_answer_is_served(api) -> None:
    stub, _ = api
    stub.Ask(ask("which genes?", "v-1"), timeout=20, metadata=bearer("token-a"))
    for bad in (ask("which genes?", "v-1", strategy="nope"), ask("which genes?", "v-1", k=5000)):
        with pytest.raises(grpc.RpcError) as caught:
            stub.Ask(bad, timeout=20, metadata=bearer("token-a"))
        assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT


class BusEcho:
    """Stands in for the stages behind a gateway's bus: once `hold` requests have arrived, answers each with its
    own question (and nothing else), addressed as the stages address answers."""

    def __init__(self, bus: MemoryBus, hold: int) -> None:
        self._bus = bus
        self._hold = hold
        self._consumer = bus.consumer([topics.QUERY], group="echo")
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        held: list[StageMessage] = []
        while not self._stop.is_set():
            for record in self._consumer.poll(0.05):
                held.append(StageMessage.FromString(record.value))
            if len(held) >= self._hold:
                for message in held:
                    response = api_pb2.AskResponse(request_id=message.request_id, question=message.question)
                    envelope = AnswerEnvelope(
                        request_id=message.request_id,
                        kind=AnswerEnvelope.FINAL,
                        stage="echo",
                        answer=response.SerializeToString(),
                        gateway_id=message.gateway_id,
                    )
                    self._bus.publish(topics.ANSWER, message.request_id, envelope.SerializeToString())
                held = []

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self._consumer.close()


def bus_api(bus: MemoryBus) -> tuple[RunningServer, BusBackend]:
    from skbqa.serving.gateway.api import SkbqaServicer

    backend = BusBackend(bus, gateway_id="gw-test")
    assert backend.wait_ready(5)
    servicer = SkbqaServicer(
        backend, strategies=["af"], default_strategy="af", status=api_pb2.IndexStatusResponse(), gateway_id="gw"
    )
    running = start_server(
        [(api_pb2_grpc.add_SkbqaServicer_to_server, servicer, "skbqa.v1.Skbqa")], tokens=list(TOKENS)
    )
    running.set_serving(True)
    return running, backend


def test_callers_in_flight_with_one_request_id_on_the_bus_get_their_own_answers() -> None:
    bus = MemoryBus()
    echo = BusEcho(bus, hold=2)  # both calls are in flight before either is answered
    running, backend = bus_api(bus)
    try:
        with grpc.insecure_channel(f"127.0.0.1:{running.port}") as channel, ThreadPoolExecutor(2) as pool:
            stub = api_pb2_grpc.SkbqaStub(channel)
            calls = {
                token: pool.submit(
                    stub.Ask, ask(f"question of {token}", "same-id"), timeout=8, metadata=bearer(token)
                )
                for token in ("token-a", "token-b")
            }
            for token, call in calls.items():
                response = call.result(20)
                assert response.question == f"question of {token}" and response.request_id == "same-id"
    finally:
        running.stop(0)
        echo.close()
        backend.close()
        bus.close()


def test_the_answer_cache_is_bounded_in_bytes_and_forgets_the_oldest_first() -> None:
    from skbqa.serving.gateway.api import SkbqaServicer

    backend = CountingBackend(items=tuple(range(1000)))  # about 8 KB per answer
    servicer = SkbqaServicer(
        backend,
        strategies=["af"],
        default_strategy="af",
        status=api_pb2.IndexStatusResponse(),
        answer_cache_bytes=64 * 1024,
    )
    running = start_server([(api_pb2_grpc.add_SkbqaServicer_to_server, servicer, "skbqa.v1.Skbqa")])
    running.set_serving(True)
    try:
        with grpc.insecure_channel(f"127.0.0.1:{running.port}") as channel:
            stub = api_pb2_grpc.SkbqaStub(channel)
            for n in range(40):
                stub.Ask(ask(f"question {n}", f"id-{n}"), timeout=20)
            assert servicer.answer_cache_bytes() <= 64 * 1024
            submitted = backend.submitted
            stub.Ask(ask("question 39", "id-39"), timeout=20)  # the newest: still cached
            assert backend.submitted == submitted
            stub.Ask(ask("question 0", "id-0"), timeout=20)  # the oldest: evicted, answered again
            assert backend.submitted == submitted + 1
    finally:
        backend.close()
        running.stop(0)


def test_a_request_id_in_flight_is_not_taken_by_a_different_request() -> None:
    backend = GatedBackend()  # holds every call until the gate opens
    running = start_api(backend, tokens=list(TOKENS))
    try:
        with grpc.insecure_channel(f"127.0.0.1:{running.port}") as channel, ThreadPoolExecutor(2) as pool:
            stub = api_pb2_grpc.SkbqaStub(channel)
            held = pool.submit(stub.Ask, ask("first question", "busy-id"), timeout=20, metadata=bearer("token-a"))
            backend.wait_entered(1)
            with pytest.raises(grpc.RpcError) as caught:
                stub.Ask(ask("second question", "busy-id"), timeout=20, metadata=bearer("token-a"))
            assert caught.value.code() == grpc.StatusCode.ALREADY_EXISTS
            # another client's call with the same id is its own call
            other = pool.submit(stub.Ask, ask("question of b", "busy-id"), timeout=20, metadata=bearer("token-b"))
            backend.wait_entered(1)
            backend.gate.set()
            assert held.result(20).question == "first question"
            assert other.result(20).question == "question of b"
    finally:
        backend.close()
        running.stop(0)
