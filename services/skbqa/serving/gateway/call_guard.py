"""A server interceptor that refuses calls beyond the limits with RESOURCE_EXHAUSTED, at once and in one line:
per-client limits first, then the server's own in-flight cap (stage services; the gateway's servicer has its
own, taken after this guard), so a client over its quota is refused before it holds a server-wide slot and its
flood never takes another client's share. gRPC's own server-wide limit is not used (it would refuse health checks
too; grpc_server.py).

A client is, in order: the bearer token it authenticated with (when tokens are configured: the token
interceptor has checked it and hands it on in the call's context), its mTLS certificate subject, or its peer
address without the port. The same identity scopes request-id replay in the servicer (gateway/api.py). The
token is never kept as such — only a salted hash, and no identity is logged or used as a metric label.
Health and reflection stay outside every client and server limit so probes still answer while the server is
saturated; reflection, a stream that holds a server thread for as long as it is open, has a small cap of its own
(`reflection_streams`) so idle reflection streams cannot take the threads health checks and refusals need.
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
from skbqa.serving.gateway.limits import ClientLimiter
from skbqa.serving.security import OPEN_PREFIXES, admitted_token

logger = logging.getLogger(__name__)

SERVER_BUSY = "too many requests in flight on this server; retry with backoff"
REFLECTION_BUSY = "too many reflection streams open on this server; close one and retry"
REFLECTION_PREFIX = "/grpc.reflection."


class ClientIdentifier:
    def __init__(self, *, tokens_on: bool) -> None:
        # Without configured tokens an Authorization header is unchecked: a client could mint a new identity per
        # call to escape its limits, so it is ignored then.
        self._tokens_on = tokens_on
        self._salt = secrets.token_bytes(16)  # per process: the hashes mean nothing outside it

    def __call__(self, context: grpc.ServicerContext) -> str:
        token = admitted_token(context)  # the token the call was admitted with (TokenAuthInterceptor)
        if token is None and self._tokens_on:
            for key, value in context.invocation_metadata() or ():
                if key == "authorization":
                    raw = value if isinstance(value, bytes) else value.encode()
                    token = raw.removeprefix(b"Bearer ")
                    break
        if token is not None:
            return "token:" + hmac.new(self._salt, token, hashlib.sha256).hexdigest()[:16]
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
        reflection_streams: int | None = None,
    ) -> None:
        """`max_inflight`: API calls at once on this server (None: the servicer caps them); `reflection_streams`:
        reflection streams open at once (None: no cap)."""
        self._service = service  # metrics label: a fixed word ("gateway", "parser", ...)
        self._limiter = limiter
        self._slots = threading.BoundedSemaphore(max_inflight) if max_inflight else None
        self._reflection = threading.BoundedSemaphore(reflection_streams) if reflection_streams else None
        self._identify = identify or ClientIdentifier(tokens_on=False)

    def intercept_service(
        self, continuation: Callable[[grpc.HandlerCallDetails], Any], details: grpc.HandlerCallDetails
    ) -> Any:
        handler = continuation(details)
        if handler is None:
            return handler
        if details.method.startswith(REFLECTION_PREFIX):
            if self._reflection is None or handler.stream_stream is None:
                return handler
            return grpc.stream_stream_rpc_method_handler(
                self._reflection_stream(handler.stream_stream),
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
        if details.method.startswith(OPEN_PREFIXES) or (self._limiter is None and self._slots is None):
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

    def _reflection_stream(
        self, inner: Callable[[Any, grpc.ServicerContext], Iterator[Any]]
    ) -> Callable[..., Any]:
        slots = self._reflection
        assert slots is not None

        def behaviour(requests: Any, context: grpc.ServicerContext) -> Iterator[Any]:
            if not slots.acquire(blocking=False):
                self._refuse(context, "ServerReflectionInfo", time.perf_counter(), "overloaded", REFLECTION_BUSY)
            try:
                yield from inner(requests, context)
            finally:
                slots.release()

        return behaviour

    def _enter(self, context: grpc.ServicerContext, rpc: str) -> Callable[[], None]:
        """Take the client's admission, then a server slot, or abort the call with RESOURCE_EXHAUSTED. The client's
        limits come first: a call over them is refused without ever holding a slot other clients could use."""
        started = time.perf_counter()
        limiter, slots = self._limiter, self._slots
        client = ""
        if limiter is not None:
            client = self._identify(context)
            reason = limiter.admit(client)
            if reason is not None:
                self._refuse(context, rpc, started, "client_limited", reason)
        if slots is not None and not slots.acquire(blocking=False):
            if limiter is not None:
                limiter.release(client)
            self._refuse(context, rpc, started, "overloaded", SERVER_BUSY)
        if limiter is None:
            return slots.release if slots is not None else _nothing

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
