"""Server security settings (the gateway and, when configured, the stage services): TLS (optionally mutual) and
bearer-token authentication.

Tokens come from a file (one per line, `#` comments; in a cluster a mounted Secret) and are compared in constant
time. Health checks and reflection stay open so probes work without credentials; every `skbqa.v1` method needs a
token once tokens are configured.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc

from skbqa.common.errors import InvalidInputError
from skbqa.serving.settings import ServiceSettings

OPEN_PREFIXES = ("/grpc.health.v1.", "/grpc.reflection.")


@dataclass(frozen=True)
class TlsSettings:
    cert_file: Path
    key_file: Path
    client_ca_file: Path | None = None  # set: clients must present a certificate signed by this CA (mTLS)

    def credentials(self) -> grpc.ServerCredentials:
        for path in (self.cert_file, self.key_file, self.client_ca_file):
            if path is not None and not Path(path).is_file():
                raise InvalidInputError(f"TLS file {path} does not exist")
        pair = (Path(self.key_file).read_bytes(), Path(self.cert_file).read_bytes())
        ca = Path(self.client_ca_file).read_bytes() if self.client_ca_file else None
        return grpc.ssl_server_credentials([pair], root_certificates=ca, require_client_auth=ca is not None)


def security_options(settings: ServiceSettings) -> dict[str, Any]:
    """`start_server` keyword arguments (tls, tokens, health_port) from a served process's settings."""
    tls = None
    if settings.tls_cert_file is not None and settings.tls_key_file is not None:
        tls = TlsSettings(settings.tls_cert_file, settings.tls_key_file, settings.tls_client_ca_file)
    tokens = read_tokens(settings.tokens_file) if settings.tokens_file else []
    tokens += admin_tokens(settings)  # an admin may ask too
    return {"tls": tls, "tokens": tokens or None, "health_port": settings.health_port}


def admin_tokens(settings: ServiceSettings) -> list[bytes]:
    """The tokens that may change the knowledge base (`ApplyChanges`); none when no file is configured."""
    return read_tokens(settings.admin_tokens_file) if settings.admin_tokens_file else []


def read_tokens(path: Path) -> list[bytes]:
    if not Path(path).is_file():
        raise InvalidInputError(f"token file {path} does not exist")
    # utf-8-sig: a byte-order mark (Windows editors) would otherwise become part of the first token
    tokens = [line.strip() for line in Path(path).read_text(encoding="utf-8-sig").splitlines()]
    tokens = [t for t in tokens if t and not t.startswith("#")]
    if not tokens:
        raise InvalidInputError(f"token file {path} holds no token")
    return [t.encode() for t in tokens]


class AuthenticatedContext:
    """A call's context as the servicer sees it once the call was admitted with a bearer token: the call's own
    context, plus `bearer_token` (the configured token the call matched). Whoever tells clients apart (per-client
    limits, request-id replay) reads it there, so an identity is always a checked token."""

    __slots__ = ("_context", "bearer_token")

    def __init__(self, context: grpc.ServicerContext, token: bytes) -> None:
        self._context = context
        self.bearer_token = token

    def __getattr__(self, name: str) -> Any:
        return getattr(self._context, name)


def admitted_token(context: grpc.ServicerContext) -> bytes | None:
    """The bearer token `context`'s call was admitted with; None when tokens are off (or not a checked call)."""
    token = getattr(context, "bearer_token", None)
    return token if isinstance(token, bytes) else None


class TokenAuthInterceptor(grpc.ServerInterceptor):
    def __init__(self, tokens: list[bytes]) -> None:
        self._tokens = tokens

        def deny(request: Any, context: grpc.ServicerContext) -> Any:
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or invalid bearer token")

        self._deny_unary = grpc.unary_unary_rpc_method_handler(deny)
        self._deny_stream = grpc.unary_stream_rpc_method_handler(deny)
        self._deny_client_stream = grpc.stream_unary_rpc_method_handler(deny)

    def _allowed(self, metadata: tuple[tuple[str, str | bytes], ...]) -> bool:
        return self._match(metadata) is not None

    def _match(self, metadata: tuple[tuple[str, str | bytes], ...]) -> bytes | None:
        """The configured token the call offers, or None. Exactly one `authorization` header: with two, which one
        counts would be up to whoever reads them (a proxy may check one, skbqa another)."""
        offered_headers = [value for key, value in metadata or () if key == "authorization"]
        if len(offered_headers) != 1:
            return None
        value = offered_headers[0]
        text = value.decode(errors="replace") if isinstance(value, bytes) else value
        if not text.startswith("Bearer "):
            return None
        offered = text[len("Bearer ") :].encode()
        # compare against every token so the time taken does not tell which one nearly matched
        matches = [hmac.compare_digest(offered, token) for token in self._tokens]
        return next((token for token, match in zip(self._tokens, matches, strict=True) if match), None)

    def intercept_service(
        self, continuation: Callable[[grpc.HandlerCallDetails], Any], details: grpc.HandlerCallDetails
    ) -> Any:
        if details.method.startswith(OPEN_PREFIXES):
            return continuation(details)
        token = self._match(details.invocation_metadata)
        handler = continuation(details)
        if token is not None:
            return _handing_on(handler, token)
        if handler is not None and handler.response_streaming:
            return self._deny_stream
        if handler is not None and handler.request_streaming:
            return self._deny_client_stream
        return self._deny_unary


def _handing_on(handler: Any, token: bytes) -> Any:
    """`handler` with its behaviour given an `AuthenticatedContext` that carries `token`."""
    if handler is None:
        return None

    def wrap(behaviour: Callable[[Any, grpc.ServicerContext], Any]) -> Callable[[Any, grpc.ServicerContext], Any]:
        def admitted(request: Any, context: grpc.ServicerContext) -> Any:
            return behaviour(request, AuthenticatedContext(context, token))  # type: ignore[arg-type]

        return admitted

    for kind, make in (
        ("unary_unary", grpc.unary_unary_rpc_method_handler),
        ("unary_stream", grpc.unary_stream_rpc_method_handler),
        ("stream_unary", grpc.stream_unary_rpc_method_handler),
        ("stream_stream", grpc.stream_stream_rpc_method_handler),
    ):
        behaviour = getattr(handler, kind)
        if behaviour is not None:
            return make(
                wrap(behaviour),
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
    return handler
