"""`OpenAIChatModel` against a real local HTTP server: replies, retries and backoff, deadlines, 4xx, concurrency,
usage counters, malformed replies, settings from the environment."""

from __future__ import annotations

import json
import random
import socket
import threading
import time
from collections.abc import Iterator

import pytest

from skbqa.models.chat import ChatMessage, LlmError
from skbqa.models.openai_chat import LlmSettings, LlmSettingsError, OpenAIChatModel
from tests.fakes.openai_server import FakeOpenAIServer, Fault, running_server

HELLO = [ChatMessage("system", "be brief"), ChatMessage("user", "say hello")]


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with running_server() as s:
        yield s


class Sleeps:
    """Records backoff delays instead of sleeping (the retry tests stay fast and can check the delays)."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


def model(url: str, **options: object) -> OpenAIChatModel:
    options.setdefault("timeout", 5.0)
    return OpenAIChatModel(url, "test-model", rng=random.Random(7), **options)  # type: ignore[arg-type]


def test_reply_request_format_and_usage(server: FakeOpenAIServer) -> None:
    server.reply("say hello", reply="hello there", usage=(17, 3))
    llm = model(server.url, api_key="sk-secret", max_tokens=64)
    reply = llm.chat(HELLO, temperature=0.2)
    assert (reply.content, reply.prompt_tokens, reply.completion_tokens) == ("hello there", 17, 3)
    (request,) = server.received
    assert request.path == "/v1/chat/completions"
    assert request.headers["Authorization"] == "Bearer sk-secret"
    assert request.body["model"] == "test-model"
    assert request.body["messages"] == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "say hello"},
    ]
    assert (request.body["max_tokens"], request.body["temperature"], request.body["stream"]) == (64, 0.2, False)
    assert llm.counters() == {
        "requests": 1,
        "failures": 0,
        "retries": 0,
        "prompt_tokens": 17,
        "completion_tokens": 3,
        "estimated_usage": 0,
    }
    assert "sk-secret" not in repr(llm)


def test_base_url_without_v1_and_no_key(server: FakeOpenAIServer) -> None:
    llm = model(server.url.removesuffix("/v1"))
    llm.chat(HELLO)
    assert server.received[0].path == "/v1/chat/completions"
    assert "Authorization" not in server.received[0].headers


def test_usage_is_estimated_when_the_reply_has_none() -> None:
    with running_server(send_usage=False) as server:
        server.reply(reply="x" * 40)
        llm = model(server.url)
        reply = llm.chat(HELLO)
    assert reply.completion_tokens == 11  # estimate_tokens: 40 chars // 4 + 1
    assert reply.prompt_tokens > 0
    assert llm.counters()["estimated_usage"] == 1


def test_max_tokens_is_cut_to_fit_the_context_window(server: FakeOpenAIServer) -> None:
    llm = model(server.url, context_window=300, max_tokens=256)
    llm.chat([ChatMessage("user", "w" * 800)])  # ≈ 201 tokens of prompt
    assert server.received[0].body["max_tokens"] == 99


def test_constructor_does_no_io() -> None:
    with socket.socket() as probe:  # a port nobody listens on once the probe closes
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    OpenAIChatModel(f"http://127.0.0.1:{port}/v1", "m")  # would raise if it connected


@pytest.mark.parametrize("status", [500, 502, 503, 429])
def test_retryable_statuses_are_retried_with_growing_backoff(server: FakeOpenAIServer, status: int) -> None:
    server.fail_next(Fault("status", status), Fault("status", status), Fault("status", status))
    server.reply(reply="ok")
    sleeps = Sleeps()
    llm = model(server.url, retries=3, backoff=0.1, backoff_max=10.0, sleep=sleeps)
    assert llm.chat(HELLO).content == "ok"
    assert server.count == 4
    assert llm.counters()["retries"] == 3
    # equal jitter: attempt n waits within [step/2, step] for step = 0.1 * 2**n
    for n, delay in enumerate(sleeps.delays):
        assert 0.05 * 2**n <= delay <= 0.1 * 2**n
    assert sleeps.delays[2] > sleeps.delays[0]


def test_retry_after_is_honoured_up_to_the_cap(server: FakeOpenAIServer) -> None:
    server.fail_next(Fault("status", 429, retry_after="3"), Fault("status", 429, retry_after="600"))
    sleeps = Sleeps()
    llm = model(server.url, retries=2, backoff=0.01, backoff_max=5.0, sleep=sleeps)
    llm.chat(HELLO)
    assert sleeps.delays[0] == pytest.approx(3.0)
    assert sleeps.delays[1] == pytest.approx(5.0)


def test_client_errors_are_not_retried(server: FakeOpenAIServer) -> None:
    server.fail_next(Fault("status", 400))
    llm = model(server.url, retries=5, sleep=Sleeps())
    with pytest.raises(LlmError, match="HTTP 400") as info:
        llm.chat(HELLO)
    assert info.value.details["status"] == 400
    assert server.count == 1
    assert llm.counters()["failures"] == 1
    assert llm.counters()["retries"] == 0


def test_gives_up_after_the_configured_retries(server: FakeOpenAIServer) -> None:
    server.fail_next(*[Fault("status", 503)] * 10)
    llm = model(server.url, retries=2, sleep=Sleeps())
    with pytest.raises(LlmError, match=r"HTTP 503 \(after 3 attempt"):
        llm.chat(HELLO)
    assert server.count == 3
    snapshot = llm.counters()
    snapshot["requests"] = 99
    assert llm.counters()["requests"] == 1  # a copy, not the live counters
    assert (llm.counters()["requests"], llm.counters()["failures"], llm.counters()["retries"]) == (1, 1, 2)


def test_dropped_connections_are_retried(server: FakeOpenAIServer) -> None:
    server.fail_next(Fault("drop"))
    server.reply(reply="back")
    llm = model(server.url, retries=1, sleep=Sleeps())
    assert llm.chat(HELLO).content == "back"
    assert server.count == 2


def test_connection_refused_is_retried_then_fails() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    sleeps = Sleeps()
    llm = model(f"http://127.0.0.1:{port}/v1", retries=2, sleep=sleeps)
    with pytest.raises(LlmError, match="connection failed"):
        llm.chat(HELLO)
    assert len(sleeps.delays) == 2


def test_slow_reply_times_out(server: FakeOpenAIServer) -> None:
    server.fail_next(Fault("slow", seconds=3.0))
    llm = model(server.url, timeout=0.3, retries=0)
    started = time.monotonic()
    with pytest.raises(LlmError, match=r"no reply within 0\.3s"):
        llm.chat(HELLO)
    assert time.monotonic() - started < 2.0


def test_call_deadline_bounds_all_retries(server: FakeOpenAIServer) -> None:
    server.delay = 1.0  # every attempt is slower than the per-attempt timeout
    llm = model(server.url, timeout=0.4, retries=10, backoff=0.05)
    started = time.monotonic()
    with pytest.raises(LlmError):
        llm.chat(HELLO, timeout=1.0)
    elapsed = time.monotonic() - started
    assert elapsed < 1.8
    assert server.count <= 3


def test_timeout_then_success_on_retry(server: FakeOpenAIServer) -> None:
    server.fail_next(Fault("slow", seconds=2.0))
    server.reply(reply="second time")
    llm = model(server.url, timeout=0.3, retries=1, sleep=Sleeps())
    assert llm.chat(HELLO).content == "second time"


@pytest.mark.parametrize(
    ("fault", "message"),
    [
        (Fault("malformed"), "not JSON"),
        (Fault("no_choices"), "no choices"),
        (Fault("null_content"), r"no message content \(finish_reason='length'\)"),
    ],
)
def test_malformed_replies_fail_clearly_without_retry(
    server: FakeOpenAIServer, fault: Fault, message: str
) -> None:
    server.fail_next(fault)
    llm = model(server.url, retries=3, sleep=Sleeps())
    with pytest.raises(LlmError, match=message):
        llm.chat(HELLO)
    assert server.count == 1
    assert llm.counters()["failures"] == 1


def test_concurrency_limit_bounds_requests_in_flight(server: FakeOpenAIServer) -> None:
    server.delay = 0.15
    llm = model(server.url, concurrency=2)
    errors: list[BaseException] = []

    def call() -> None:
        try:
            llm.chat(HELLO)
        except BaseException as exc:  # surfaced below; a thread must not swallow a failure
            errors.append(exc)

    threads = [threading.Thread(target=call) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert server.count == 8
    assert server.max_in_flight == 2  # the limit is reached, never exceeded
    assert llm.counters()["requests"] == 8


def test_without_a_limit_requests_do_overlap(server: FakeOpenAIServer) -> None:
    # the control for the test above: the server really does serve requests concurrently
    server.delay = 0.15
    llm = model(server.url, concurrency=8)
    threads = [threading.Thread(target=llm.chat, args=(HELLO,)) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert server.max_in_flight >= 4


def test_deadline_while_waiting_for_a_slot(server: FakeOpenAIServer) -> None:
    server.delay = 1.0
    llm = model(server.url, concurrency=1)
    holder = threading.Thread(target=llm.chat, args=(HELLO,))
    holder.start()
    time.sleep(0.2)
    with pytest.raises(LlmError, match="free request slot"):
        llm.chat(HELLO, timeout=0.2)
    holder.join()


# --- settings ---------------------------------------------------------------------------------------------------


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in ("URL", "MODEL", "API_KEY", "TIMEOUT", "RETRIES", "CONCURRENCY", "CONTEXT", "MAX_TOKENS"):
        monkeypatch.delenv(f"SKBQA_LLM_{name}", raising=False)
    return monkeypatch


def test_settings_from_env(clean_env: pytest.MonkeyPatch, server: FakeOpenAIServer) -> None:
    clean_env.setenv("SKBQA_LLM_URL", server.url)
    clean_env.setenv("SKBQA_LLM_MODEL", "qwen")
    clean_env.setenv("SKBQA_LLM_API_KEY", "k1")
    clean_env.setenv("SKBQA_LLM_TIMEOUT", "2.5")
    clean_env.setenv("SKBQA_LLM_RETRIES", "1")
    clean_env.setenv("SKBQA_LLM_CONCURRENCY", "3")
    clean_env.setenv("SKBQA_LLM_CONTEXT", "4096")
    llm = OpenAIChatModel.from_env()
    assert (llm.model, llm.timeout, llm.retries, llm.concurrency, llm.context_window) == ("qwen", 2.5, 1, 3, 4096)
    llm.chat(HELLO)
    assert server.received[0].headers["Authorization"] == "Bearer k1"
    assert "k1" not in repr(LlmSettings.from_env())


def test_settings_name_the_missing_variables(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("SKBQA_LLM_MODEL", "m")
    with pytest.raises(LlmSettingsError, match="SKBQA_LLM_URL is not set") as info:
        OpenAIChatModel.from_env()
    assert "SKBQA_LLM_MODEL" not in str(info.value)


def test_settings_name_the_invalid_variable(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("SKBQA_LLM_URL", "http://127.0.0.1:1/v1")
    clean_env.setenv("SKBQA_LLM_MODEL", "m")
    clean_env.setenv("SKBQA_LLM_CONCURRENCY", "0")
    with pytest.raises(LlmSettingsError, match="SKBQA_LLM_CONCURRENCY"):
        LlmSettings.from_env()


@pytest.mark.parametrize("url", ["ftp://host/v1", "127.0.0.1:8000", "http://:8000/v1", "http://host:99999/v1"])
def test_unusable_urls_fail_fast(url: str) -> None:
    with pytest.raises(LlmSettingsError, match="LLM URL"):
        OpenAIChatModel(url, "m")


def test_request_body_is_plain_json(server: FakeOpenAIServer) -> None:
    # non-ASCII content survives the round trip (json.dumps escapes it; the server decodes it back)
    model(server.url).chat([ChatMessage("user", "Zürich → Genève")])
    assert json.dumps(server.received[0].body["messages"][0]["content"]) == json.dumps("Zürich → Genève")
