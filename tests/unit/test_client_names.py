"""Host names in a list of server addresses (`localhost:P,localhost:Q`, `gateway-0.gw:50051,gateway-1.gw:50051`):
resolved by the client into gRPC's static list, IPv4 and IPv6 together, resolved again when calls fail or the
names move (a new channel, calls under way on the old one finish there), a name that does not resolve a clear
one-line error; and a stream whose replica dies after its first event, resumed on the other replica."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from skbqa.client import AsyncSkbqaClient, ClientOptions, SkbqaClient
from skbqa.client import channels as channels_module
from skbqa.client.addresses import channel_target, has_names
from skbqa.client.channels import Channels
from skbqa.client.errors import UnresolvedNameError
from skbqa.client.resolver import resolve
from skbqa.common.errors import InvalidInputError
from tests.unit.test_client_balancing import Replica


@pytest.fixture()
def replicas() -> Iterator[list[Replica]]:
    running = [Replica(), Replica()]
    yield running
    for replica in running:
        replica.servicer.hold.set()
        replica.server.stop(grace=None)


class FakeDns:
    """Names → (ip, port) answers, changed by the test; counts the lookups."""

    def __init__(self, answers: dict[str, list[tuple[str, int]]]) -> None:
        self.answers = answers
        self.lookups = 0

    def __call__(self, host: str, port: int) -> list[tuple[str, int]]:
        self.lookups += 1
        if host not in self.answers:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return self.answers[host]


def _options(target: str, **overrides: Any) -> ClientOptions:
    return ClientOptions(
        target, **{"backoff_initial_s": 0.05, "backoff_max_s": 0.2, "deadline_s": 10, **overrides}
    )


def test_a_list_of_names_reaches_every_replica(replicas: list[Replica]) -> None:
    target = ",".join(f"localhost:{r.port}" for r in replicas)  # /etc/hosts: localhost is 127.0.0.1
    with SkbqaClient(_options(target)) as client:
        for n in range(20):
            assert client.ask(f"q{n}").items[0].node_id == 7
        assert [e.kind for e in client.ask_stream("streamed")] == ["partial", "final"]

    async def ask_all() -> None:
        async with AsyncSkbqaClient(_options(target)) as client:
            for n in range(20):
                await client.ask(f"async q{n}")

    asyncio.run(ask_all())
    assert all(r.calls >= 10 for r in replicas), [r.calls for r in replicas]  # round robin over both


def test_ipv4_and_ipv6_mix_in_one_list(replicas: list[Replica]) -> None:
    assert channel_target(("127.0.0.1:1", "[::1]:2")) == "ipv6:[::ffff:127.0.0.1]:1,[::1]:2"
    assert channel_target(("127.0.0.1:1", "10.0.0.2:2")) == "ipv4:127.0.0.1:1,10.0.0.2:2"
    dns = FakeDns({"gw.test": [("127.0.0.1", 1), ("::1", 1)], "other.test": [("127.0.0.1", 1)]})
    assert resolve(("gw.test:1", "other.test:1", "[::1]:3"), dns) == ("127.0.0.1:1", "[::1]:1", "[::1]:3")
    # a name with an IPv4 and an IPv6 address, the replica listening on IPv4 only: answered over IPv4
    dns = FakeDns({"gw.test": [("::1", replicas[0].port), ("127.0.0.1", replicas[0].port)]})
    with SkbqaClient(_options(f"gw.test:{replicas[0].port},[::1]:{replicas[1].port}"), lookup=dns) as client:
        for n in range(4):
            assert client.ask(f"q{n}").items[0].node_id == 7
    assert replicas[0].calls == 4


def test_a_name_that_does_not_resolve_is_one_clear_line(replicas: list[Replica]) -> None:
    dns = FakeDns({"gw-0.test": [("127.0.0.1", replicas[0].port)]})
    # one name of two resolves (a pod not ready has no record yet): the calls go to the one there is
    with SkbqaClient(_options(f"gw-0.test:{replicas[0].port},gw-1.test:1"), lookup=dns) as client:
        assert client.ask("q").items[0].node_id == 7
    with (
        SkbqaClient(_options("gw-1.test:1,gw-2.test:1", deadline_s=5, retries=2), lookup=dns) as client,
        pytest.raises(UnresolvedNameError) as refused,
    ):
        client.ask("q")
    error = refused.value
    assert error.code == "UNAVAILABLE" and error.bad_input and error.attempts == 3  # retried, then given up
    assert "gw-1.test" in str(error) and "Name or service not known" in str(error) and "\n" not in str(error)
    with pytest.raises(InvalidInputError) as long_name:
        ClientOptions("a" * 10_000 + ":1,b:2")
    assert len(str(long_name.value)) < 200  # never an echo of the whole input


def test_the_cli_exits_2_with_one_line_for_names_that_do_not_resolve(capsys: pytest.CaptureFixture[str]) -> None:
    from skbqa.cli.main import main

    for target in ("nosuch-0.invalid:50051,nosuch-1.invalid:50051", "nosuch.invalid:50051"):
        assert main(["ask", "--server", target, "q", "--deadline", "5", "--retries", "1"]) == 2
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and "resolve" in err and "nosuch" in err, err


def test_names_that_move_get_a_new_channel_and_calls_under_way_finish(
    replicas: list[Replica], monkeypatch: pytest.MonkeyPatch
) -> None:
    old, new = replicas
    dns = FakeDns({"gw-0.test": [("127.0.0.1", old.port)], "gw-1.test": [("127.0.0.1", old.port)]})
    monkeypatch.setattr(channels_module, "RESOLVE_EVERY_S", 0.0)  # every call resolves again, in the background
    with SkbqaClient(_options("gw-0.test:1,gw-1.test:1"), lookup=dns) as client:
        assert client.ask("first").items[0].node_id == 7 and old.calls == 1
        old.servicer.hold.clear()
        stream = client.ask_stream("under way")
        assert next(stream).kind == "partial"  # a stream on the old channel, waiting for its final answer
        dns.answers = {"gw-0.test": [("127.0.0.1", new.port)], "gw-1.test": [("127.0.0.1", new.port)]}
        for n in range(50):  # a resolution started by one call is taken by a later one
            client.ask(f"moved {n}")
            if new.calls:
                break
        assert new.calls >= 1 and client._channels.addresses == (f"127.0.0.1:{new.port}",)
        old.servicer.hold.set()
        assert [e.kind for e in stream] == ["final"]  # the old channel stayed open for it


def test_every_call_failing_resolves_again_at_once(replicas: list[Replica]) -> None:
    old, new = replicas
    dns = FakeDns({"gw-0.test": [("127.0.0.1", old.port)], "gw-1.test": [("127.0.0.1", old.port)]})
    with SkbqaClient(_options("gw-0.test:1,gw-1.test:1", retries=50), lookup=dns) as client:
        client.ask("first")
        old.server.stop(grace=None)  # the replicas were replaced: the names point elsewhere now
        dns.answers = {"gw-0.test": [("127.0.0.1", new.port)], "gw-1.test": [("127.0.0.1", new.port)]}
        assert client.ask("after the move").items[0].node_id == 7  # UNAVAILABLE, resolved again, retried
    assert new.calls == 1 and dns.lookups >= 4


def test_a_stream_whose_replica_dies_after_its_first_event_is_resumed_on_the_other(
    replicas: list[Replica],
) -> None:
    for replica in replicas:
        replica.servicer.hold.clear()
    target = ",".join(f"localhost:{r.port}" for r in replicas)
    with SkbqaClient(_options(target)) as client:
        stream = client.ask_stream("q", request_id="resumed-1")
        first = next(stream)
        dying = next(r for r in replicas if r.calls)
        survivor = next(r for r in replicas if r is not dying)
        survivor.servicer.hold.set()
        killed = time.monotonic()
        threading.Thread(target=dying.server.stop, args=(None,), daemon=True).start()
        rest = list(stream)
        failover_s = time.monotonic() - killed
    assert first.kind == "partial" and [e.kind for e in rest] == ["final"]  # the partial not delivered twice
    assert survivor.servicer.request_ids == ["resumed-1"]  # asked again under its own request id
    assert rest[0].answer.request_id == "resumed-1"
    print(f"stream resumed on the other replica {failover_s * 1000:.0f} ms after the kill")


def test_a_retired_channel_closes_after_its_last_call() -> None:
    opened: list[str] = []

    def open_channel(target: str) -> tuple[Any, Any, Any]:
        opened.append(target)
        return target, target, target

    dns = FakeDns({"a.test": [("10.0.0.1", 1)], "b.test": [("10.0.0.2", 1)]})
    channels = Channels(("a.test:1", "b.test:1"), open_channel, lookup=dns)
    assert has_names(("a.test:1", "b.test:1")) and opened == []  # nothing resolved before the first call
    pending = channels.begin()
    assert pending is not None and pending.result(timeout=5)
    held = channels.lease()
    assert held.channel == "ipv4:10.0.0.1:1,10.0.0.2:1"
    dns.answers["b.test"] = [("10.0.0.3", 1)]
    channels._resolved_at = float("-inf")  # as if RESOLVE_EVERY_S had passed
    background = channels.begin()
    assert background is None  # a channel is there: the resolution runs without the call waiting
    while channels._resolving is not None and not channels._resolving.done():
        time.sleep(0.01)
    second = channels.lease()
    assert second.channel == "ipv4:10.0.0.1:1,10.0.0.3:1"
    assert channels.end(second, unavailable=False) == []
    assert channels.end(held, unavailable=False) == ["ipv4:10.0.0.1:1,10.0.0.2:1"]  # its last call ended
    dns.answers = {}
    channels._resolved_at = float("-inf")
    channels.begin()
    while channels._resolving is not None and not channels._resolving.done():
        time.sleep(0.01)
    assert (
        channels.lease().channel == "ipv4:10.0.0.1:1,10.0.0.3:1"
    )  # resolving failed: the addresses there were stay
