"""The `idempotency-key` of an `ApplyChanges` call: read from the call's metadata, checked, and turned into the key
id the index's writer remembers with the batch (`changes.idempotency`): a hash of the caller's scope and the key.

The scope is the bearer token the call was admitted with when the server checks tokens (each token a scope of
its own, so one client's key never matches another's batch), and one shared scope when it does not: every caller
is then the same anonymous client, and nothing else tells callers apart across a reconnect (a peer address
changes with it). The id is stored in the change log and compared by the updater after restarts and whichever
gateway a resend arrives through, so unlike the per-client limits' identity (`call_guard.ClientIdentifier`,
salted per process) the scope must come out the same in every process: it is a PBKDF2 of the token, so the log
holds nothing cheap to test guessed tokens against.
"""

from __future__ import annotations

import functools
import hashlib

import grpc

from skbqa.serving.security import admitted_token

KEY_HEADER = "idempotency-key"
MAX_KEY_CHARS = 128
# the value is never echoed: it may be anything a client put there, and error messages end up in logs
BAD_KEY = f"the {KEY_HEADER} metadata must be sent once, as 1 to {MAX_KEY_CHARS} printable ASCII characters"
SHARED_SCOPE = b"shared"  # a server without tokens: one scope for every caller
_SCOPE_SALT = b"skbqa idempotency scope v1"
_SCOPE_ROUNDS = 100_000  # ~30 ms, once per token and process (cached)


class BadIdempotencyKey(Exception):
    def __init__(self) -> None:
        super().__init__(BAD_KEY)


def key_id(context: grpc.ServicerContext) -> str:
    """The scoped id of the call's idempotency key; "" when the call sent none. BadIdempotencyKey for a value
    that is empty, too long or not printable ASCII, or for the header sent twice (which one counts would be up to
    whoever reads it)."""
    values = [value for key, value in context.invocation_metadata() or () if key == KEY_HEADER]
    if not values:
        return ""
    if len(values) > 1:
        raise BadIdempotencyKey()
    value = values[0]
    text = value.decode("latin-1") if isinstance(value, bytes) else str(value)
    if not 1 <= len(text) <= MAX_KEY_CHARS or not all(" " <= c <= "~" for c in text):
        raise BadIdempotencyKey()
    token = admitted_token(context)
    scope = SHARED_SCOPE if token is None else _token_scope(token)
    return hashlib.sha256(b"skbqa idempotency key\0" + scope + b"\0" + text.encode()).hexdigest()[:32]


@functools.lru_cache(maxsize=64)  # the admin tokens: a handful
def _token_scope(token: bytes) -> bytes:
    return b"token:" + hashlib.pbkdf2_hmac("sha256", token, _SCOPE_SALT, _SCOPE_ROUNDS).hex().encode()
