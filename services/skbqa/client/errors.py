"""The one error the client SDK raises for a call the server refused or could not answer."""

from __future__ import annotations

from typing import Any

from skbqa.common.errors import SkbqaError

# Status codes a retry may fix: the server (or the path to it) is briefly away. Everything else is an answer.
RETRYABLE = frozenset({"UNAVAILABLE"})


class ServerError(SkbqaError):
    """A gRPC call ended with a status other than OK. `code` is the status name (`"INVALID_ARGUMENT"`,
    `"UNAVAILABLE"`, …), `reason` the server's one-line message, `attempts` how many calls were made."""

    def __init__(self, code: str, details: str, attempts: int = 1) -> None:
        tries = f" after {attempts} attempts" if attempts > 1 else ""
        super().__init__(f"{code}: {details}{tries}", code=code, attempts=attempts)
        self.code = code
        self.reason = details
        self.attempts = attempts

    @property
    def bad_input(self) -> bool:
        """The server refused the request itself (the CLI exits 2 for it, as for its own checks)."""
        return self.code in ("INVALID_ARGUMENT", "ALREADY_EXISTS")

    @property
    def retryable(self) -> bool:
        return self.code in RETRYABLE


def server_error(error: Any, attempts: int = 1) -> ServerError:
    """A grpc.RpcError (sync or asyncio) as a ServerError."""
    code = error.code() if callable(getattr(error, "code", None)) else None
    details = error.details() if callable(getattr(error, "details", None)) else None
    return ServerError(getattr(code, "name", "UNKNOWN"), details or type(error).__name__, attempts)
