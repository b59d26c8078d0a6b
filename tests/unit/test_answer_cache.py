"""The gateway's answer cache for idempotent retries (serving/gateway/api.py) on a stepped clock: scoped to a
client, bound to the request an id was first used for, bounded in bytes (oldest first) and in time, and its
settings from SKBQA_* variables."""

from __future__ import annotations

import pytest

from skbqa.common.errors import InvalidInputError
from skbqa.serving.gateway.api import AnswerCache, RequestIdReusedError, answer_cache_from_env
from skbqa.v1 import api_pb2


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def response(request_id: str, items: int = 10) -> api_pb2.AskResponse:
    return api_pb2.AskResponse(
        request_id=request_id,
        question="q",
        items=[api_pb2.AnswerItem(rank=n + 1, node_id=n, name=f"node {n}") for n in range(items)],
    )


def test_an_answer_is_served_only_to_its_client_for_its_request() -> None:
    cache = AnswerCache(max_bytes=1 << 20, ttl_s=60)
    cache.put("client-a", "id", b"fp-1", response("id"))
    assert cache.get("client-a", "id", b"fp-1") == response("id")
    assert cache.get("client-b", "id", b"fp-1") is None  # another client's id is not yours
    with pytest.raises(RequestIdReusedError):
        cache.get("client-a", "id", b"fp-2")  # the same id for another request


def test_the_cache_keeps_its_byte_budget_by_forgetting_the_oldest() -> None:
    one = len(response("id-0", items=50).SerializeToString())
    cache = AnswerCache(max_bytes=10 * one + 10 * 200, ttl_s=60)
    for n in range(100):
        cache.put("c", f"id-{n}", b"fp", response(f"id-{n}", items=50))
        assert cache.nbytes <= cache.max_bytes
    assert cache.get("c", "id-99", b"fp") is not None
    assert cache.get("c", "id-0", b"fp") is None and cache.get("c", "id-80", b"fp") is None
    assert 5 <= len(cache) <= 10


def test_an_answer_larger_than_the_budget_is_not_kept() -> None:
    cache = AnswerCache(max_bytes=1000, ttl_s=60)
    cache.put("c", "small", b"fp", response("small", items=1))
    cache.put("c", "huge", b"fp", response("huge", items=1000))
    assert cache.get("c", "huge", b"fp") is None and cache.get("c", "small", b"fp") is not None


def test_answers_are_kept_for_the_ttl_only() -> None:
    clock = Clock()
    cache = AnswerCache(max_bytes=1 << 20, ttl_s=30, clock=clock)
    cache.put("c", "old", b"fp", response("old"))
    clock.now += 20
    cache.put("c", "new", b"fp", response("new"))
    clock.now += 11
    assert cache.get("c", "old", b"fp") is None  # expired: a retry computes it again
    assert cache.get("c", "new", b"fp") is not None
    cache.put("c", "newer", b"fp", response("newer"))  # a put drops what has expired
    assert len(cache) == 2
    clock.now += 60
    assert cache.get("c", "new", b"fp") is None


def test_a_zero_budget_switches_the_cache_off() -> None:
    cache = AnswerCache(max_bytes=0, ttl_s=60)
    cache.put("c", "id", b"fp", response("id"))
    assert cache.get("c", "id", b"fp") is None and cache.nbytes == 0


def test_cache_settings_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SKBQA_ANSWER_CACHE_MB", raising=False)
    monkeypatch.delenv("SKBQA_ANSWER_CACHE_TTL_S", raising=False)
    default = answer_cache_from_env()
    assert default.max_bytes == 32 * 1024 * 1024 and default.ttl_s == 300.0
    monkeypatch.setenv("SKBQA_ANSWER_CACHE_MB", "0.5")
    monkeypatch.setenv("SKBQA_ANSWER_CACHE_TTL_S", "10")
    tuned = answer_cache_from_env()
    assert tuned.max_bytes == 512 * 1024 and tuned.ttl_s == 10.0
    for name, value in (("SKBQA_ANSWER_CACHE_MB", "lots"), ("SKBQA_ANSWER_CACHE_MB", "-1")):
        monkeypatch.setenv(name, value)
        with pytest.raises(InvalidInputError, match="ANSWER_CACHE"):
            answer_cache_from_env()
