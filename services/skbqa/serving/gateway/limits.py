"""Per-client request limits: a token bucket (requests per second with a burst) and a cap on concurrent calls.

Pure logic (no grpc): `server/call_guard.py` identifies the client and turns a refusal into RESOURCE_EXHAUSTED.
The clock is injected so the tests step time instead of sleeping.
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from skbqa.common.errors import InvalidInputError


@dataclass(frozen=True)
class ClientLimits:
    """0 switches a limit off; both are off by default (one load generator or one gateway client is one
    "client" and would otherwise be throttled as a whole)."""

    rate_per_s: float = 0.0  # sustained requests per second per client
    burst: int = 0  # requests a client may make at once above the rate; 0 = one second's worth
    max_inflight: int = 0  # concurrent calls per client
    max_clients: int = 10_000  # clients remembered at once (least recently seen idle ones are forgotten)

    @property
    def enabled(self) -> bool:
        return self.rate_per_s > 0 or self.max_inflight > 0

    @property
    def bucket_size(self) -> float:
        return float(self.burst) if self.burst > 0 else float(max(1, math.ceil(self.rate_per_s)))

    def validate(self) -> None:
        if not (math.isfinite(self.rate_per_s) and self.rate_per_s >= 0):
            raise InvalidInputError(f"client rate must be a number >= 0 (0 = off), got {self.rate_per_s}")
        if self.burst < 0 or self.max_inflight < 0:
            raise InvalidInputError("client burst and client max-inflight must be >= 0 (0 = default / off)")
        if self.max_clients < 1:
            raise InvalidInputError(f"max clients must be >= 1, got {self.max_clients}")


class TokenBucket:
    """`size` tokens at most, refilled at `rate` per second; a request takes one."""

    def __init__(self, rate: float, size: float, now: float) -> None:
        self._rate = rate
        self._size = size
        self._tokens = size
        self._updated = now

    def take(self, now: float) -> float:
        """0.0 when a token was taken; otherwise the seconds until one will be there (nothing taken)."""
        self._tokens = min(self._size, self._tokens + (now - self._updated) * self._rate)
        self._updated = now
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return 0.0
        return (1.0 - self._tokens) / self._rate


class _Client:
    __slots__ = ("bucket", "inflight")

    def __init__(self, bucket: TokenBucket | None) -> None:
        self.bucket = bucket
        self.inflight = 0


class ClientLimiter:
    """Admits or refuses one call of one client. `admit` → None (admitted: call `release` when the call ends)
    or the one-line reason for the refusal. Thread-safe; the table of clients is bounded."""

    def __init__(self, limits: ClientLimits, *, clock: Callable[[], float] = time.monotonic) -> None:
        limits.validate()
        self.limits = limits
        self._clock = clock
        self._clients: OrderedDict[str, _Client] = OrderedDict()
        self._lock = threading.Lock()

    def admit(self, client: str) -> str | None:
        limits = self.limits
        with self._lock:
            now = self._clock()
            state = self._clients.get(client)
            if state is None:
                bucket = TokenBucket(limits.rate_per_s, limits.bucket_size, now) if limits.rate_per_s > 0 else None
                state = self._clients[client] = _Client(bucket)
                self._forget_idle()
            else:
                self._clients.move_to_end(client)
            # concurrency first: a call refused for that reason must not also spend the client's rate budget
            if limits.max_inflight and state.inflight >= limits.max_inflight:
                return f"too many calls at once from this client (limit {limits.max_inflight}); retry with backoff"
            if state.bucket is not None:
                wait = state.bucket.take(now)
                if wait > 0:
                    return (
                        f"client request rate over its limit ({limits.rate_per_s:g}/s, burst "
                        f"{limits.bucket_size:g}); retry in {wait:.2f} s"
                    )
            state.inflight += 1
            return None

    def release(self, client: str) -> None:
        with self._lock:
            state = self._clients.get(client)
            if state is not None and state.inflight > 0:
                state.inflight -= 1

    def inflight(self, client: str) -> int:
        with self._lock:
            state = self._clients.get(client)
            return state.inflight if state is not None else 0

    def __len__(self) -> int:
        with self._lock:
            return len(self._clients)

    def _forget_idle(self) -> None:
        # Oldest first, only clients with no call in flight (their count must survive until `release`). A
        # forgotten client comes back with a full bucket: at most one extra burst for a client idle long enough
        # to be the least recently seen of `max_clients`.
        excess = len(self._clients) - self.limits.max_clients
        if excess <= 0:
            return
        idle = []
        for name, state in self._clients.items():  # stops at the first `excess` idle ones: O(excess) usually
            if state.inflight == 0:
                idle.append(name)
                if len(idle) == excess:
                    break
        for name in idle:
            del self._clients[name]
