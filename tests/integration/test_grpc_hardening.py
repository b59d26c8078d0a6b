"""The embedded gRPC server under hostile traffic, over real gRPC on 127.0.0.1 (the real servicer and server, a
backend that holds chosen calls): a flood from one client leaves health checks and other clients served (refused
by its own limit, never by a server-wide one), idle reflection streams cannot take the threads health needs,
malformed protobuf bytes are INVALID_ARGUMENT in one line with no traceback in the log, and an option value too
long to be a number is INVALID_ARGUMENT without quoting it whole. Counts and times are bounded."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from skbqa.common.errors import InvalidInputError
from skbqa.eval.specs import parse_options, parse_value
from skbqa.serving.gateway.backends import Waiter
from skbqa.serving.gateway.limits import ClientLimits
from skbqa.serving.settings import ServiceSettings
from skbqa.serving.stage_service import start_stage_server
from skbqa.serving.stages.core import StageMessage
from skbqa.v1 import api_pb2, api_pb2_grpc, stages_pb2_grpc
from tests.fakes.backends import GatedBackend, GatedStageCore, start_api

QUICK = api_pb2.AskRequest(question="which genes are linked to asthma?", k=2)
HELD = api_pb2.AskRequest(question="hold: which genes are linked to asthma?", k=2)
CLIENT_LIMITED = "too many calls at once from this client"
DEADLINE_S = 20.0  # no call in this file may wait longer


def bearer(token: str) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {token}"),)


class HoldingBackend(GatedBackend):
    """Holds only the questions that start with "hold" until `gate` is set (and counts only those in
    `entered`); answers the others at once."""

    def _answer(self, message: StageMessage, waiter: Waiter) -> None:
        if message.question.startswith("hold"):
            super()._answer(message, waiter)
            return
        self._push_final(message, waiter)


@pytest.fixture
def pool() -> Iterator[ThreadPoolExecutor]:
    with ThreadPoolExecutor(max_workers=8) as executor:
        yield executor


def channel_to(port: int) -> grpc.Channel:
    return grpc.insecure_channel(f"127.0.0.1:{port}")


# ------------------------------------------------------------------------------------------------ floods (#3)


def test_a_flood_from_one_client_leaves_health_and_other_clients_served() -> None:
    """One token fills its quota with held calls, then fires 3,000 more at once over three connections (six
    times the probe's 500; far more than the pool and gRPC core's default queue of waiting calls, which sheds
    calls of every client at random past 1,000); health checks and another token's calls are interleaved with
    the flood. Every health check is SERVING, every other call is answered, and every flood call is refused by the
    flooder's own limit — never by gRPC ("Concurrent RPC limit exceeded!", or CANCELLED by core's queue)."""
    flood_size, every = 3000, 120
    backend = HoldingBackend()
    running = start_api(
        backend, max_inflight=8, tokens=[b"token-a", b"token-b"], limits=ClientLimits(max_inflight=4)
    )
    try:
        with (
            channel_to(running.port) as flood_1,
            channel_to(running.port) as flood_2,
            channel_to(running.port) as flood_3,
            channel_to(running.port) as other,
            channel_to(running.port) as probe,
        ):
            flooders = [api_pb2_grpc.SkbqaStub(channel) for channel in (flood_1, flood_2, flood_3)]
            held = [flooders[0].Ask.future(HELD, timeout=DEADLINE_S, metadata=bearer("token-a")) for _ in range(4)]
            backend.wait_entered(4)
            health = health_pb2_grpc.HealthStub(probe)
            served = api_pb2_grpc.SkbqaStub(other)
            flood_calls, health_calls, other_calls = [], [], []
            for n in range(flood_size):
                flooder = flooders[n % len(flooders)]
                flood_calls.append(flooder.Ask.future(HELD, timeout=DEADLINE_S, metadata=bearer("token-a")))
                if n % every == 0:
                    health_calls.append(health.Check.future(health_pb2.HealthCheckRequest(), timeout=DEADLINE_S))
                    other_calls.append(served.Ask.future(QUICK, timeout=DEADLINE_S, metadata=bearer("token-b")))
            assert len(health_calls) == len(other_calls) == 25
            failed_health = [c.exception().details() for c in health_calls if c.exception() is not None]  # type: ignore[union-attr]
            failed_other = [c.exception().details() for c in other_calls if c.exception() is not None]  # type: ignore[union-attr]
            assert (failed_health, failed_other) == ([], [])
            assert all(c.result().status == health_pb2.HealthCheckResponse.SERVING for c in health_calls)
            assert all(c.result().items for c in other_calls)
            refusals = [call.exception() for call in flood_calls]
            assert all(isinstance(error, grpc.RpcError) for error in refusals)
            messages = {(e.code(), e.details().split(" (")[0]) for e in refusals}  # type: ignore[union-attr]
            assert messages == {(grpc.StatusCode.RESOURCE_EXHAUSTED, CLIENT_LIMITED)}, messages
            backend.gate.set()
            assert all(call.result(DEADLINE_S).items for call in held)
    finally:
        backend.close()
        running.stop(0)


def test_a_client_over_its_quota_is_refused_before_it_takes_a_server_slot(tmp_path: Path) -> None:
    """A stage server (its own in-flight cap, 3) full with client A's 2 calls (its quota) and B's 1: A's next call
    is refused for A's quota, not as a busy server — its excess never held a server slot."""
    tokens = tmp_path / "tokens"
    tokens.write_text("token-a\ntoken-b\n")
    core = GatedStageCore()
    settings = ServiceSettings(
        index=tmp_path, role="parser", port=0, bus_url="memory://", tokens_file=tokens, max_inflight=3
    )
    running = start_stage_server(core, settings, limits=ClientLimits(max_inflight=2))
    running.set_serving(True)
    message = StageMessage(request_id="r-1", question="which genes are linked to asthma?", strategy="af", k=3)
    try:
        with channel_to(running.port) as channel:
            stub = stages_pb2_grpc.StageStub(channel)
            held = [stub.Process.future(message, timeout=DEADLINE_S, metadata=bearer("token-a")) for _ in range(2)]
            held.append(stub.Process.future(message, timeout=DEADLINE_S, metadata=bearer("token-b")))
            core.wait_entered(3)
            with pytest.raises(grpc.RpcError) as caught:
                stub.Process(message, timeout=5, metadata=bearer("token-a"))
            assert caught.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            assert caught.value.details().startswith(CLIENT_LIMITED), caught.value.details()
            core.gate.set()
            assert all(call.result(DEADLINE_S).has_forward for call in held)
    finally:
        core.gate.set()
        running.stop(0)


def test_idle_streams_cannot_starve_health(pool: ThreadPoolExecutor) -> None:
    """Reflection and health Watch are open (no token, no client limit) and long-lived: 12 idle reflection streams
    and 12 open watches on a server with 4 API slots. Health checks and the API still answer at once (a watch
    holds no thread; reflection beyond its own small cap is refused rather than holding one)."""
    backend = GatedBackend(open_gate=True)
    running = start_api(backend, max_inflight=4)
    release = threading.Event()

    def idle_requests() -> Iterator[reflection_pb2.ServerReflectionRequest]:
        yield reflection_pb2.ServerReflectionRequest(list_services="")
        release.wait(DEADLINE_S)

    try:
        with channel_to(running.port) as channel:
            health = health_pb2_grpc.HealthStub(channel)
            watches = [health.Watch(health_pb2.HealthCheckRequest(), timeout=DEADLINE_S) for _ in range(12)]
            assert all(next(w).status == health_pb2.HealthCheckResponse.SERVING for w in watches)
            stub = reflection_pb2_grpc.ServerReflectionStub(channel)
            streams = [stub.ServerReflectionInfo(idle_requests(), timeout=DEADLINE_S) for _ in range(12)]
            outcomes = pool.map(_first_or_code, streams)
            for _ in range(3):
                started = time.monotonic()
                reply = health.Check(health_pb2.HealthCheckRequest(), timeout=5)
                assert reply.status == health_pb2.HealthCheckResponse.SERVING
                assert time.monotonic() - started < 2.0
            assert api_pb2_grpc.SkbqaStub(channel).Ask(QUICK, timeout=5).items  # the API too
            release.set()
            results = list(outcomes)
            assert "answered" in results and grpc.StatusCode.RESOURCE_EXHAUSTED in results, results
            for watch in watches:
                watch.cancel()
    finally:
        release.set()
        backend.close()
        running.stop(0)


def _first_or_code(stream: Iterator[reflection_pb2.ServerReflectionResponse]) -> object:
    try:
        next(iter(stream))
        return "answered"
    except grpc.RpcError as error:
        return error.code()  # type: ignore[attr-defined]


# ------------------------------------------------------------------------------------------------ malformed (#5)


def _ask_bytes(question: bytes) -> bytes:
    """An AskRequest on the wire with `question` as its field 1, whatever the bytes."""
    return bytes([0x0A, len(question)]) + question + bytes([0x18, 0x02])


MALFORMED = {
    "truncated": b"\x0a\x40abc",  # a string field longer than the message
    "bad tag": b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff",
    "not utf-8": _ask_bytes(b"which \xff\xfe genes"),
}


@pytest.mark.parametrize(
    "method", ["/skbqa.v1.Skbqa/Ask", "/skbqa.v1.Skbqa/AskStream", "/grpc.health.v1.Health/Check"]
)
def test_malformed_requests_are_invalid_argument_in_one_line(
    method: str, caplog: pytest.LogCaptureFixture
) -> None:
    backend = GatedBackend(open_gate=True)
    running = start_api(backend, max_inflight=4)
    try:
        with channel_to(running.port) as channel:
            streaming = method.endswith("AskStream")
            call = (channel.unary_stream if streaming else channel.unary_unary)(method)  # raw bytes both ways
            with caplog.at_level(logging.DEBUG):
                for name, data in MALFORMED.items():
                    with pytest.raises(grpc.RpcError) as caught:
                        result = call(data, timeout=5)
                        if streaming:
                            list(result)
                    error = caught.value
                    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT, (name, error.code(), error.details())
                    assert "\n" not in error.details() and len(error.details()) <= 200
            # at most one log line per call, none of them a traceback or at ERROR
            assert len(caplog.records) <= len(MALFORMED), [r.getMessage() for r in caplog.records]
            assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]
            # the server still answers well-formed calls
            assert api_pb2_grpc.SkbqaStub(channel).Ask(QUICK, timeout=5).items
    finally:
        backend.close()
        running.stop(0)


def test_malformed_requests_without_a_token_are_unauthenticated() -> None:
    backend = GatedBackend(open_gate=True)
    running = start_api(backend, max_inflight=4, tokens=[b"token-a"])
    try:
        with channel_to(running.port) as channel:
            call = channel.unary_unary("/skbqa.v1.Skbqa/Ask")
            with pytest.raises(grpc.RpcError) as caught:
                call(MALFORMED["not utf-8"], timeout=5)
            assert caught.value.code() == grpc.StatusCode.UNAUTHENTICATED
            with pytest.raises(grpc.RpcError) as caught:
                call(MALFORMED["not utf-8"], timeout=5, metadata=bearer("token-a"))
            assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    finally:
        backend.close()
        running.stop(0)


# ------------------------------------------------------------------------------------------------ long numbers (#6)


@pytest.mark.parametrize("value", ["9" * 5000, "-" + "1" * 4400, "1" * 5000 + ".5", "\u0663" * 4400])
def test_an_option_value_too_long_for_a_number_is_invalid_argument(value: str) -> None:
    backend = GatedBackend(open_gate=True)
    running = start_api(backend, max_inflight=4)
    try:
        with channel_to(running.port) as channel:
            stub = api_pb2_grpc.SkbqaStub(channel)
            request = api_pb2.AskRequest(question=QUICK.question, strategy="af", options={"steps": value})
            with pytest.raises(grpc.RpcError) as caught:
                stub.Ask(request, timeout=5)
            assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT, caught.value.details()
            details = caught.value.details()
            assert "\n" not in details and len(details) <= 200 and "steps" in details
    finally:
        backend.close()
        running.stop(0)


def test_parse_value_refuses_long_numbers_in_one_clipped_line() -> None:
    assert parse_value("12") == 12 and parse_value("-0.5") == -0.5 and parse_value("1" * 100) == int("1" * 100)
    for raw in ("9" * 5000, "1" * 5000 + "e5"):
        with pytest.raises(InvalidInputError) as caught:
            parse_value(raw)
        assert len(str(caught.value)) <= 200 and "\n" not in str(caught.value)
    with pytest.raises(InvalidInputError) as caught:
        parse_options(["steps=" + "9" * 5000])  # the CLI's --option and strategy specs
    assert "steps" in str(caught.value) and len(str(caught.value)) <= 200
