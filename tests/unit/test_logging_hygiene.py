"""No question text and no secret in the logs at INFO.

Requests run through the embedded engine with every strategy, an LLM configured from the environment
(`SKBQA_LLM_*`, the API key as a Secret would provide it) and the LLM failing in every way the client knows
(5xx with retries, 4xx, a malformed body, no choices, a timeout-like drop, and an endpoint whose error message
quotes the prompt back, as content filters and validating proxies do). Every log record at INFO and above is
captured; neither the question (a distinctive marker inside it) nor the API key may appear in any of them, in
their arguments or in a formatted traceback.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from skbqa.engine.embedded import EmbeddedEngine
from skbqa.ingest.builder import ingest
from skbqa.models.openai_chat import OpenAIChatModel
from skbqa.stores.index import open_index
from tests.fakes.openai_server import FakeOpenAIServer, Fault, running_server
from tests.helpers import HashingEncoder, write_bundle

MARKER = "zqxjv7731"  # appears nowhere but in the question
QUESTION = f"Which papers did Ada Lovelace write about chemistry {MARKER}?"
API_KEY = "sk-live-4f9c2e7d1b8a6053e4d2c1b0a9f8e7d6"
STRATEGIES = ("af", "spark", "bm25", "vss", "hybrid")


@pytest.fixture
def index(tmp_path: Path) -> Path:
    ingest(write_bundle(tmp_path / "bundle"), tmp_path / "index", HashingEncoder(), progress=False)
    return tmp_path / "index"


def engine_from_env(index: Path, url: str, monkeypatch: pytest.MonkeyPatch) -> EmbeddedEngine:
    monkeypatch.setenv("SKBQA_LLM_URL", url)
    monkeypatch.setenv("SKBQA_LLM_MODEL", "test-model")
    monkeypatch.setenv("SKBQA_LLM_API_KEY", API_KEY)
    monkeypatch.setenv("SKBQA_LLM_RETRIES", "1")
    monkeypatch.setenv("SKBQA_LLM_TIMEOUT", "5")
    chat = OpenAIChatModel.from_env(backoff=0.0, backoff_max=0.0)
    assert API_KEY not in repr(chat)
    return EmbeddedEngine(open_index(index), HashingEncoder(), chat=chat)


def assert_clean(caplog: pytest.LogCaptureFixture) -> None:
    assert caplog.records, "the run logged nothing at all: the capture is not working"
    for record in caplog.records:
        shown = [record.getMessage(), repr(record.args), record.exc_text or "", str(record.__dict__)]
        for text in shown:
            assert MARKER not in text, f"question text logged by {record.name}: {record.getMessage()}"
            assert API_KEY not in text, f"API key logged by {record.name}: {record.getMessage()}"
    assert MARKER not in caplog.text and API_KEY not in caplog.text


def ask_all(engine: EmbeddedEngine) -> None:
    for strategy in STRATEGIES:
        result = engine.ask(QUESTION, strategy=strategy, k=3)
        assert result.question == QUESTION  # the caller gets its question back; only the logs must not


CYPHER = "MATCH (p:paper)-[:written_by]->(a:author {name: 'Ada Lovelace'}) RETURN p"
PLAN = json.dumps({"steps": [{"id": "s", "search": "chemistry", "type": "paper"}], "answer": "s"})


def test_requests_through_the_engine_log_no_question_and_no_key(
    index: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    with running_server(default_reply=CYPHER) as server:
        server.reply('"steps"', reply=PLAN)
        engine = engine_from_env(index, server.url, monkeypatch)
        caplog.set_level(logging.INFO)
        logging.getLogger("skbqa").info("capture check")  # proves INFO records from skbqa are captured
        ask_all(engine)  # the happy path: LLM parser, SPARK planner
        for fault in (
            Fault("status", 503),  # retried, logged at WARNING
            Fault("status", 429, retry_after="0"),
            Fault("status", 400),  # not retried: LlmError, fallback
            Fault("status", 401),
            Fault("malformed"),
            Fault("no_choices"),
            Fault("null_content"),
            Fault("drop"),
        ):
            for strategy in ("af", "spark"):
                server.fail_next(fault, fault)  # both attempts of one call
                engine.ask(QUESTION, strategy=strategy, k=3)
        authorizations = {r.headers.get("Authorization") for r in server.received}
    assert authorizations == {f"Bearer {API_KEY}"}  # the key was really in use
    assert any(r.levelno >= logging.WARNING for r in caplog.records), "the failures were logged"
    assert_clean(caplog)


class EchoingEndpoint(BaseHTTPRequestHandler):
    """An endpoint that refuses every request and quotes the prompt's end in its error, as content filters and
    schema-validating proxies do."""

    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        last = str(body["messages"][-1]["content"])[-150:]
        payload = json.dumps({"error": {"message": f"content filter triggered on: {last}"}}).encode()
        self.send_response(400)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


@pytest.fixture
def echoing_endpoint() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), EchoingEndpoint)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def test_an_endpoint_quoting_the_prompt_in_its_errors_does_not_leak_it_into_logs(
    index: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, echoing_endpoint: str
) -> None:
    engine = engine_from_env(index, echoing_endpoint, monkeypatch)
    caplog.set_level(logging.INFO)
    for strategy in ("af", "spark"):
        result = engine.ask(QUESTION, strategy=strategy, k=3)
        assert result.items  # answered by the fallback
    assert any("LLM" in r.getMessage() or "llm" in r.getMessage().lower() for r in caplog.records)
    assert_clean(caplog)


def test_the_fake_server_fixture_records_what_it_is_sent() -> None:
    """The check above relies on the fake server recording headers (a regression there would hide a leak)."""
    with running_server(default_reply="x") as server:
        OpenAIChatModel(server.url, "m", api_key="k").chat([])
        assert isinstance(server, FakeOpenAIServer) and server.received[0].headers["Authorization"] == "Bearer k"


# --- the gateway: public API calls over real gRPC -------------------------------------------------------------------

TOKEN = "tok-9d2f41c7b6e0a358"  # a configured bearer token
WRONG_TOKEN = "tok-0000wrong1111"  # what a confused or hostile client sends


class RaisingPipeline:
    """A stage that fails with the question in its message, as a parser quoting its input would."""

    def run(self, message: Any, push: Any) -> None:
        raise ValueError(f"cannot parse {message.question!r}")


def gateway_calls(port: int) -> list[str]:
    """Every gateway path a request can take; returns the status code names in order."""
    import grpc

    from skbqa.v1 import api_pb2, api_pb2_grpc

    good = (("authorization", f"Bearer {TOKEN}"),)
    requests: list[tuple[Any, tuple[tuple[str, str], ...]]] = [
        (api_pb2.AskRequest(question=QUESTION, k=2), good),
        (api_pb2.AskRequest(question=QUESTION, k=5000), good),  # bad k
        (api_pb2.AskRequest(question=QUESTION, strategy=f"s{MARKER}"), good),  # unknown strategy
        (api_pb2.AskRequest(question=QUESTION, options={f"o{MARKER}": "1"}), good),  # unknown option
        (api_pb2.AskRequest(question=(QUESTION + " ") * 30_000), good),  # ~1.7 MB
        (api_pb2.AskRequest(question=f"\x00\u202e{QUESTION}\x1b[31m"), good),  # control characters
        (api_pb2.AskRequest(question=QUESTION, request_id=f"id\n{MARKER}"), good),  # a forged log line
        (api_pb2.AskRequest(question=QUESTION), (("authorization", f"Bearer {WRONG_TOKEN}"),)),
        (api_pb2.AskRequest(question=QUESTION), ()),
    ]
    codes = []
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = api_pb2_grpc.SkbqaStub(channel)
        for request, metadata in requests:
            for call in (stub.Ask, lambda r, **kw: list(stub.AskStream(r, **kw))):
                try:
                    call(request, timeout=20, metadata=metadata)
                    codes.append("OK")
                except grpc.RpcError as exc:
                    details = exc.details() or ""
                    assert "Traceback" not in details and "\n" not in details
                    if exc.code() != grpc.StatusCode.INVALID_ARGUMENT:  # which may quote the caller's own input
                        assert MARKER not in details
                    codes.append(exc.code().name)
    return codes


def start_gateway(backend: Any) -> Any:
    from skbqa.serving.gateway.limits import ClientLimits
    from tests.fakes.backends import start_api

    return start_api(backend, tokens=[TOKEN.encode()], limits=ClientLimits(rate_per_s=1000.0, max_inflight=4))


def assert_no_token(caplog: pytest.LogCaptureFixture) -> None:
    for record in caplog.records:
        for text in (record.getMessage(), repr(record.args), record.exc_text or "", str(record.__dict__)):
            assert TOKEN not in text and WRONG_TOKEN not in text, f"token logged by {record.name}"
    assert TOKEN not in caplog.text and WRONG_TOKEN not in caplog.text


@pytest.mark.parametrize("failure", ["none", "bus_refuses", "stage_raises", "answer_garbled"])
def test_gateway_logs_no_question_and_no_token(failure: str, caplog: pytest.LogCaptureFixture) -> None:
    """Good and bad input, bad and missing tokens, and internal errors (the bus refusing a request with the
    question in the error, a stage raising it, an answer that does not decode) through the real servicer and
    server: nothing at INFO or above — including grpc's own "Exception calling application" — carries either."""
    from skbqa.serving.gateway.backends import LocalBackend
    from skbqa.serving.local_pipeline import LocalPipeline
    from skbqa.v1 import stages_pb2
    from tests.fakes.backends import GatedBackend

    def refuse(message: Any) -> None:
        raise ConnectionError(f"broker refused a message holding {message.question}")

    backend: Any = GatedBackend(open_gate=True)
    if failure == "bus_refuses":
        backend = GatedBackend(open_gate=True, on_submit=refuse)
    elif failure == "stage_raises":
        backend = LocalBackend(RaisingPipeline(), workers=1)  # type: ignore[arg-type]
    elif failure == "answer_garbled":
        backend = GatedBackend(open_gate=True)
        backend._answer = lambda message, waiter: waiter.push(
            stages_pb2.AnswerEnvelope(request_id=message.request_id, kind=2, answer=b"\xff\xff" + MARKER.encode())
        )
    assert LocalPipeline  # the class RaisingPipeline stands in for
    caplog.set_level(logging.INFO)
    logging.getLogger("skbqa").info("capture check")
    running = start_gateway(backend)
    try:
        codes = gateway_calls(running.port)
    finally:
        running.stop(0)
        backend.close()
    first = "OK" if failure == "none" else "INTERNAL"
    invalid = ["INVALID_ARGUMENT"] * 2
    assert codes == [first] * 2 + invalid * 4 + [first] * 2 + invalid + ["UNAUTHENTICATED"] * 4, codes
    if failure != "none":
        assert any(r.levelno >= logging.ERROR for r in caplog.records), "the internal error was logged"
    assert_clean(caplog)
    assert_no_token(caplog)
