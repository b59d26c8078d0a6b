"""A server interceptor that refuses calls beyond the limits with RESOURCE_EXHAUSTED, at once and in one line:
the server's own in-flight cap (stage services; the gateway's servicer has its own) and per-client limits.

A client is, in order: the bearer token it authenticated with (when tokens are configured: the token
interceptor has checked it already), its mTLS certificate subject, or its peer address without the port. The
token is never kept as such — only a salted hash, and no identity is logged or used as a metric label.
Health and reflection stay outside every limit so probes still answer while the server is saturated.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, NoReturn

import grpc

from skbqa.observability.metrics import get_metrics
from skbqa.server.limits import ClientLimiter
from skbqa.server.security import OPEN_PREFIXES

logger = logging.getLogger(__name__)

SERVER_BUSY = "too many requests in flight on this server; retry with backoff"


class ClientIdentifier:
    def __init__(self, *, tokens_on: bool) -> None:
        # Without configured tokens an Authorization header is unchecked: a client could mint a new identity per
        # call to escape its limits, so it is ignored then.
        self._tokens_on = tokens_on
        self._salt = secrets.token_bytes(16)  # per process: the hashes mean nothing outside it

    def __call__(self, context: grpc.ServicerContext) -> str:
        if self._tokens_on:
            for key, value in context.invocation_metadata() or ():
                if key == "authorization":
                    raw = value if isinstance(value, bytes) else value.encode()
                    digest = hmac.new(self._salt, raw, hashlib.sha256).hexdigest()[:16]
                    return f"token:{digest}"
        subject = (context.auth_context() or {}).get("x509_subject")
        if subject:
            return "cert:" + b",".join(subject).decode(errors="replace")
        return "peer:" + _host(context.peer() or "")


def _host(peer: str) -> str:
    """`ipv4:10.0.0.7:51234` → `ipv4:10.0.0.7`, `ipv6:[::1]:51234` → `ipv6:[::1]`: one client, many connections."""
    if peer.startswith(("ipv4:", "ipv6:")):
        return peer.rsplit(":", 1)[0]
    return peer


class CallGuardInterceptor(grpc.ServerInterceptor):
    def __init__(
        self,
        *,
        service: str,
        limiter: ClientLimiter | None = None,
        max_inflight: int | None = None,
        identify: Callable[[grpc.ServicerContext], str] | None = None,
    ) -> None:
        self._service = service  # metrics label: a fixed word ("gateway", "parser", ...)
        self._limiter = limiter
        self._slots = threading.BoundedSemaphore(max_inflight) if max_inflight else None
        self._identify = identify or ClientIdentifier(tokens_on=False)

    def intercept_service(
        self, continuation: Callable[[grpc.HandlerCallDetails], Any], details: grpc.HandlerCallDetails
    ) -> Any:
        handler = continuation(details)
        if handler is None or details.method.startswith(OPEN_PREFIXES):
            return handler
        rpc = details.method.rsplit("/", 1)[-1]
        if handler.unary_unary is not None:
            return grpc.unary_unary_rpc_method_handler(
                self._unary(handler.unary_unary, rpc),
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
        if handler.unary_stream is not None:
            return grpc.unary_stream_rpc_method_handler(
                self._stream(handler.unary_stream, rpc),
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
        return handler  # client-streaming methods: none in skbqa.v1

    # ------------------------------------------------------------------------------------------------ wrappers

    def _unary(self, inner: Callable[[Any, grpc.ServicerContext], Any], rpc: str) -> Callable[..., Any]:
        def behaviour(request: Any, context: grpc.ServicerContext) -> Any:
            release = self._enter(context, rpc)
            try:
                return inner(request, context)
            finally:
                release()

        return behaviour

    def _stream(self, inner: Callable[[Any, grpc.ServicerContext], Iterator[Any]], rpc: str) -> Callable[..., Any]:
        def behaviour(request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
            release = self._enter(context, rpc)
            try:
                yield from inner(request, context)
            finally:  # also when the client goes away mid-stream (the generator is closed)
                release()

        return behaviour

    def _enter(self, context: grpc.ServicerContext, rpc: str) -> Callable[[], None]:
        """Take a server slot and the client's admission, or abort the call with RESOURCE_EXHAUSTED."""
        started = time.perf_counter()
        slots = self._slots
        if slots is not None and not slots.acquire(blocking=False):
            self._refuse(context, rpc, started, "overloaded", SERVER_BUSY)
        if self._limiter is None:
            return slots.release if slots is not None else _nothing
        client = self._identify(context)
        reason = self._limiter.admit(client)
        if reason is not None:
            if slots is not None:
                slots.release()
            self._refuse(context, rpc, started, "client_limited", reason)
        limiter = self._limiter

        def release() -> None:
            limiter.release(client)
            if slots is not None:
                slots.release()

        return release

    def _refuse(self, context: grpc.ServicerContext, rpc: str, started: float, kind: str, reason: str) -> NoReturn:
        metrics = get_metrics()
        metrics.count_error(self._service, kind)
        metrics.observe_request(rpc, "resource_exhausted", time.perf_counter() - started)
        logger.debug("%s: %s call refused (%s)", self._service, rpc, kind)
        context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, reason)
        raise AssertionError("unreachable: abort raises")


def _nothing() -> None:
    return None
