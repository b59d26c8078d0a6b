"""Per-client request limits (server/limits.py) on a stepped clock, the client identity the gateway keys them by
(server/call_guard.py), and the `skbqa serve` flags / SKBQA_* variables that set them."""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass, field
from typing import Any

import pytest

from skbqa.common.errors import InvalidInputError
from skbqa.serving.gateway.call_guard import ClientIdentifier
from skbqa.serving.gateway.limits import ClientLimiter, ClientLimits


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def limiter(**limits: Any) -> tuple[ClientLimiter, Clock]:
    clock = Clock()
    return ClientLimiter(ClientLimits(**limits), clock=clock), clock


def admit_released(lim: ClientLimiter, client: str) -> str | None:
    """One short call: admitted and finished at once (only the rate applies)."""
    refusal = lim.admit(client)
    if refusal is None:
        lim.release(client)
    return refusal


def test_rate_allows_the_burst_then_one_call_per_interval() -> None:
    lim, clock = limiter(rate_per_s=2.0, burst=3)
    assert [admit_released(lim, "a") for _ in range(3)] == [None, None, None]
    refusal = admit_released(lim, "a")
    assert refusal == "client request rate over its limit (2/s, burst 3); retry in 0.50 s"
    clock.now += 0.25  # half a token
    assert admit_released(lim, "a") is not None
    clock.now += 0.25
    assert admit_released(lim, "a") is None
    assert admit_released(lim, "a") is not None


def test_an_idle_client_gets_back_at_most_its_burst() -> None:
    lim, clock = limiter(rate_per_s=10.0, burst=4)
    for _ in range(4):
        assert admit_released(lim, "a") is None
    clock.now += 3600
    outcomes = [admit_released(lim, "a") for _ in range(6)]
    assert outcomes[:4] == [None] * 4 and all(outcomes[4:])


def test_one_client_limited_does_not_limit_another() -> None:
    lim, _ = limiter(rate_per_s=1.0, burst=1)
    assert admit_released(lim, "peer:ipv4:10.0.0.1") is None
    assert admit_released(lim, "peer:ipv4:10.0.0.1") is not None
    assert admit_released(lim, "peer:ipv4:10.0.0.2") is None


def test_concurrent_calls_per_client_are_capped_and_freed_on_release() -> None:
    lim, _ = limiter(max_inflight=2)
    assert lim.admit("a") is None and lim.admit("a") is None
    assert lim.admit("a") == "too many calls at once from this client (limit 2); retry with backoff"
    assert lim.admit("b") is None  # another client is unaffected
    lim.release("a")
    assert lim.inflight("a") == 1 and lim.admit("a") is None


def test_a_call_refused_for_concurrency_spends_no_rate_budget() -> None:
    lim, _ = limiter(rate_per_s=1.0, burst=2, max_inflight=1)
    assert lim.admit("a") is None  # one token left
    for _ in range(5):
        assert lim.admit("a") is not None  # concurrency refusals
    lim.release("a")
    assert lim.admit("a") is None  # the second token was still there


def test_default_burst_is_one_second_of_rate() -> None:
    assert ClientLimits(rate_per_s=2.5).bucket_size == 3 and ClientLimits(rate_per_s=0.2).bucket_size == 1
    lim, _ = limiter(rate_per_s=2.5)
    assert [admit_released(lim, "a") is None for _ in range(4)] == [True, True, True, False]


def test_the_client_table_is_bounded_but_keeps_clients_with_calls_in_flight() -> None:
    lim, _ = limiter(max_inflight=1, max_clients=3)
    assert lim.admit("busy") is None  # not released
    for n in range(50):
        admit_released(lim, f"c{n}")
    assert len(lim) <= 3
    assert lim.inflight("busy") == 1 and lim.admit("busy") is not None


@pytest.mark.parametrize(
    "bad",
    [
        {"rate_per_s": -1.0},
        {"rate_per_s": math.nan},
        {"rate_per_s": math.inf},
        {"burst": -1},
        {"max_inflight": -2},
        {"max_clients": 0},
    ],
)
def test_bad_limits_are_refused_with_one_line(bad: dict[str, Any]) -> None:
    with pytest.raises(InvalidInputError) as caught:
        ClientLimiter(ClientLimits(**bad))
    assert "\n" not in str(caught.value)


def test_limits_are_off_by_default() -> None:
    assert not ClientLimits().enabled
    assert ClientLimits(rate_per_s=1).enabled and ClientLimits(max_inflight=1).enabled


# --- who is a client ----------------------------------------------------------------------------------------------


@dataclass
class FakeContext:
    peer_text: str = "ipv4:10.1.2.3:51234"
    metadata: tuple[tuple[str, str], ...] = ()
    auth: dict[str, list[bytes]] = field(default_factory=dict)

    def peer(self) -> str:
        return self.peer_text

    def invocation_metadata(self) -> tuple[tuple[str, str], ...]:
        return self.metadata

    def auth_context(self) -> dict[str, list[bytes]]:
        return self.auth


TOKEN = "s3cret-token-value"


def test_with_tokens_a_client_is_its_token_hashed_never_the_token() -> None:
    identify = ClientIdentifier(tokens_on=True)
    bearer = (("authorization", f"Bearer {TOKEN}"),)
    one = identify(FakeContext(metadata=bearer))  # type: ignore[arg-type]
    again = identify(FakeContext(peer_text="ipv4:10.9.9.9:1", metadata=bearer))  # type: ignore[arg-type]
    other = identify(FakeContext(metadata=(("authorization", "Bearer another"),)))  # type: ignore[arg-type]
    assert one == again != other  # the token, not the address
    assert one.startswith("token:") and TOKEN not in one and "s3cret" not in one
    # another process (another salt) gives another hash: nothing to correlate across restarts or logs
    assert ClientIdentifier(tokens_on=True)(FakeContext(metadata=bearer)) != one  # type: ignore[arg-type]


def test_without_tokens_the_header_is_ignored_and_the_address_counts() -> None:
    identify = ClientIdentifier(tokens_on=False)
    # a made-up header per call must not make a new client per call
    a = identify(FakeContext(metadata=(("authorization", "Bearer x1"),)))  # type: ignore[arg-type]
    b = identify(FakeContext(peer_text="ipv4:10.1.2.3:60000", metadata=(("authorization", "Bearer x2"),)))  # type: ignore[arg-type]
    assert a == b == "peer:ipv4:10.1.2.3"  # the port (one per connection) is dropped
    assert identify(FakeContext(peer_text="ipv6:[::1]:443")) == "peer:ipv6:[::1]"  # type: ignore[arg-type]


def test_the_token_a_call_was_admitted_with_is_the_client() -> None:
    from skbqa.serving.security import AuthenticatedContext

    identify = ClientIdentifier(tokens_on=False)  # as the servicer's own identifier is built
    admitted = AuthenticatedContext(FakeContext(), TOKEN.encode())  # type: ignore[arg-type]
    elsewhere = AuthenticatedContext(FakeContext(peer_text="ipv4:10.9.9.9:1"), TOKEN.encode())  # type: ignore[arg-type]
    other = AuthenticatedContext(FakeContext(), b"another")  # type: ignore[arg-type]
    assert identify(admitted) == identify(elsewhere) != identify(other)  # type: ignore[arg-type]
    assert identify(admitted).startswith("token:") and TOKEN not in identify(admitted)  # type: ignore[arg-type]
    # the checked token wins over an address or a certificate; an unchecked header never counts
    assert identify(FakeContext(metadata=(("authorization", f"Bearer {TOKEN}"),))) == "peer:ipv4:10.1.2.3"  # type: ignore[arg-type]


def test_a_client_certificate_subject_is_the_client_under_mtls() -> None:
    identify = ClientIdentifier(tokens_on=False)
    context = FakeContext(auth={"x509_subject": [b"CN=team-a"], "transport_security_type": [b"ssl"]})
    assert identify(context) == "cert:CN=team-a"  # type: ignore[arg-type]


# --- configuration ------------------------------------------------------------------------------------------------


def serve_args(*argv: str) -> argparse.Namespace:
    from skbqa.cli.main import _parser

    return _parser().parse_args(["serve", "--index", "x", *argv])


def test_serve_flags_and_environment_set_the_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    from skbqa.cli.serve import limits_from_args

    for name in ("CLIENT_RATE", "CLIENT_BURST", "CLIENT_MAX_INFLIGHT"):
        monkeypatch.delenv(f"SKBQA_{name}", raising=False)
    assert limits_from_args(serve_args()) == ClientLimits()
    monkeypatch.setenv("SKBQA_CLIENT_RATE", "5")
    monkeypatch.setenv("SKBQA_CLIENT_MAX_INFLIGHT", "3")
    assert limits_from_args(serve_args()) == ClientLimits(rate_per_s=5.0, max_inflight=3)
    flags = serve_args("--client-rate", "0.5", "--client-burst", "4", "--client-max-inflight", "1")
    assert limits_from_args(flags) == ClientLimits(rate_per_s=0.5, burst=4, max_inflight=1)  # flags win
    monkeypatch.setenv("SKBQA_CLIENT_BURST", "many")
    with pytest.raises(InvalidInputError, match="bad client limit"):
        limits_from_args(serve_args())
    monkeypatch.delenv("SKBQA_CLIENT_BURST")
    with pytest.raises(InvalidInputError, match="must be a number >= 0"):
        limits_from_args(serve_args("--client-rate", "-3"))
