"""`OpenAIChatModel`: the `ChatModel` port over any OpenAI-compatible `POST /v1/chat/completions` endpoint (vLLM,
Ollama, llama.cpp's server, OpenAI), written with the standard library only so the embedded install stays light.

Behaviour, in the order a call meets it:
- `chat(timeout=...)` is a deadline for the whole call (waiting for a slot, every attempt, every backoff);
  each attempt's socket timeout is `timeout` from the settings, cut to what is left of that deadline.
- A semaphore shared by every thread using the instance bounds the requests in flight (`concurrency`); it is
  held only while a request is on the wire, never during a backoff sleep.
- Connection errors, timeouts, 429 and 5xx are retried (`retries` times) with exponential backoff and jitter,
  honouring `Retry-After` up to `backoff_max`; any other 4xx is the caller's fault and fails at once.
- Replies are untrusted: missing choices or content, non-JSON bodies and oversized bodies raise `LlmError`
  naming the problem. Token usage comes from the reply's `usage`, estimated with `estimate_tokens` when absent.
- Cumulative counters (requests, failures, retries, tokens) are kept under a lock; `counters()` reads them.

Nothing connects in the constructor; every request opens its own connection (LLM calls take seconds, so a
connection pool would save little and would need its own thread-safety).
"""

from __future__ import annotations

import http.client
import json
import logging
import random
import re
import threading
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from pydantic import Field, SecretStr, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

from skbqa.common.errors import InvalidInputError
from skbqa.models.chat import ChatMessage, ChatReply, LlmError, estimate_tokens

logger = logging.getLogger(__name__)

MAX_REPLY_BYTES = 8 * 1024 * 1024  # a chat completion is a few KB; anything this large is not one
MIN_COMPLETION_TOKENS = 16  # the floor when max_tokens is cut to fit the context window
ENV_PREFIX = "SKBQA_LLM_"
_SURROGATE = re.compile(r"[\ud800-\udfff]")
COUNTERS = ("requests", "failures", "retries", "prompt_tokens", "completion_tokens", "estimated_usage")


class LlmSettingsError(InvalidInputError):
    """The LLM endpoint is misconfigured (a missing or invalid `SKBQA_LLM_*` variable, a bad URL)."""


class LlmSettings(BaseSettings):
    """The LLM endpoint, from `SKBQA_LLM_*` environment variables (`url` and `model` are required)."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore", frozen=True)

    url: str  # e.g. http://127.0.0.1:8000/v1 (a URL without a /v1 path gets one)
    model: str
    api_key: SecretStr | None = None
    timeout: float = Field(60.0, gt=0)  # seconds per attempt
    retries: int = Field(3, ge=0, le=20)
    concurrency: int = Field(4, ge=1, le=1024)
    context: int = Field(8192, ge=256)  # the model's context window in tokens
    max_tokens: int = Field(512, ge=1)

    @classmethod
    def from_env(cls) -> LlmSettings:
        """Read the environment; fail fast with one message naming every missing or invalid variable."""
        try:
            return cls(**{})
        except ValidationError as exc:
            problems = []
            for error in exc.errors():
                variable = ENV_PREFIX + str(error["loc"][0]).upper() if error["loc"] else ENV_PREFIX + "*"
                if error["type"] == "missing":
                    problems.append(f"{variable} is not set")
                else:
                    problems.append(f"{variable}: {error['msg']}")
            raise LlmSettingsError("LLM settings: " + "; ".join(problems), problems=problems) from None


def _endpoint(base_url: str) -> tuple[str, str, int, str]:
    """(scheme, host, port, path of chat/completions) from a base URL; raises LlmSettingsError when unusable."""
    parts = urlsplit(base_url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise LlmSettingsError(f"LLM URL must be http(s)://host[:port][/v1], got {base_url!r}", url=base_url)
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise LlmSettingsError(f"LLM URL has an invalid port: {base_url!r}", url=base_url) from None
    path = parts.path.rstrip("/")
    if path.endswith("/chat/completions"):
        return parts.scheme, parts.hostname, port, path
    if not path.endswith("/v1"):
        path += "/v1"  # OpenAI clients take the base with /v1; accept the bare server address too
    return parts.scheme, parts.hostname, port, path + "/chat/completions"


class _Transient(Exception):
    """A failure worth retrying (connection error, timeout, 429, 5xx)."""

    def __init__(self, problem: str, retry_after: float | None = None) -> None:
        super().__init__(problem)
        self.retry_after = retry_after


class OpenAIChatModel:
    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        timeout: float = 60.0,
        retries: int = 3,
        concurrency: int = 4,
        context_window: int = 8192,
        max_tokens: int = 512,
        backoff: float = 0.5,
        backoff_max: float = 8.0,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
    ) -> None:
        if timeout <= 0 or retries < 0 or concurrency < 1 or context_window < 1 or max_tokens < 1:
            raise LlmSettingsError(
                "LLM settings: timeout > 0, retries >= 0, concurrency >= 1, context_window >= 1 and "
                "max_tokens >= 1 are required"
            )
        self._scheme, self._host, self._port, self._path = _endpoint(base_url)
        self.name = model
        self.model = model
        self.url = f"{self._scheme}://{self._host}:{self._port}{self._path}"
        self.context_window = context_window
        self.max_tokens = max_tokens
        self.timeout = timeout
        self.retries = retries
        self.concurrency = concurrency
        self.backoff = backoff
        self.backoff_max = backoff_max
        self._headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        self._sleep = sleep
        self._rng = rng or random.Random()
        self._slots = threading.BoundedSemaphore(concurrency)
        self._lock = threading.Lock()
        self._counters = dict.fromkeys(COUNTERS, 0)

    @classmethod
    def from_settings(cls, settings: LlmSettings, **overrides: Any) -> OpenAIChatModel:
        options: dict[str, Any] = {
            "api_key": settings.api_key.get_secret_value() if settings.api_key else None,
            "timeout": settings.timeout,
            "retries": settings.retries,
            "concurrency": settings.concurrency,
            "context_window": settings.context,
            "max_tokens": settings.max_tokens,
        }
        options.update(overrides)
        return cls(settings.url, settings.model, **options)

    @classmethod
    def from_env(cls, **overrides: Any) -> OpenAIChatModel:
        return cls.from_settings(LlmSettings.from_env(), **overrides)

    def __repr__(self) -> str:  # never shows the API key
        return f"OpenAIChatModel(url={self.url!r}, model={self.model!r}, concurrency={self.concurrency})"

    # --- the port ---------------------------------------------------------------------------------------------

    def chat(
        self,
        messages: list[ChatMessage],
        *,
        max_tokens: int | None = None,
        temperature: float = 0.0,
        timeout: float | None = None,
    ) -> ChatReply:
        deadline = None if timeout is None else time.monotonic() + timeout
        prompt_estimate = sum(estimate_tokens(m.content) for m in messages)
        body = json.dumps(
            {
                "model": self.model,
                "messages": [{"role": m.role, "content": m.content} for m in messages],
                "max_tokens": self._fit(max_tokens or self.max_tokens, prompt_estimate),
                "temperature": temperature,
                "stream": False,
            }
        ).encode("utf-8")
        self._add(requests=1)
        try:
            payload = self._post_with_retries(body, deadline)
            reply = self._read_reply(payload, prompt_estimate)
        except LlmError:
            self._add(failures=1)
            raise
        return reply

    def counters(self) -> dict[str, int]:
        """A snapshot of the cumulative counters (for the metrics module and tests)."""
        with self._lock:
            return dict(self._counters)

    # --- internals --------------------------------------------------------------------------------------------

    def _fit(self, wanted: int, prompt_estimate: int) -> int:
        # vLLM rejects prompt + max_tokens > context with a 400; the estimate errs large, so only cut what
        # clearly cannot fit, and never below a useful minimum.
        room = self.context_window - prompt_estimate
        return wanted if room >= wanted else max(MIN_COMPLETION_TOKENS, room)

    def _add(self, **amounts: int) -> None:
        with self._lock:
            for key, amount in amounts.items():
                self._counters[key] += amount

    def _remaining(self, deadline: float | None) -> float | None:
        if deadline is None:
            return None
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise LlmError(f"LLM {self.model}: deadline passed", url=self.url)
        return remaining

    def _post_with_retries(self, body: bytes, deadline: float | None) -> bytes:
        attempt = 0
        while True:
            try:
                return self._post(body, deadline)
            except _Transient as exc:
                if attempt >= self.retries:
                    raise LlmError(
                        f"LLM {self.model} at {self.url}: {exc} (after {attempt + 1} attempt(s))",
                        url=self.url,
                        attempts=attempt + 1,
                    ) from None
                delay = self._delay(attempt, exc.retry_after)
                remaining = self._remaining(deadline)
                if remaining is not None and delay >= remaining:
                    raise LlmError(
                        f"LLM {self.model} at {self.url}: {exc}; deadline passes before the next retry",
                        url=self.url,
                        attempts=attempt + 1,
                    ) from None
                logger.warning(
                    "LLM %s: %s; retry %d/%d in %.2fs", self.model, exc, attempt + 1, self.retries, delay
                )
                self._add(retries=1)
                self._sleep(delay)
                attempt += 1

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        # "equal jitter": at least half the exponential step, so delays still grow, plus a random half so
        # clients that failed together do not retry together
        step = min(self.backoff_max, self.backoff * 2**attempt)
        delay = step / 2 + self._rng.uniform(0, step / 2)
        if retry_after is not None:
            delay = max(delay, min(retry_after, self.backoff_max))
        return delay

    def _post(self, body: bytes, deadline: float | None) -> bytes:
        remaining = self._remaining(deadline)
        if not self._slots.acquire(timeout=remaining):
            raise LlmError(f"LLM {self.model}: deadline passed waiting for a free request slot", url=self.url)
        try:
            socket_timeout = self.timeout if remaining is None else min(self.timeout, remaining)
            connection_class = (
                http.client.HTTPSConnection if self._scheme == "https" else http.client.HTTPConnection
            )
            connection = connection_class(self._host, self._port, timeout=socket_timeout)
            try:
                connection.request("POST", self._path, body=body, headers=self._headers)
                response = connection.getresponse()
                payload = response.read(MAX_REPLY_BYTES + 1)
                status, retry_after = response.status, response.getheader("Retry-After")
            except TimeoutError:
                raise _Transient(f"no reply within {socket_timeout:.1f}s") from None
            except (OSError, http.client.HTTPException) as exc:
                raise _Transient(f"connection failed ({type(exc).__name__}: {exc})") from None
            finally:
                connection.close()
        finally:
            self._slots.release()
        if status == 429 or status >= 500:
            raise _Transient(f"HTTP {status}", _seconds(retry_after))
        if status != 200:
            raise LlmError(
                f"LLM {self.model} at {self.url}: HTTP {status}: {_snippet(payload)}", url=self.url, status=status
            )
        if len(payload) > MAX_REPLY_BYTES:
            raise LlmError(f"LLM {self.model}: reply larger than {MAX_REPLY_BYTES} bytes", url=self.url)
        return payload

    def _read_reply(self, payload: bytes, prompt_estimate: int) -> ChatReply:
        try:
            data = json.loads(payload)
        except (ValueError, RecursionError):  # not UTF-8 / not JSON, a number over 4,300 digits, nesting too deep
            raise LlmError(f"LLM {self.model}: reply is not JSON: {_snippet(payload)}", url=self.url) from None
        if not isinstance(data, dict):
            raise LlmError(f"LLM {self.model}: reply is not a JSON object: {_snippet(payload)}", url=self.url)
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices:
            error = data.get("error")
            problem = f"endpoint error {error}" if error else "no choices"
            raise LlmError(f"LLM {self.model}: reply has {problem}: {_snippet(payload)}", url=self.url)
        first = choices[0] if isinstance(choices[0], dict) else {}
        message = first.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, str):
            reason = first.get("finish_reason")
            raise LlmError(
                f"LLM {self.model}: reply has no message content (finish_reason={reason!r})", url=self.url
            )
        # JSON can carry lone surrogates ("\\ud800"), which no tokenizer or encoder accepts: replace them here, once
        content = _SURROGATE.sub("\ufffd", content)
        usage = data.get("usage")
        usage = usage if isinstance(usage, dict) else {}
        prompt_tokens, completion_tokens = _count(usage, "prompt_tokens"), _count(usage, "completion_tokens")
        estimated = prompt_tokens is None or completion_tokens is None
        reply = ChatReply(
            content,
            prompt_estimate if prompt_tokens is None else prompt_tokens,
            estimate_tokens(content) if completion_tokens is None else completion_tokens,
        )
        self._add(
            prompt_tokens=reply.prompt_tokens,
            completion_tokens=reply.completion_tokens,
            estimated_usage=int(estimated),
        )
        return reply


def _count(usage: dict[str, Any], key: str) -> int | None:
    value = usage.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _seconds(header: str | None) -> float | None:
    """`Retry-After` in seconds (the HTTP-date form is rare for LLM servers and is ignored)."""
    try:
        return max(0.0, float(header)) if header is not None else None
    except ValueError:
        return None


def _snippet(payload: bytes, limit: int = 200) -> str:
    text = payload[:limit].decode("utf-8", "replace").replace("\n", " ")
    return text + ("…" if len(payload) > limit else "") if text else "(empty body)"
