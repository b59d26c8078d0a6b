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

from skbqa.embedded.engine import EmbeddedEngine
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
