"""A real OpenAI-compatible HTTP server for tests: stdlib `http.server` on 127.0.0.1, an ephemeral port, a thread.

Replies come from a scripted table: the first rule whose substrings all occur in the request's messages wins
(else `default_reply`). Faults can be queued for the next requests (an HTTP status, a slow reply, a malformed
body, a dropped connection) or applied to every request (`delay`). Every request body is recorded, and the
server tracks how many requests were in flight at once, so tests can check retries and concurrency limits
against real sockets rather than a mocked client.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

FaultKind = Literal["status", "slow", "malformed", "no_choices", "null_content", "drop"]


@dataclass(frozen=True)
class Rule:
    contains: tuple[str, ...]  # substrings that must all occur in the concatenated message contents
    reply: str
    usage: tuple[int, int] | None = None  # (prompt, completion); None → the server counts words itself


@dataclass(frozen=True)
class Fault:
    kind: FaultKind
    status: int = 500
    seconds: float = 0.0  # for "slow": the delay before the (otherwise normal) reply
    retry_after: str | None = None


@dataclass(frozen=True)
class Received:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]

    @property
    def prompt(self) -> str:
        return "\n".join(str(m.get("content", "")) for m in self.body.get("messages", []))


class FakeOpenAIServer:
    def __init__(
        self, rules: list[Rule] | None = None, *, default_reply: str = "", send_usage: bool = True
    ) -> None:
        self.rules: list[Rule] = list(rules or [])
        self.default_reply = default_reply
        self.send_usage = send_usage
        self.delay = 0.0  # seconds added to every reply
        self.received: list[Received] = []
        self.max_in_flight = 0
        self._in_flight = 0
        self._faults: deque[Fault] = deque()
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # --- script -----------------------------------------------------------------------------------------------

    def reply(self, *contains: str, reply: str, usage: tuple[int, int] | None = None) -> None:
        self.rules.append(Rule(tuple(contains), reply, usage))

    def fail_next(self, *faults: Fault) -> None:
        with self._lock:
            self._faults.extend(faults)

    @property
    def count(self) -> int:
        with self._lock:
            return len(self.received)

    @property
    def url(self) -> str:
        assert self._server is not None, "server not started"
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    @property
    def port(self) -> int:
        assert self._server is not None, "server not started"
        return int(self._server.server_address[1])

    # --- lifecycle --------------------------------------------------------------------------------------------

    def start(self, port: int = 0) -> FakeOpenAIServer:
        """Serve on `port` (0: any free one; a fixed one lets a killed server come back at its address)."""
        server = ThreadingHTTPServer(("127.0.0.1", port), _handler(self))
        server.daemon_threads = True
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-openai", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- serving (called from handler threads) ----------------------------------------------------------------

    def _begin(self, received: Received) -> Fault | None:
        with self._lock:
            self.received.append(received)
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)
            return self._faults.popleft() if self._faults else None

    def _end(self) -> None:
        with self._lock:
            self._in_flight -= 1

    def _answer(self, received: Received) -> tuple[str, tuple[int, int]]:
        prompt = received.prompt
        for rule in self.rules:
            if all(s in prompt for s in rule.contains):
                content = rule.reply
                usage = rule.usage
                break
        else:
            content, usage = self.default_reply, None
        return content, usage or (len(prompt.split()), len(content.split()))


def _handler(fake: FakeOpenAIServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # keep pytest output clean
            pass

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            raw = self.rfile.read(length)
            try:
                body = json.loads(raw)
            except json.JSONDecodeError:
                body = {}
            received = Received(self.path, dict(self.headers.items()), body)
            fault = fake._begin(received)
            self.ended = False
            try:
                self._serve(received, fault)
            finally:
                if not self.ended:
                    fake._end()

        def _serve(self, received: Received, fault: Fault | None) -> None:
            if fake.delay:
                time.sleep(fake.delay)
                # done before the reply is written: once the client has it, it may send its next request at once
                # (its slot is free), and that one must not find this one still counted in flight
                fake._end()
                self.ended = True
            if not received.path.endswith("/chat/completions"):
                return self._send(404, b'{"error": "not found"}')
            if fault is not None:
                if fault.kind == "drop":
                    self.close_connection = True
                    self.connection.close()
                    return None
                if fault.kind == "status":
                    extra = {"Retry-After": fault.retry_after} if fault.retry_after else {}
                    return self._send(fault.status, b'{"error": {"message": "injected"}}', extra)
                if fault.kind == "malformed":
                    return self._send(200, b'{"choices": [{"message": {"content": "trunc')
                if fault.kind == "no_choices":
                    return self._send(200, b'{"id": "x", "object": "chat.completion", "choices": []}')
                if fault.kind == "null_content":
                    body = {
                        "choices": [{"message": {"role": "assistant", "content": None}, "finish_reason": "length"}]
                    }
                    return self._send(200, json.dumps(body).encode())
                if fault.kind == "slow":
                    time.sleep(fault.seconds)
            content, (prompt_tokens, completion_tokens) = fake._answer(received)
            reply: dict[str, Any] = {
                "id": f"chatcmpl-{fake.count}",
                "object": "chat.completion",
                "model": received.body.get("model", ""),
                "choices": [
                    {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
                ],
            }
            if fake.send_usage:
                reply["usage"] = {
                    "prompt_tokens": prompt_tokens,
                    "completion_tokens": completion_tokens,
                    "total_tokens": prompt_tokens + completion_tokens,
                }
            return self._send(200, json.dumps(reply).encode())

        def _send(self, status: int, payload: bytes, headers: dict[str, str] | None = None) -> None:
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (a timeout test); nothing to report

    return Handler


@contextmanager
def running_server(rules: list[Rule] | None = None, **options: Any) -> Iterator[FakeOpenAIServer]:
    """A started server, stopped on exit (for fixtures: `with running_server() as server: yield server`)."""
    server = FakeOpenAIServer(rules, **options).start()
    try:
        yield server
    finally:
        server.stop()
