"""How a client reaches a deployed skbqa service: address, TLS or mutual TLS, bearer token, deadline and retry
budget — and the gRPC channel and call metadata built from them.

Every setting can also come from the environment (`ClientOptions.from_env`), so a token never has to appear on a
command line (where `ps` shows it): SKBQA_SERVER, SKBQA_CLIENT_TOKEN (or SKBQA_CLIENT_TOKEN_FILE),
SKBQA_CLIENT_TLS_CA, SKBQA_CLIENT_TLS_CERT, SKBQA_CLIENT_TLS_KEY, SKBQA_CLIENT_SERVER_NAME.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skbqa.client.addresses import balancing_options, channel_target, split_addresses
from skbqa.common.errors import InvalidInputError, clip

DEFAULT_DEADLINE_S = 30.0
DEFAULT_RETRIES = 4
# The public API answers at most 1,000 items with JSON evidence each: well above gRPC's 4 MB default.
MAX_MESSAGE_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class ClientOptions:
    """`target` is HOST:PORT, or several HOST:PORT separated by commas (replicas of one service, balanced; names
    in a list are resolved by the client: `addresses.py`). TLS is on when a CA file is given or `tls` is set (the system's roots then); a
    client certificate and key make it mutual TLS. `deadline_s` bounds a whole call, retries included;
    `retries` is how many more attempts a call gets after UNAVAILABLE (0: none)."""

    target: str
    token: str | None = None
    tls: bool = False
    tls_ca: Path | None = None
    tls_cert: Path | None = None
    tls_key: Path | None = None
    server_name: str | None = None  # the name the server's certificate carries, when it is not the target's host
    deadline_s: float = DEFAULT_DEADLINE_S
    retries: int = DEFAULT_RETRIES
    backoff_initial_s: float = 0.1
    backoff_max_s: float = 2.0

    def __post_init__(self) -> None:
        split_addresses(self.target)  # one line for a bad address, before anything connects
        if (self.tls_cert is None) != (self.tls_key is None):
            raise InvalidInputError("mutual TLS needs both a client certificate and its key")
        if self.deadline_s <= 0:
            raise InvalidInputError(f"the deadline must be positive, got {self.deadline_s:g} s")
        if self.retries < 0:
            raise InvalidInputError(f"retries must be 0 or more, got {self.retries}")
        if self.token is not None and (not self.token or any(c.isspace() for c in self.token)):
            raise InvalidInputError("the token is empty or contains whitespace")
        for path in (self.tls_ca, self.tls_cert, self.tls_key):
            if path is not None and not Path(path).is_file():
                raise InvalidInputError(f"{clip(str(path))}: not a file")

    @property
    def addresses(self) -> tuple[str, ...]:
        return split_addresses(self.target)

    @property
    def channel_target(self) -> str:
        """The gRPC target of `target`: itself, or the static list of several IP addresses (a list with names has
        none before it is resolved: InvalidInputError)."""
        return channel_target(self.addresses)

    @property
    def secure(self) -> bool:
        return self.tls or self.tls_ca is not None or self.tls_cert is not None

    @classmethod
    def from_env(cls, target: str | None = None, **overrides: Any) -> ClientOptions:
        """Options from SKBQA_SERVER / SKBQA_CLIENT_*; keyword arguments that are not None win."""

        def env(name: str) -> str | None:
            value = os.environ.get(name, "").strip()
            return value or None

        def path(name: str) -> Path | None:
            value = env(name)
            return Path(value) if value else None

        token = env("SKBQA_CLIENT_TOKEN")
        token_file = path("SKBQA_CLIENT_TOKEN_FILE")
        if token is None and token_file is not None:
            token = read_token(token_file)
        address = target or env("SKBQA_SERVER")
        if not address:
            raise InvalidInputError("no server address: pass HOST:PORT[,HOST:PORT...] or set SKBQA_SERVER")
        settings: dict[str, Any] = {
            "token": token,
            "tls_ca": path("SKBQA_CLIENT_TLS_CA"),
            "tls_cert": path("SKBQA_CLIENT_TLS_CERT"),
            "tls_key": path("SKBQA_CLIENT_TLS_KEY"),
            "server_name": env("SKBQA_CLIENT_SERVER_NAME"),
        }
        settings.update({key: value for key, value in overrides.items() if value is not None})
        return cls(address, **settings)

    def call_metadata(self) -> dict[str, Any]:
        """Keyword arguments that put the token on a call (none without one)."""
        return {"metadata": (("authorization", f"Bearer {self.token}"),)} if self.token else {}

    def channel_options(self) -> list[tuple[str, Any]]:
        options: list[tuple[str, Any]] = [
            ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
            ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
            # the client's retries are its own (tenacity, with the request id kept): gRPC's would double them
            ("grpc.enable_retries", 0),
            *balancing_options(self.addresses),
        ]
        if self.server_name:
            options.append(("grpc.ssl_target_name_override", self.server_name))
        return options

    def credentials(self) -> Any:
        """grpc.ChannelCredentials for TLS / mutual TLS (None for plaintext)."""
        if not self.secure:
            return None
        import grpc

        def read(p: Path | None) -> bytes | None:
            return Path(p).read_bytes() if p is not None else None

        return grpc.ssl_channel_credentials(
            root_certificates=read(self.tls_ca),
            private_key=read(self.tls_key),
            certificate_chain=read(self.tls_cert),
        )


def read_token(path: Path) -> str:
    """The token in a file: its first non-empty line."""
    try:
        lines = [line.strip() for line in Path(path).read_text(encoding="utf-8").splitlines()]
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInputError(f"{clip(str(path))}: cannot read the token ({type(exc).__name__})") from None
    token = next((line for line in lines if line), "")
    if not token:
        raise InvalidInputError(f"{clip(str(path))}: no token in the file")
    return token
