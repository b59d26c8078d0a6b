"""What the sync and asyncio clients share: the requests they send, the retry policy, and the deadline that
bounds a whole call (every attempt and every pause between them).

Retries happen on UNAVAILABLE only, with exponential backoff and jitter (tenacity); a stream that fails after it
delivered events is resumed (`StreamResume`). A call keeps its request id across attempts, so a server that did
answer the first attempt (the reply was lost) answers the retry from its replay cache instead of computing it
again. A batch of changes keeps its idempotency key across attempts the same way, so a retry never applies a batch
twice.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping
from typing import Any, TypedDict

from tenacity import retry_if_exception, stop_after_attempt, stop_before_delay, wait_exponential_jitter

from skbqa.client.errors import ServerError
from skbqa.client.options import ClientOptions
from skbqa.common.errors import InvalidInputError
from skbqa.v1 import api_pb2

DEFAULT_K = 20
IDEMPOTENCY_HEADER = "idempotency-key"  # ApplyChanges metadata (docs/updates.md)
MAX_IDEMPOTENCY_KEY_CHARS = 128


class AskSettings(TypedDict, total=False):
    """What a question may carry besides its text (every call of both clients takes these)."""

    strategy: str  # "" = the server's default (af)
    k: int
    options: Mapping[str, object]  # per-request strategy options, e.g. {"alpha": 0.5}
    request_id: str  # a retried call keeps it; default: a fresh one per call
    deadline_s: float  # this call's deadline, retries included; default: the client's
    min_version: int  # answer at this knowledge-base version or later (what `apply_changes` returned)


def prepare(question: str, settings: AskSettings, options: ClientOptions) -> tuple[api_pb2.AskRequest, Deadline]:
    """The call's AskRequest (option values travel as text, as on the CLI: `--option alpha=0.5`) and its deadline."""
    request = api_pb2.AskRequest(
        question=question,
        strategy=settings.get("strategy", ""),
        k=settings.get("k", DEFAULT_K),
        options={str(key): _option_text(value) for key, value in (settings.get("options") or {}).items()},
        request_id=settings.get("request_id") or uuid.uuid4().hex,
        min_version=settings.get("min_version", 0),
    )
    return request, Deadline(settings.get("deadline_s") or options.deadline_s)


def change_call(options: ClientOptions, idempotency_key: str | None) -> tuple[str, dict[str, Any]]:
    """The idempotency key of one `apply_changes` call (a fresh one unless given) and the keyword arguments that
    put it, and the token, on every attempt. The server's rule is checked here too, so a bad key fails before
    anything is sent (and never with gRPC's own error for a value it cannot send)."""
    key = checked_idempotency_key(uuid.uuid4().hex if idempotency_key is None else idempotency_key)
    metadata = (*options.call_metadata().get("metadata", ()), (IDEMPOTENCY_HEADER, key))
    return key, {"metadata": metadata}


def checked_idempotency_key(key: str) -> str:
    """`key`, if the server would take it (1 to 128 printable ASCII characters); else InvalidInputError."""
    if not 1 <= len(key) <= MAX_IDEMPOTENCY_KEY_CHARS or not all(" " <= c <= "~" for c in key):
        raise InvalidInputError(
            f"an idempotency key must be 1 to {MAX_IDEMPOTENCY_KEY_CHARS} printable ASCII characters"
        )
    return key


def _option_text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class Deadline:
    """The end of one logical call; each attempt gets what is left of it."""

    def __init__(self, seconds: float) -> None:
        self.started = time.monotonic()
        self.seconds = seconds
        self.attempts = 0

    def next_attempt(self) -> float:
        """Seconds the next attempt may take; DEADLINE_EXCEEDED when none are left."""
        self.attempts += 1
        remaining = self.seconds - (time.monotonic() - self.started)
        if remaining <= 0:
            raise ServerError("DEADLINE_EXCEEDED", f"no answer within {self.seconds:g} s", self.attempts)
        return remaining

    def elapsed_ms(self) -> float:
        return (time.monotonic() - self.started) * 1000.0

    def may_resume(self, failure: ServerError, options: ClientOptions) -> bool:
        """Whether a stream that failed with `failure` after its first events is asked again: UNAVAILABLE, and an
        attempt and time left."""
        left = self.attempts <= options.retries and time.monotonic() - self.started < self.seconds
        return failure.retryable and left


def retry_policy(options: ClientOptions, deadline: Deadline) -> dict[str, Any]:
    """Keyword arguments for tenacity's Retrying / AsyncRetrying: retry UNAVAILABLE, never past the deadline nor
    past the attempts the call has left (a resumed stream has used some)."""
    left_s = deadline.seconds - (time.monotonic() - deadline.started)
    return {
        "retry": retry_if_exception(lambda error: isinstance(error, ServerError) and error.retryable),
        "stop": stop_after_attempt(max(1, options.retries + 1 - deadline.attempts)) | stop_before_delay(left_s),
        "wait": wait_exponential_jitter(initial=options.backoff_initial_s, max=options.backoff_max_s),
        "reraise": True,
    }


def no_event_error(attempts: int) -> ServerError:
    return ServerError("INTERNAL", "the stream ended without an answer", attempts)


class StreamResume:
    """What one `ask_stream` call has delivered, across its attempts. A stream that fails after its first events is
    asked again (the same request id) on another replica, which computes the answer again — or, on a gateway that
    already answered it, replays the final answer alone (gateway/api.py): the caller gets the partial answers it
    has not seen yet, in order, and the final one, once."""

    def __init__(self) -> None:
        self.delivered = 0  # partial answers the caller has had
        self.finished = False
        self._seen = 0  # partial answers of this attempt

    def attempt(self) -> None:
        self._seen = 0

    def fresh(self, message: api_pb2.AskEvent) -> bool:
        """Whether `message` goes to the caller: the final answer, or a partial one it has not had yet."""
        if message.WhichOneof("event") != "partial":
            self.finished = True
            return True
        self._seen += 1
        if self._seen <= self.delivered:
            return False
        self.delivered += 1
        return True
