"""The `skbqa.v1.Skbqa` servicer: validation, deadlines, in-flight limits, partial results, request-id replay.

Status codes: bad input → INVALID_ARGUMENT (one line saying what is wrong); more than `max_inflight` calls at once
→ RESOURCE_EXHAUSTED at once (no unbounded queue); no answer within the call's deadline (or the server's
`request_timeout_s`) → DEADLINE_EXCEEDED; backend errors as the stages reported them; a `request_id` this client
already used for a different request → ALREADY_EXISTS.

Request-id replay: a final answer is kept for retries under the key (client, request_id) — the client as the
per-client limits identify it (call_guard.ClientIdentifier) — together with a fingerprint of the request it
answers. A request is validated before the cache is consulted; another client's id is simply another key; the
same id with a different request is refused. The cache (gateway/answer_cache.py) is bounded in bytes and in time
(oldest first out).
"""

from __future__ import annotations

import hmac
import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import grpc

from skbqa.changes.format import ChangeError
from skbqa.common.answer import answer_from_proto
from skbqa.common.errors import InvalidInputError
from skbqa.engine.explain_text import explanation
from skbqa.observability import hops
from skbqa.observability.metrics import get_metrics
from skbqa.serving import latency_trace
from skbqa.serving.gateway.answer_cache import AnswerCache, RequestIdReusedError, answer_cache_from_env
from skbqa.serving.gateway.backends import Backend, Waiter
from skbqa.serving.gateway.call_guard import ClientIdentifier
from skbqa.serving.gateway.updates import LiveUpdates, UpdatePolicy, UpdateRefused, apply_changes, wait_for_version
from skbqa.serving.requests import fingerprint, new_request
from skbqa.serving.stages.core import AnswerEnvelope, StageMessage
from skbqa.serving.status import (
    CANCELLED,
    DEADLINE_EXCEEDED,
    INTERNAL,
    INVALID_ARGUMENT,
    RESOURCE_EXHAUSTED,
    UNAVAILABLE,
    status_for,
)
from skbqa.v1 import api_pb2, api_pb2_grpc

logger = logging.getLogger(__name__)

_CODES = {status.value[0]: status for status in grpc.StatusCode}
ALREADY_EXISTS = 6  # grpc.StatusCode.ALREADY_EXISTS
REUSED_ID = "request_id already used by this client for a different request; use a new request_id"
# Longest status message a client is sent: echoed input is capped where it is quoted (common.errors.clip); this
# is the backstop for messages built further away (a stage's refusal of an option value, say).
MAX_STATUS_CHARS = 400


class _Aborted(Exception):
    def __init__(self, code: int, message: str) -> None:
        if len(message) > MAX_STATUS_CHARS:
            message = message[: MAX_STATUS_CHARS - 1] + "…"
        super().__init__(message)
        self.code = code
        self.message = message


class SkbqaServicer(api_pb2_grpc.SkbqaServicer):
    def __init__(
        self,
        backend: Backend,
        *,
        strategies: Sequence[str],
        default_strategy: str,
        status: api_pb2.IndexStatusResponse,
        gateway_id: str = "embedded",
        request_timeout_s: float = 30.0,
        max_inflight: int = 64,
        answer_cache_bytes: int | None = None,
        answer_cache_ttl_s: float | None = None,
        identify: Callable[[grpc.ServicerContext], str] | None = None,
        live: LiveUpdates | None = None,
        update_policy: UpdatePolicy | None = None,
    ) -> None:
        """`answer_cache_bytes` / `answer_cache_ttl_s`: the replay cache's budget (0 = off) and how long an answer
        is kept; None = SKBQA_ANSWER_CACHE_MB / SKBQA_ANSWER_CACHE_TTL_S (32 MiB, 300 s). `identify`: who the
        caller is (default: as the per-client limits tell clients apart)."""
        self._backend = backend
        self._strategies = tuple(strategies)
        self._default = default_strategy
        self._status = status
        self._gateway_id = gateway_id
        self._timeout = request_timeout_s
        self._slots = threading.BoundedSemaphore(max_inflight)
        if answer_cache_bytes is None or answer_cache_ttl_s is None:
            configured = answer_cache_from_env()
            answer_cache_bytes = configured.max_bytes if answer_cache_bytes is None else answer_cache_bytes
            answer_cache_ttl_s = configured.ttl_s if answer_cache_ttl_s is None else answer_cache_ttl_s
        self._cache = AnswerCache(answer_cache_bytes, answer_cache_ttl_s)
        # The token the call was admitted with (security.TokenAuthInterceptor hands it on), else the mTLS subject,
        # else the peer address: an unchecked Authorization header is never an identity.
        self._identify = identify or ClientIdentifier(tokens_on=False)
        # (client, request_id) → (fingerprint, calls) of the calls in flight: one id, one request, even before
        # the first call's answer is kept
        self._pending: dict[tuple[str, str], tuple[bytes, int]] = {}
        self._pending_lock = threading.Lock()
        self._metrics = get_metrics()
        self._live = live  # None: this server's knowledge base does not change (ApplyChanges is refused)
        self._update_policy = update_policy or UpdatePolicy(tokens_on=False, admin_tokens=None)

    def answer_cache_bytes(self) -> int:
        """Bytes the replay cache holds now (answers and their bookkeeping)."""
        return self._cache.nbytes

    # ------------------------------------------------------------------------------------------------ RPCs

    def Ask(self, request: api_pb2.AskRequest, context: grpc.ServicerContext) -> api_pb2.AskResponse:
        with self._call("Ask", context):
            for event in self._answer(request, context, stream=False):
                if not event.partial:
                    return event
        raise AssertionError("unreachable: _answer ends with a final answer or aborts")

    def AskStream(self, request: api_pb2.AskRequest, context: grpc.ServicerContext) -> Iterator[api_pb2.AskEvent]:
        with self._call("AskStream", context):
            for event in self._answer(request, context, stream=True):
                yield api_pb2.AskEvent(partial=event) if event.partial else api_pb2.AskEvent(final=event)

    def Explain(self, request: api_pb2.ExplainRequest, context: grpc.ServicerContext) -> api_pb2.ExplainResponse:
        with self._call("Explain", context):
            for event in self._answer(request.ask, context, stream=False):
                if not event.partial:
                    return api_pb2.ExplainResponse(answer=event, explanation=explanation(answer_from_proto(event)))
        raise AssertionError("unreachable")

    def IndexStatus(
        self, request: api_pb2.IndexStatusRequest, context: grpc.ServicerContext
    ) -> api_pb2.IndexStatusResponse:
        if self._live is None:
            return self._status
        status = api_pb2.IndexStatusResponse()
        status.CopyFrom(self._status)
        status.kb_version, status.accepted_version = self._live.served_version, self._live.accepted_version
        return status

    def ApplyChanges(
        self, request_iterator: Iterator[api_pb2.Change], context: grpc.ServicerContext
    ) -> api_pb2.ApplyChangesResponse:
        with self._call("ApplyChanges", context):
            try:
                return apply_changes(self._live, self._update_policy, request_iterator, context)
            except UpdateRefused as exc:
                raise _Aborted(exc.code.value[0], exc.message) from None
            except ChangeError as exc:  # nothing of the batch was applied
                raise _Aborted(INVALID_ARGUMENT, str(exc)) from None

    # ------------------------------------------------------------------------------------------------ internals

    def _call(self, rpc: str, context: grpc.ServicerContext) -> Any:
        servicer = self

        class _Scope:
            def __enter__(self) -> None:
                self.started = time.perf_counter()

            def __exit__(self, kind: Any, error: BaseException | None, tb: Any) -> None:
                code = 0
                if isinstance(error, _Aborted):
                    code = error.code
                elif error is not None and not isinstance(error, GeneratorExit):
                    code = 13
                servicer._metrics.observe_request(
                    rpc, _CODES[code].name.lower(), time.perf_counter() - self.started
                )
                if isinstance(error, _Aborted):
                    context.abort(_CODES[error.code], error.message)
                if isinstance(error, Exception):
                    # not left to grpc, which would log "Exception calling application: <message>" with the
                    # traceback at ERROR, and an exception's message can quote the question
                    internal, text = status_for(error)
                    context.abort(_CODES[internal], text)

        return _Scope()

    def _answer(
        self, request: api_pb2.AskRequest, context: grpc.ServicerContext, *, stream: bool
    ) -> Iterator[api_pb2.AskResponse]:
        accepted_us = hops.now_us()  # the origin of the request's latency trace (serving/latency_trace.py)
        remaining = context.time_remaining()
        timeout = self._timeout if remaining is None else min(self._timeout, remaining)
        try:  # first: a cached answer never stands in for a request that is not valid
            message = new_request(
                request,
                strategies=self._strategies,
                default_strategy=self._default,
                gateway_id=self._gateway_id,
                deadline_s=timeout,
                stream=stream,
            )
        except InvalidInputError as exc:
            raise _Aborted(INVALID_ARGUMENT, str(exc)) from None
        latency_trace.mark(message, hops.ACCEPTED, accepted_us)
        message.min_version = request.min_version  # the distributed form's first stage answers at it or later
        replay: tuple[str, str, bytes] | None = None
        if request.request_id:
            replay = (self._identify(context), request.request_id, fingerprint(message))
            try:
                cached = self._cache.get(*replay)
            except RequestIdReusedError:
                raise _Aborted(ALREADY_EXISTS, REUSED_ID) from None
            if cached is not None:
                yield cached
                return
        try:  # an answer at the version asked for, or later (read-your-writes)
            timeout = wait_for_version(self._live, request.min_version, timeout)
        except UpdateRefused as exc:
            raise _Aborted(exc.code.value[0], exc.message) from None
        if not self._backend.ready():
            raise _Aborted(UNAVAILABLE, "the service is starting or has lost its backend; retry shortly")
        if not context.is_active():  # the client has gone (cancelled, or its deadline passed): no work for it
            raise _Aborted(CANCELLED, "the call was cancelled")
        if not self._slots.acquire(blocking=False):
            raise _Aborted(RESOURCE_EXHAUSTED, "too many requests in flight on this server; retry with backoff")
        try:
            with self._metrics.inflight("gateway"), self._in_flight(replay):
                yield from self._submit_and_wait(message, timeout, replay)
        finally:
            self._slots.release()

    def _in_flight(self, replay: tuple[str, str, bytes] | None) -> Any:
        """Registers a call under its (client, request_id) while it runs; the same id with another request at the
        same time is refused like a reused one."""
        servicer = self

        class _Registration:
            def __enter__(self) -> None:
                if replay is None:
                    return
                client, request_id, fp = replay
                with servicer._pending_lock:
                    held = servicer._pending.get((client, request_id))
                    if held is not None and not hmac.compare_digest(held[0], fp):
                        raise _Aborted(ALREADY_EXISTS, REUSED_ID)
                    servicer._pending[(client, request_id)] = (fp, 1 if held is None else held[1] + 1)

            def __exit__(self, *exc: object) -> None:
                if replay is None:
                    return
                key = (replay[0], replay[1])
                with servicer._pending_lock:
                    fp, calls = servicer._pending[key]
                    if calls > 1:
                        servicer._pending[key] = (fp, calls - 1)
                    else:
                        del servicer._pending[key]

        return _Registration()

    def _submit_and_wait(
        self, message: StageMessage, timeout: float, replay: tuple[str, str, bytes] | None
    ) -> Iterator[api_pb2.AskResponse]:
        started = time.monotonic()
        try:
            waiter = self._backend.submit(message, timeout)
        except TimeoutError:
            raise _Aborted(
                DEADLINE_EXCEEDED,
                f"no answer within {timeout:.1f} s: the bus had not taken the request (request {message.request_id})",
            ) from None
        except Exception as exc:  # the bus refused the request: nothing was accepted, say so
            code, text = status_for(exc, message.request_id)
            raise _Aborted(code, text) from None
        try:
            yield from self._events(message, waiter, timeout - (time.monotonic() - started), replay)
        except _Aborted:
            raise
        except Exception as exc:  # e.g. an answer that does not decode: INTERNAL, logged without its text
            code, text = status_for(exc, message.request_id)
            raise _Aborted(code, text) from None
        finally:
            self._backend.forget(waiter)

    def _events(
        self, message: StageMessage, waiter: Waiter, timeout: float, replay: tuple[str, str, bytes] | None
    ) -> Iterator[api_pb2.AskResponse]:
        # the client's own id on its answers (the message's id is this call's: the client's id and a suffix)
        client_request_id = replay[1] if replay is not None else message.request_id
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            try:
                if left <= 0:
                    raise TimeoutError
                envelope = waiter.next(left)
            except TimeoutError:
                raise _Aborted(
                    DEADLINE_EXCEEDED, f"no answer within {timeout:.1f} s (request {message.request_id})"
                ) from None
            if envelope.request_id not in waiter.ids:  # never another call's answer
                logger.error("request %s was handed an answer for another request", message.request_id)
                raise _Aborted(
                    INTERNAL, f"internal error (request {message.request_id}); the server log has the details"
                )
            if envelope.kind == AnswerEnvelope.ERROR:
                raise _Aborted(envelope.status_code, envelope.status_message)
            response = api_pb2.AskResponse.FromString(envelope.answer)
            response.request_id = client_request_id
            if envelope.kind == AnswerEnvelope.FINAL:
                if replay is not None:  # kept without the trace: a replay does not travel those hops again
                    self._cache.put(*replay, response)
                latency_trace.finish(envelope, response)
                yield response
                return
            latency_trace.so_far(envelope, response)  # a streamed partial: the hops completed by now
            yield response
