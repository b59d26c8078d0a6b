"""Locust load test of the skbqa public gRPC API (`skbqa.v1.Skbqa`: Ask, AskStream, Explain), through the client SDK.

    locust -f loadtest/locustfile.py --headless --host 127.0.0.1:50051 -u 8 -r 4 -t 60s
    python loadtest/headless.py --host 127.0.0.1:50051          # the same, plus a figures summary (docs/loadtest.md)

Every call goes through `LocustInterceptor`, a gRPC client interceptor that fires Locust's `request` event with
the RPC's short name (`Ask`, `AskStream`, `Explain`), the response time (for a stream: until its last event) and
the response size; a non-OK status, or an answer that breaks the API's contract (a stream without a final event,
an Explain without an explanation), is a failure.

Settings (environment; Locust itself reads LOCUST_HOST, LOCUST_USERS, LOCUST_SPAWN_RATE, LOCUST_RUN_TIME):

| variable | default | meaning |
|---|---|---|
| SKBQA_LOADTEST_QUESTIONS | loadtest/questions.txt | one question per line (`#` comments), or a QA `.jsonl` (`question` key) |
| SKBQA_LOADTEST_WEIGHTS | ask=6,stream=3,explain=1 | task weights |
| SKBQA_LOADTEST_STRATEGY | "" (server default) | strategy of every request |
| SKBQA_LOADTEST_K | 20 | answers per request |
| SKBQA_LOADTEST_DEADLINE | 30 | seconds per call |
| SKBQA_LOADTEST_WAIT | 0 | think time between a user's calls: seconds, or `MIN-MAX` |
| SKBQA_LOADTEST_TOKEN | none | bearer token sent as `authorization` metadata |
| SKBQA_LOADTEST_TLS_DIR | none | directory with `ca.crt` (and `tls.crt`/`tls.key` for mutual TLS): use TLS |
"""

from __future__ import annotations

# gRPC must cooperate with gevent (Locust's concurrency) before any channel exists.
import grpc.experimental.gevent as grpc_gevent

grpc_gevent.init_gevent()

import contextlib  # noqa: E402
import itertools  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import random  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable, Iterator  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any, ClassVar  # noqa: E402

import grpc  # noqa: E402
from locust import User, between, constant, events  # noqa: E402
from locust.env import Environment  # noqa: E402

from skbqa.client import ClientOptions, ServerError, SkbqaClient  # noqa: E402

HERE = Path(__file__).resolve().parent
DEFAULT_WEIGHTS = {"ask": 6, "stream": 3, "explain": 1}


def _env(name: str, default: str = "") -> str:
    value = os.environ.get(f"SKBQA_LOADTEST_{name}", "")
    return value if value.strip() else default


def parse_weights(text: str) -> dict[str, int]:
    """`ask=6,stream=3,explain=1` -> weights; unknown names or negative weights are errors."""
    weights = dict(DEFAULT_WEIGHTS)
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, _, value = part.partition("=")
        name = {"askstream": "stream", "ask_stream": "stream"}.get(name.strip().lower(), name.strip().lower())
        if name not in weights or not value.strip().isdigit():
            raise ValueError(f"SKBQA_LOADTEST_WEIGHTS: bad entry {part!r} (want ask=N,stream=N,explain=N)")
        weights[name] = int(value)
    if not any(weights.values()):
        raise ValueError("SKBQA_LOADTEST_WEIGHTS: every weight is 0")
    return weights


def load_questions(path: Path) -> list[str]:
    """Questions from a text file (one per line) or a QA .jsonl (its `question` field)."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".jsonl":
        questions = [json.loads(line)["question"] for line in text.splitlines() if line.strip()]
    else:
        questions = [
            line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")
        ]
    if not questions:
        raise ValueError(f"{path}: no questions")
    return questions


def parse_wait(text: str) -> Callable[..., float]:
    if "-" in text:
        low, high = (float(v) for v in text.split("-", 1))
        return between(low, high)
    return constant(float(text))


WEIGHTS = parse_weights(_env("WEIGHTS"))
QUESTIONS = load_questions(Path(_env("QUESTIONS", str(HERE / "questions.txt"))))
STRATEGY = _env("STRATEGY")
K = int(_env("K", "20"))
DEADLINE_S = float(_env("DEADLINE", "30"))


# ------------------------------------------------------------------------------------------------ interceptor

Validator = Callable[[Any, list[Any]], str | None]


def check_ask(request: Any, responses: list[Any]) -> str | None:
    (response,) = responses
    if response.partial:
        return "Ask returned a partial answer"
    if len(response.items) > (request.k or 20):
        return f"Ask returned {len(response.items)} items for k={request.k}"
    return None


def check_stream(request: Any, events_: list[Any]) -> str | None:
    kinds = [e.WhichOneof("event") for e in events_]
    if not kinds or kinds[-1] != "final":
        return f"AskStream ended without a final event ({kinds})"
    if "final" in kinds[:-1]:
        return "AskStream sent events after its final answer"
    return None


def check_explain(request: Any, responses: list[Any]) -> str | None:
    (response,) = responses
    return None if response.explanation.strip() else "Explain returned no explanation"


VALIDATORS: dict[str, Validator] = {"Ask": check_ask, "AskStream": check_stream, "Explain": check_explain}


class ContractError(Exception):
    """A call that succeeded at the gRPC level but answered something the API does not allow."""


class LocustInterceptor(grpc.UnaryUnaryClientInterceptor, grpc.UnaryStreamClientInterceptor):
    """Fires one Locust `request` event per call: name = the RPC's short name, time = until the (last) response."""

    def __init__(self, environment: Environment, validators: dict[str, Validator] | None = None) -> None:
        self.environment = environment
        self.validators = validators or {}

    def _fire(self, method: str, started: float, length: int, exception: BaseException | None) -> None:
        self.environment.events.request.fire(
            request_type="grpc",
            name=method,
            response_time=(time.perf_counter() - started) * 1000.0,
            response_length=length,
            exception=exception,
            context={},
        )

    def _verdict(self, method: str, request: Any, responses: list[Any]) -> BaseException | None:
        check = self.validators.get(method)
        problem = check(request, responses) if check else None
        return ContractError(problem) if problem else None

    def intercept_unary_unary(self, continuation: Any, client_call_details: Any, request: Any) -> Any:
        method = _short_name(client_call_details.method)
        started = time.perf_counter()
        call = continuation(client_call_details, request)
        try:
            response = call.result()
        except grpc.RpcError as error:
            self._fire(method, started, 0, error)
        else:
            self._fire(method, started, response.ByteSize(), self._verdict(method, request, [response]))
        return call

    def intercept_unary_stream(self, continuation: Any, client_call_details: Any, request: Any) -> Any:
        method = _short_name(client_call_details.method)
        started = time.perf_counter()
        return _RecordedStream(continuation(client_call_details, request), self, method, request, started)


class _RecordedStream:
    """The server stream, iterated on behalf of the caller; the event fires once, when the stream ends."""

    def __init__(
        self, call: Any, interceptor: LocustInterceptor, method: str, request: Any, started: float
    ) -> None:
        self._call = call
        self._interceptor = interceptor
        self._method = method
        self._request = request
        self._started = started
        self._received: list[Any] = []
        self._done = False

    def __iter__(self) -> Iterator[Any]:
        return self

    def __next__(self) -> Any:
        try:
            message = next(self._call)
        except StopIteration:
            self._finish(None)
            raise
        except grpc.RpcError as error:
            self._finish(error)
            raise
        self._received.append(message)
        return message

    def _finish(self, error: BaseException | None) -> None:
        if self._done:
            return
        self._done = True
        length = sum(m.ByteSize() for m in self._received)
        if error is None:
            error = self._interceptor._verdict(self._method, self._request, self._received)
        self._interceptor._fire(self._method, self._started, length, error)

    def __getattr__(self, name: str) -> Any:  # cancel(), code(), details(), … of the underlying call
        return getattr(self._call, name)


def _short_name(method: str | bytes) -> str:
    text = method.decode() if isinstance(method, bytes) else method
    return text.rsplit("/", 1)[-1]


# ------------------------------------------------------------------------------------------------------- users


def client_options(target: str) -> ClientOptions:
    """The SDK's options for a load-test user: no retries (a failure is a figure, not something to hide), the
    load test's deadline, token and TLS directory."""
    tls_dir = _env("TLS_DIR")
    directory = Path(tls_dir) if tls_dir else None
    cert = directory / "tls.crt" if directory else None
    key = directory / "tls.key" if directory else None
    with_client_cert = bool(cert and key and cert.is_file() and key.is_file())
    return ClientOptions(
        target,
        token=_env("TOKEN") or None,
        tls_ca=directory / "ca.crt" if directory else None,
        tls_cert=cert if with_client_cert else None,
        tls_key=key if with_client_cert else None,
        deadline_s=DEADLINE_S,
        retries=0,
    )


class SkbqaUser(User):
    """Asks the corpus' questions in turn (each user from its own random start) with weighted RPCs, through the
    client SDK (one client per user); every call is recorded by the `LocustInterceptor` on its channel."""

    abstract = False
    wait_time = parse_wait(_env("WAIT", "0"))

    def __init__(self, environment: Environment) -> None:
        super().__init__(environment)
        if not self.host:
            raise ValueError("set the gateway address: --host HOST:PORT or LOCUST_HOST")
        target = self.host.removeprefix("grpc://").removeprefix("http://").rstrip("/")
        self.client = SkbqaClient(
            client_options(target), interceptors=[LocustInterceptor(environment, VALIDATORS)]
        )

    def on_start(self) -> None:
        self._questions = itertools.cycle(random.sample(QUESTIONS, len(QUESTIONS)))

    def on_stop(self) -> None:
        self.client.close()

    # The interceptor records every call; a failed call is already a Locust failure, so it is not raised again here
    # (that would count it twice and log a traceback per call).

    def ask(self) -> None:
        with contextlib.suppress(ServerError):
            self.client.ask(next(self._questions), strategy=STRATEGY, k=K)

    def ask_stream(self) -> None:
        with contextlib.suppress(ServerError):
            for _ in self.client.ask_stream(next(self._questions), strategy=STRATEGY, k=K):
                pass

    def explain(self) -> None:
        with contextlib.suppress(ServerError):
            self.client.explain(next(self._questions), strategy=STRATEGY, k=K)

    # weighted tasks (a weight of 0 leaves the RPC out)
    tasks: ClassVar[dict[Callable[..., None], int]] = {
        fn: weight
        for fn, weight in ((ask, WEIGHTS["ask"]), (ask_stream, WEIGHTS["stream"]), (explain, WEIGHTS["explain"]))
        if weight > 0
    }


@events.init.add_listener
def _announce(environment: Environment, **_: Any) -> None:
    print(
        f"skbqa loadtest: {len(QUESTIONS)} questions, weights {WEIGHTS}, strategy {STRATEGY or '(server default)'}, "
        f"k={K}, deadline {DEADLINE_S:g}s",
        flush=True,
    )
