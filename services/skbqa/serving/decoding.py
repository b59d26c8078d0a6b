"""Requests that do not decode (malformed protobuf, a string field that is not UTF-8) are INVALID_ARGUMENT in one
line, not grpc's INTERNAL "Exception deserializing request!" with a traceback at ERROR for every such call.

gRPC Python turns a deserializer's exception into that INTERNAL answer and logs it itself, before any servicer or
interceptor sees the call; so the interceptor here gives each method a deserializer that never raises (a bad
message decodes to a marker) and a behaviour that answers the marker with INVALID_ARGUMENT. It wraps the handlers
the generated code registers (v1/*_pb2_grpc.py stay as generated) and every other service on the server (health,
reflection). It must be the innermost interceptor: the outer ones copy its deserializer when they wrap a handler.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any, NoReturn

import grpc

from skbqa.observability.metrics import get_metrics

logger = logging.getLogger(__name__)

Behaviour = Callable[..., Any]


class _Undecodable:
    """What a request that does not decode becomes: `name` is the message type the method expects."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name


def _type_name(decode: Callable[[bytes], Any]) -> str:
    descriptor = getattr(getattr(decode, "__self__", None), "DESCRIPTOR", None)  # `AskRequest.FromString`
    return str(getattr(descriptor, "full_name", "request"))


def tolerant(decode: Callable[[bytes], Any]) -> Callable[[bytes], Any]:
    """`decode` that returns an `_Undecodable` marker instead of raising."""
    marker = _Undecodable(_type_name(decode))

    def decode_or_mark(data: bytes) -> Any:
        try:
            return decode(data)
        except Exception:  # DecodeError, and whatever else a decoder may raise on hostile bytes
            return marker

    return decode_or_mark


class RequestDecodingInterceptor(grpc.ServerInterceptor):
    def __init__(self, *, service: str) -> None:
        self._service = service  # metrics label: a fixed word ("gateway", "parser", ...)

    def intercept_service(
        self, continuation: Callable[[grpc.HandlerCallDetails], Any], details: grpc.HandlerCallDetails
    ) -> Any:
        handler = continuation(details)
        if handler is None or handler.request_deserializer is None:
            return handler
        decode = tolerant(handler.request_deserializer)
        rpc = details.method.rsplit("/", 1)[-1]
        for kind, make, wrap in (
            ("unary_unary", grpc.unary_unary_rpc_method_handler, self._single),
            ("unary_stream", grpc.unary_stream_rpc_method_handler, self._single),
            ("stream_unary", grpc.stream_unary_rpc_method_handler, self._streamed),
            ("stream_stream", grpc.stream_stream_rpc_method_handler, self._streamed),
        ):
            behaviour = getattr(handler, kind)
            if behaviour is not None:
                return make(
                    _like(wrap(behaviour, rpc), behaviour),
                    request_deserializer=decode,
                    response_serializer=handler.response_serializer,
                )
        return handler

    def _single(self, inner: Behaviour, rpc: str) -> Behaviour:
        def behaviour(request: Any, context: grpc.ServicerContext, *rest: Any) -> Any:
            if isinstance(request, _Undecodable):
                self._refuse(context, rpc, request)
            return inner(request, context, *rest)

        return behaviour

    def _streamed(self, inner: Behaviour, rpc: str) -> Behaviour:
        def behaviour(requests: Iterator[Any], context: grpc.ServicerContext, *rest: Any) -> Any:
            def checked() -> Iterator[Any]:
                for request in requests:
                    if isinstance(request, _Undecodable):
                        self._refuse(context, rpc, request)
                    yield request

            return inner(checked(), context, *rest)

        return behaviour

    def _refuse(self, context: grpc.ServicerContext, rpc: str, request: _Undecodable) -> NoReturn:
        get_metrics().count_error(self._service, "malformed_request")
        logger.debug("%s: %s request does not decode", self._service, rpc)  # the bytes are not logged
        context.abort(
            grpc.StatusCode.INVALID_ARGUMENT,
            f"the request is not a valid {request.name} message (malformed protobuf, or a string field that is "
            "not UTF-8)",
        )
        raise AssertionError("unreachable: abort raises")


def _like(wrapper: Behaviour, inner: Behaviour) -> Behaviour:
    """Carry grpc's per-behaviour flags over (the health service's Watch is non-blocking: it answers through a
    callback instead of holding a server thread for as long as the watch is open)."""
    for flag in ("experimental_non_blocking", "experimental_thread_pool"):
        if hasattr(inner, flag):
            setattr(wrapper, flag, getattr(inner, flag))
    return wrapper
