"""The `skbqa.v1.Skbqa` servicer: validation, deadlines, in-flight limits, partial results, request-id replay.

Status codes: bad input → INVALID_ARGUMENT (one line saying what is wrong); more than `max_inflight` calls at once
→ RESOURCE_EXHAUSTED at once (no unbounded queue); no answer within the call's deadline (or the server's
`request_timeout_s`) → DEADLINE_EXCEEDED; backend errors as the stages reported them.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from typing import Any

import grpc

from skbqa.common.errors import InvalidInputError
from skbqa.distributed import codec
from skbqa.distributed.requests import new_request
from skbqa.distributed.stages import AnswerEnvelope, StageMessage
from skbqa.distributed.status import (
    DEADLINE_EXCEEDED,
    INVALID_ARGUMENT,
    RESOURCE_EXHAUSTED,
    UNAVAILABLE,
    status_for,
)
from skbqa.observability.metrics import get_metrics
from skbqa.server.backends import Backend, Waiter
from skbqa.server.explain_text import explanation
from skbqa.v1 import api_pb2, api_pb2_grpc

_CODES = {status.value[0]: status for status in grpc.StatusCode}


class AnswerCache:
    """Final answers by request id, so a client retrying with the same id is answered once (bounded LRU)."""

    def __init__(self, size: int = 2048) -> None:
        self._size = size
        self._items: OrderedDict[str, api_pb2.AskResponse] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, request_id: str) -> api_pb2.AskResponse | None:
        with self._lock:
            found = self._items.get(request_id)
            if found is not None:
                self._items.move_to_end(request_id)
            return found

    def put(self, response: api_pb2.AskResponse) -> None:
        with self._lock:
            self._items[response.request_id] = response
            while len(self._items) > self._size:
                self._items.popitem(last=False)


class _Aborted(Exception):
    def __init__(self, code: int, message: str) -> None:
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
    ) -> None:
        self._backend = backend
        self._strategies = tuple(strategies)
        self._default = default_strategy
        self._status = status
        self._gateway_id = gateway_id
        self._timeout = request_timeout_s
        self._slots = threading.BoundedSemaphore(max_inflight)
        self._cache = AnswerCache()
        self._metrics = get_metrics()

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
                    return api_pb2.ExplainResponse(
                        answer=event, explanation=explanation(codec.answer_from_proto(event))
                    )
        raise AssertionError("unreachable")

    def IndexStatus(
        self, request: api_pb2.IndexStatusRequest, context: grpc.ServicerContext
    ) -> api_pb2.IndexStatusResponse:
        return self._status

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
        if request.request_id:
            cached = self._cache.get(request.request_id)
            if cached is not None:
                yield cached
                return
        if not self._backend.ready():
            raise _Aborted(UNAVAILABLE, "the service is starting or has lost its backend; retry shortly")
        remaining = context.time_remaining()
        timeout = self._timeout if remaining is None else min(self._timeout, remaining)
        try:
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
        if not self._slots.acquire(blocking=False):
            raise _Aborted(RESOURCE_EXHAUSTED, "too many requests in flight on this server; retry with backoff")
        try:
            with self._metrics.inflight("gateway"):
                yield from self._submit_and_wait(message, timeout)
        finally:
            self._slots.release()

    def _submit_and_wait(self, message: StageMessage, timeout: float) -> Iterator[api_pb2.AskResponse]:
        try:
            waiter = self._backend.submit(message)
        except Exception as exc:  # the bus refused the request: nothing was accepted, say so
            code, text = status_for(exc, message.request_id)
            raise _Aborted(code, text) from None
        try:
            yield from self._events(message, waiter, timeout)
        except _Aborted:
            raise
        except Exception as exc:  # e.g. an answer that does not decode: INTERNAL, logged without its text
            code, text = status_for(exc, message.request_id)
            raise _Aborted(code, text) from None
        finally:
            self._backend.forget(waiter)

    def _events(self, message: StageMessage, waiter: Waiter, timeout: float) -> Iterator[api_pb2.AskResponse]:
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
            if envelope.kind == AnswerEnvelope.ERROR:
                raise _Aborted(envelope.status_code, envelope.status_message)
            response = api_pb2.AskResponse.FromString(envelope.answer)
            if envelope.kind == AnswerEnvelope.FINAL:
                self._cache.put(response)
                yield response
                return
            yield response
