"""The one error the client SDK raises for a call the server refused or could not answer."""

from __future__ import annotations

from typing import Any

from skbqa.common.errors import SkbqaError, clip

# How gRPC core words a failed resolution of the channel's target (1.6x "DNS resolution failed", 1.7x+ "errors
# resolving"): the call never left this process.
_GRPC_RESOLVE_FAILURES = ("DNS resolution failed", "errors resolving")
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

    def again(self, attempts: int) -> ServerError:
        """The same error, counted at `attempts` (one raised before a call was made, seen by a later attempt)."""
        return ServerError(self.code, self.reason, attempts)


def rpc_failure(error: BaseException, attempts: int) -> ServerError | None:
    """A grpc.RpcError as a ServerError; None for any other exception (the caller re-raises it as it is)."""
    import grpc

    return server_error(error, attempts) if isinstance(error, grpc.RpcError) else None


def server_error(error: Any, attempts: int = 1) -> ServerError:
    """A grpc.RpcError (sync or asyncio) as a ServerError; gRPC's own failure to resolve the one server's name (its
    DNS resolver's, on this side: no server was reached) as the UnresolvedNameError the client's resolver raises."""
    code = getattr(error.code() if callable(getattr(error, "code", None)) else None, "name", "UNKNOWN")
    details = (error.details() if callable(getattr(error, "details", None)) else None) or type(error).__name__
    if code == "UNAVAILABLE" and details.startswith(_GRPC_RESOLVE_FAILURES):
        return UnresolvedNameError(f"the server's name does not resolve ({clip(details, 160)})", attempts)
    return ServerError(code, details, attempts)


class UnresolvedNameError(ServerError):
    """No address of the server's name(s) could be found (UNAVAILABLE: retried within the deadline, as a name of a
    pod that is not ready yet may come). The address given names no server: the CLI exits 2, as for a bad one."""

    def __init__(self, details: str, attempts: int = 1) -> None:
        super().__init__("UNAVAILABLE", details, attempts)

    @property
    def bad_input(self) -> bool:
        return True

    def again(self, attempts: int) -> ServerError:
        return UnresolvedNameError(self.reason, attempts)
