"""The client SDK against a scripted gRPC server: retries on UNAVAILABLE only, one request id across a call's
attempts, a deadline that bounds the retries, streams retried before their first event and resumed after it (each
event delivered once), the bearer token on every call, typed results, one idempotency key across the attempts of a
batch of changes — for the blocking and the asyncio client alike."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path

import grpc
import pytest

from skbqa.client import AsyncSkbqaClient, ClientOptions, RemoteAnswer, ServerError, SkbqaClient
from skbqa.common.errors import InvalidInputError
from skbqa.v1 import api_pb2, api_pb2_grpc


class ScriptedServicer(api_pb2_grpc.SkbqaServicer):
    """Fails the first `failures` calls with `code`, then answers; records what each call carried."""

    def __init__(self) -> None:
        self.failures = 0
        self.code = grpc.StatusCode.UNAVAILABLE
        self.request_ids: list[str] = []
        self.tokens: list[str] = []
        self.mid_stream_failures = 0  # streams that fail UNAVAILABLE after their partial answers
        self.partials = 1  # partial answers before the final one
        self.hold = threading.Event()  # cleared: a stream waits after its partial answers until it is set
        self.hold.set()
        self.idempotency_keys: list[str] = []
        self.lock = threading.Lock()

    def _record(self, request: api_pb2.AskRequest, context: grpc.ServicerContext) -> None:
        with self.lock:
            self.request_ids.append(request.request_id)
            self.tokens.append(dict(context.invocation_metadata()).get("authorization", ""))
            failing = self.failures > 0
            self.failures -= failing
        if failing:
            context.abort(self.code, "scripted failure")

    @staticmethod
    def _answer(request: api_pb2.AskRequest, *, partial: bool = False) -> api_pb2.AskResponse:
        return api_pb2.AskResponse(
            request_id=request.request_id,
            question=request.question,
            strategy=request.strategy or "af",
            k=request.k,
            items=[
                api_pb2.AnswerItem(
                    rank=1,
                    node_id=7,
                    name="seven",
                    type="gene",
                    score=0.5,
                    source="grounded",
                    why="because",
                    scores={"vss": 0.5},
                    evidence_json=json.dumps({"triplets": []}),
                )
            ],
            timings_ms={"total": 1.5},
            notes_json=json.dumps({"options": dict(request.options)}),
            partial=partial,
        )

    def Ask(self, request, context):
        self._record(request, context)
        return self._answer(request)

    def AskStream(self, request, context) -> Iterator[api_pb2.AskEvent]:
        self._record(request, context)
        for n in range(self.partials):
            partial = self._answer(request, partial=True)
            partial.timings_ms["partial"] = n  # which one: a resumed stream must deliver each once, in order
            yield api_pb2.AskEvent(partial=partial)
        self.hold.wait(timeout=30)
        with self.lock:
            failing = self.mid_stream_failures > 0
            self.mid_stream_failures -= failing
        if failing:
            context.abort(grpc.StatusCode.UNAVAILABLE, "gone mid-stream")
        yield api_pb2.AskEvent(final=self._answer(request))

    def Explain(self, request, context):
        self._record(request.ask, context)
        return api_pb2.ExplainResponse(answer=self._answer(request.ask), explanation="parsed: answer x:gene")

    def ApplyChanges(self, request_iterator, context):
        changes = list(request_iterator)
        with self.lock:
            metadata = dict(context.invocation_metadata())
            self.idempotency_keys.append(metadata.get("idempotency-key", ""))
            self.tokens.append(metadata.get("authorization", ""))
            failing = self.failures > 0
            self.failures -= failing
        if failing:  # as if the batch was logged and the reply lost: only the key makes the retry safe
            context.abort(self.code, "scripted failure")
        return api_pb2.ApplyChangesResponse(version=4, changes=len(changes), outcome={"nodes added": len(changes)})

    def IndexStatus(self, request, context):
        return api_pb2.IndexStatusResponse(
            index="idx",
            skb_name="demo",
            nodes=3,
            edges=2,
            encoder="e",
            manifest_json='{"a": 1}',
            strategies=["af"],
        )


@pytest.fixture()
def scripted() -> Iterator[tuple[ScriptedServicer, int]]:
    servicer = ScriptedServicer()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    api_pb2_grpc.add_SkbqaServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    yield servicer, port
    server.stop(grace=None)


def _options(port: int, **overrides) -> ClientOptions:
    settings = {"backoff_initial_s": 0.01, "backoff_max_s": 0.05, **overrides}
    return ClientOptions(f"127.0.0.1:{port}", **settings)


def test_unavailable_is_retried_with_the_same_request_id(scripted) -> None:
    servicer, port = scripted
    servicer.failures = 2
    with SkbqaClient(_options(port, token="tok-1")) as client:
        answer = client.ask("which genes?", strategy="af", k=5, options={"alpha": 0.5, "strict": True})
    assert isinstance(answer, RemoteAnswer) and answer.items[0].node_id == 7
    assert answer.items[0].evidence == {"triplets": []} and answer.items[0].scores == {"vss": 0.5}
    assert answer.notes["options"] == {"alpha": "0.5", "strict": "true"}
    assert len(servicer.request_ids) == 3 and len(set(servicer.request_ids)) == 1
    assert answer.request_id == servicer.request_ids[0] and answer.client_ms > 0
    assert servicer.tokens == ["Bearer tok-1"] * 3


def test_other_errors_are_not_retried(scripted) -> None:
    servicer, port = scripted
    servicer.failures, servicer.code = 1, grpc.StatusCode.INVALID_ARGUMENT
    with SkbqaClient(_options(port)) as client, pytest.raises(ServerError) as caught:
        client.ask("q")
    assert caught.value.code == "INVALID_ARGUMENT" and caught.value.bad_input and not caught.value.retryable
    assert caught.value.reason == "scripted failure" and len(servicer.request_ids) == 1


def test_retries_stop_at_the_attempt_budget_and_at_the_deadline(scripted) -> None:
    servicer, port = scripted
    servicer.failures = 100
    with SkbqaClient(_options(port, retries=2)) as client, pytest.raises(ServerError) as caught:
        client.ask("q")
    assert caught.value.code == "UNAVAILABLE" and caught.value.attempts == 3 and len(servicer.request_ids) == 3

    servicer.request_ids.clear()
    options = _options(port, retries=10_000, backoff_initial_s=0.05, backoff_max_s=0.05, deadline_s=0.5)
    started = time.monotonic()
    with SkbqaClient(options) as client, pytest.raises(ServerError):
        client.ask("q")
    assert time.monotonic() - started < 5.0  # bounded by the 0.5 s deadline, not by 10,000 attempts
    assert 1 < len(servicer.request_ids) < 10_000


def test_a_stream_is_retried_before_its_first_event_and_resumed_after(scripted) -> None:
    servicer, port = scripted
    servicer.failures = 1
    with SkbqaClient(_options(port)) as client:
        events = list(client.ask_stream("q", k=3))
        assert [e.kind for e in events] == ["partial", "final"] and events[0].answer.partial
        assert len(servicer.request_ids) == 2

        # failed after its partial answers: asked again under its request id, and the caller sees each event once
        servicer.request_ids.clear()
        servicer.partials, servicer.mid_stream_failures = 2, 1
        events = list(client.ask_stream("q"))
        assert [e.kind for e in events] == ["partial", "partial", "final"]
        assert [e.answer.timings_ms["partial"] for e in events[:2]] == [0, 1]
        assert len(servicer.request_ids) == 2 and len(set(servicer.request_ids)) == 1

        # failing every time: the attempt budget ends it, UNAVAILABLE, and no partial answer came twice
        servicer.request_ids.clear()
        servicer.mid_stream_failures = 10_000
        received = []
        with pytest.raises(ServerError) as caught:
            for event in client.ask_stream("q"):
                received.append(event.kind)
        assert received == ["partial", "partial"] and caught.value.code == "UNAVAILABLE"
        assert len(servicer.request_ids) == client.options.retries + 1
    servicer.request_ids.clear()
    with SkbqaClient(_options(port, retries=0)) as client, pytest.raises(ServerError):
        list(client.ask_stream("q"))
    assert len(servicer.request_ids) == 1  # no retries asked for: a stream under way is not asked again


def test_explain_index_status_and_bad_settings(scripted, tmp_path: Path) -> None:
    _servicer, port = scripted
    with SkbqaClient(_options(port)) as client:
        explained = client.explain("q", k=1)
        assert explained.explanation.startswith("parsed:") and explained.answer.items[0].name == "seven"
        status = client.index_status()
        assert (status.skb_name, status.nodes, status.strategies, status.manifest) == ("demo", 3, ["af"], {"a": 1})
    with pytest.raises(InvalidInputError, match="HOST:PORT"):
        ClientOptions("localhost")
    with pytest.raises(InvalidInputError, match="both a client certificate and its key"):
        ClientOptions("h:1", tls_cert=tmp_path)
    with pytest.raises(InvalidInputError, match="not a file"):
        ClientOptions("h:1", tls_ca=tmp_path / "missing.pem")
    token_file = tmp_path / "token"
    token_file.write_text("\n  secret-token \n")
    options = ClientOptions.from_env("h:1", token=None, retries=1)
    assert options.token is None and options.retries == 1
    from skbqa.client.options import read_token

    assert read_token(token_file) == "secret-token"


def test_the_asyncio_client_retries_and_streams_the_same_way(scripted) -> None:
    servicer, port = scripted
    servicer.failures = 2

    async def run() -> tuple[RemoteAnswer, list[str], list[RemoteAnswer]]:
        async with AsyncSkbqaClient(_options(port, token="tok-2")) as client:
            answer = await client.ask("q", k=2)
            kinds = [event.kind async for event in client.ask_stream("q")]
            many = await asyncio.gather(*(client.ask(f"q{i}") for i in range(8)))
            return answer, kinds, list(many)

    answer, kinds, many = asyncio.run(run())
    assert answer.items[0].node_id == 7 and len(set(servicer.request_ids[:3])) == 1
    assert kinds == ["partial", "final"]
    assert sorted(a.question for a in many) == sorted(f"q{i}" for i in range(8))
    assert set(servicer.tokens) == {"Bearer tok-2"}
    servicer.partials, servicer.mid_stream_failures = 2, 2

    async def resumed() -> list[str]:
        async with AsyncSkbqaClient(_options(port)) as client:
            return [event.kind async for event in client.ask_stream("q")]

    assert asyncio.run(resumed()) == ["partial", "partial", "final"]  # failed twice after its partials: resumed


def test_the_asyncio_client_stops_at_the_deadline(scripted) -> None:
    servicer, port = scripted
    servicer.failures = 10_000

    async def run() -> None:
        options = _options(port, retries=10_000, backoff_initial_s=0.05, backoff_max_s=0.05, deadline_s=0.5)
        async with AsyncSkbqaClient(options) as client:
            await client.ask("q")

    with pytest.raises(ServerError) as caught:
        asyncio.run(run())
    assert caught.value.code in ("UNAVAILABLE", "DEADLINE_EXCEEDED")


def test_apply_changes_keeps_one_idempotency_key_across_its_retries(scripted) -> None:
    servicer, port = scripted
    servicer.failures = 2
    change = {"op": "delete_node", "id": 7}
    with SkbqaClient(_options(port, token="tok-1")) as client:
        applied = client.apply_changes([change, change])
        assert (applied.version, applied.changes, applied.outcome) == (4, 2, {"nodes added": 2})
        assert len(servicer.idempotency_keys) == 3 and set(servicer.idempotency_keys) == {applied.idempotency_key}
        assert len(applied.idempotency_key) == 32 and servicer.tokens == ["Bearer tok-1"] * 3  # and the token
        servicer.failures = 1
        again = client.apply_changes([change], idempotency_key="my-batch-0001")
        assert again.idempotency_key == "my-batch-0001" and servicer.idempotency_keys[3:] == ["my-batch-0001"] * 2
        client.apply_changes([change])  # a new call: a new key
        assert servicer.idempotency_keys[5] not in (applied.idempotency_key, "my-batch-0001")
        for bad in ("", "x" * 129, "tab\there", "caf\u00e9"):
            with pytest.raises(InvalidInputError, match="idempotency key"):
                client.apply_changes([change], idempotency_key=bad)
    assert len(servicer.idempotency_keys) == 6  # a bad key is refused before anything is sent

    servicer.failures = 2

    async def run() -> list[str]:
        async with AsyncSkbqaClient(_options(port)) as client:
            fresh = await client.apply_changes([change])
            given = await client.apply_changes([change], idempotency_key="async-0001")
            return [fresh.idempotency_key, given.idempotency_key]

    fresh, given = asyncio.run(run())
    assert servicer.idempotency_keys[6:] == [fresh] * 3 + ["async-0001"] and given == "async-0001"
