"""The gateway's answer cache for request-id replay: final answers kept under (client, request_id), bound to the
request they answer by a fingerprint, bounded in bytes and in time (the servicer, gateway/api.py, consults it)."""

from __future__ import annotations

import hmac
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from skbqa.common.errors import InvalidInputError
from skbqa.serving.settings import env
from skbqa.v1 import api_pb2

DEFAULT_CACHE_MB = 32.0
DEFAULT_CACHE_TTL_S = 300.0
# What one kept answer costs beyond its serialized bytes: the key, the fingerprint, the bookkeeping.
ENTRY_OVERHEAD_BYTES = 256


class RequestIdReusedError(Exception):
    """A client sent a request_id it had used for a different request."""


@dataclass(frozen=True)
class _Kept:
    fingerprint: bytes
    answer: bytes  # serialized AskResponse: its size is what it costs
    size: int
    expires: float


class AnswerCache:
    """Final answers for idempotent retries, keyed by (client, request_id) and bound to the request they answer
    (`fingerprint`). Bounded in bytes (`max_bytes`, 0 = off) and kept `ttl_s` seconds; the oldest go first."""

    def __init__(
        self,
        max_bytes: int = int(DEFAULT_CACHE_MB * 1024 * 1024),
        ttl_s: float = DEFAULT_CACHE_TTL_S,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_bytes < 0 or not ttl_s > 0:
            raise InvalidInputError(f"answer cache: bytes must be >= 0 and ttl > 0, got {max_bytes}, {ttl_s}")
        self.max_bytes = max_bytes
        self.ttl_s = ttl_s
        self.nbytes = 0
        self._clock = clock
        self._items: OrderedDict[tuple[str, str], _Kept] = OrderedDict()  # oldest first (one ttl: expiry order)
        self._lock = threading.Lock()

    def get(self, client: str, request_id: str, fingerprint: bytes) -> api_pb2.AskResponse | None:
        """The kept answer, None when there is none; RequestIdReusedError when the id answered another request."""
        with self._lock:
            self._expire(self._clock())
            kept = self._items.get((client, request_id))
        if kept is None:
            return None
        if not hmac.compare_digest(kept.fingerprint, fingerprint):
            raise RequestIdReusedError(request_id)
        return api_pb2.AskResponse.FromString(kept.answer)

    def put(self, client: str, request_id: str, fingerprint: bytes, response: api_pb2.AskResponse) -> None:
        answer = response.SerializeToString()
        size = len(answer) + len(client) + len(request_id) + len(fingerprint) + ENTRY_OVERHEAD_BYTES
        if size > self.max_bytes:
            return  # larger than the whole budget (or the cache is off): not kept
        key = (client, request_id)
        with self._lock:
            now = self._clock()
            self._expire(now)
            if key in self._items:
                return  # a retry that ran while the first was in flight: the first answer stays
            self._items[key] = _Kept(fingerprint, answer, size, now + self.ttl_s)
            self.nbytes += size
            while self.nbytes > self.max_bytes:
                self.nbytes -= self._items.popitem(last=False)[1].size

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def _expire(self, now: float) -> None:
        while self._items:
            oldest = next(iter(self._items.values()))
            if oldest.expires > now:
                return
            self.nbytes -= self._items.popitem(last=False)[1].size


def answer_cache_from_env() -> AnswerCache:
    """The cache sized by SKBQA_ANSWER_CACHE_MB (32; 0 = off) and SKBQA_ANSWER_CACHE_TTL_S (300)."""
    try:
        megabytes = float(env("ANSWER_CACHE_MB", str(DEFAULT_CACHE_MB)) or DEFAULT_CACHE_MB)
        ttl_s = float(env("ANSWER_CACHE_TTL_S", str(DEFAULT_CACHE_TTL_S)) or DEFAULT_CACHE_TTL_S)
    except ValueError as exc:
        raise InvalidInputError(f"bad SKBQA_ANSWER_CACHE_MB / SKBQA_ANSWER_CACHE_TTL_S: {exc}") from None
    if not megabytes >= 0 or not ttl_s > 0 or megabytes == float("inf") or ttl_s == float("inf"):
        raise InvalidInputError(
            f"SKBQA_ANSWER_CACHE_MB must be >= 0 and SKBQA_ANSWER_CACHE_TTL_S > 0, got {megabytes:g}, {ttl_s:g}"
        )
    return AnswerCache(int(megabytes * 1024 * 1024), ttl_s)
