"""Refusals of the public API over real gRPC that quote or judge client input: echoed input is capped at 80
characters (with an ellipsis), every strategy refuses option names it does not read (naming the name), and a call
with more than one `authorization` header is UNAUTHENTICATED."""

from __future__ import annotations

import re
from collections.abc import Iterator

import grpc
import pytest

from skbqa.v1 import api_pb2, api_pb2_grpc
from tests.fakes.backends import GatedBackend, start_api

HUGE = 100_000


@pytest.fixture(scope="module")
def stub() -> Iterator[api_pb2_grpc.SkbqaStub]:
    backend = GatedBackend(open_gate=True)
    running = start_api(backend, tokens=[b"token-a", b"token-b"])
    try:
        with grpc.insecure_channel(f"127.0.0.1:{running.port}") as channel:
            yield api_pb2_grpc.SkbqaStub(channel)
    finally:
        backend.close()
        running.stop(0)


GOOD = (("authorization", "Bearer token-a"),)


def refused(stub: api_pb2_grpc.SkbqaStub, request: api_pb2.AskRequest, metadata=GOOD) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as caught:
        stub.Ask(request, timeout=20, metadata=metadata)
    return caught.value


def longest_run(text: str, char: str) -> int:
    return max((len(run) for run in re.findall(f"{re.escape(char)}+", text)), default=0)


@pytest.mark.parametrize(
    ("fields", "char", "says"),
    [
        ({"strategy": "s" * HUGE}, "s", "unknown strategy"),
        ({"options": {"q" * HUGE: "1"}}, "q", "unknown af option"),
        ({"options": {"alpha": "x" * HUGE}}, "x", "alpha must be within [0, 1]"),
        ({"options": {"reranker": "r" * HUGE}}, "r", "reranker must be one of"),
        ({"options": {"steps": "z" * HUGE}}, "z", "steps must be one of"),
    ],
)
def test_echoed_input_is_capped_at_80_characters(stub, fields, char, says) -> None:
    error = refused(stub, api_pb2.AskRequest(question="which genes?", **fields))
    details = error.details()
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT and says in details
    assert longest_run(details, char) < 80 and "…" in details
    assert len(details) < 400 and "\n" not in details


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"strategy": "bm25", "options": {"bogus": "1"}}, "unknown bm25 option(s): bogus"),
        ({"strategy": "bm25", "options": {"alpha": "0.5"}}, "unknown bm25 option(s): alpha"),
        ({"options": {"": "1"}}, "empty option name"),
        ({"strategy": "bm25", "options": {"": "1"}}, "empty option name"),
        ({"options": {"bogus": "1"}}, "unknown af option(s): bogus"),
    ],
)
def test_every_strategy_refuses_options_it_does_not_read(stub, fields, says) -> None:
    error = refused(stub, api_pb2.AskRequest(question="which genes?", **fields))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert says in error.details()


def test_a_strategy_still_takes_its_own_options(stub) -> None:
    assert stub.Ask(
        api_pb2.AskRequest(question="which genes?", options={"alpha": "0.5"}), timeout=20, metadata=GOOD
    )
    assert stub.Ask(api_pb2.AskRequest(question="which genes?", strategy="bm25"), timeout=20, metadata=GOOD)


@pytest.mark.parametrize(
    "metadata",
    [
        (("authorization", "Bearer token-a"), ("authorization", "Bearer token-b")),
        (("authorization", "Bearer token-a"), ("authorization", "Bearer token-a")),
        (("authorization", "Bearer token-a"), ("authorization", "Bearer wrong")),
    ],
)
def test_more_than_one_authorization_header_is_unauthenticated(stub, metadata) -> None:
    error = refused(stub, api_pb2.AskRequest(question="which genes?"), metadata=metadata)
    assert error.code() == grpc.StatusCode.UNAUTHENTICATED
    assert stub.Ask(api_pb2.AskRequest(question="which genes?"), timeout=20, metadata=GOOD).items
