"""A request the gateway has no final word of long after publishing it (a copy a crashed broker lost) is published
again as its next attempt, at most MAX_RESENDS times; an answered request never is; stages take a new attempt for
work and a redelivered copy of one attempt for a duplicate."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from skbqa.bus import topics
from skbqa.bus.memory import MemoryBus
from skbqa.serving.gateway.bus_backend import MAX_RESENDS, BusBackend
from skbqa.serving.stages.core import AnswerEnvelope, StageMessage
from skbqa.serving.worker import delivery_key


@contextmanager
def gateway(resend_after_s: float) -> Iterator[tuple[MemoryBus, Any, BusBackend]]:
    """An in-memory bus, a probe reading what the gateway publishes to skbqa.query, and a ready gateway."""
    bus = MemoryBus()
    bus.ensure_topics(topics.ALL)
    queries = bus.consumer([topics.QUERY], group="probe", from_beginning=False)
    backend = BusBackend(bus, resend_after_s=resend_after_s)
    try:
        assert backend.wait_ready(5)
        yield bus, queries, backend
    finally:
        backend.close()
        bus.close()


def published(consumer, within_s: float) -> list[StageMessage]:
    found: list[StageMessage] = []
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        found += [StageMessage.FromString(m.value) for m in consumer.poll(0.05, 64)]
    return found


def test_an_unanswered_request_is_published_again_as_its_next_attempt_and_an_answered_one_is_not() -> None:
    with gateway(0.2) as (bus, queries, backend):
        lost = backend.submit(StageMessage(request_id="r-lost", question="q", strategy="bm25", k=1), 5)
        answered = backend.submit(StageMessage(request_id="r-answered", question="q", strategy="bm25", k=1), 5)
        final = AnswerEnvelope(request_id="r-answered", gateway_id=backend.gateway_id, kind=AnswerEnvelope.FINAL)
        bus.publish(topics.ANSWER, "r-answered", final.SerializeToString())
        assert answered.next(5).kind == AnswerEnvelope.FINAL

        # 0.2 s, then 0.4 s more: every attempt up to MAX_RESENDS, none after it
        copies = published(queries, 2.5)
        attempts = sorted((m.request_id, m.attempt) for m in copies)
        assert attempts == [("r-answered", 0), *(("r-lost", a) for a in range(MAX_RESENDS + 1))]

        reply = AnswerEnvelope(request_id="r-lost", gateway_id=backend.gateway_id, kind=AnswerEnvelope.FINAL)
        bus.publish(topics.ANSWER, "r-lost", reply.SerializeToString())
        assert lost.next(5).kind == AnswerEnvelope.FINAL


def test_a_request_near_its_deadline_gets_no_new_copy() -> None:
    with gateway(0.2) as (_, queries, backend):
        soon = int(time.time() * 1000) + 250  # when a copy is due (0.2 s), less than half the wait is left
        backend.submit(
            StageMessage(request_id="r-soon", question="q", strategy="bm25", k=1, deadline_unix_ms=soon), 5
        )
        assert [m.attempt for m in published(queries, 1.0)] == [0]


def test_stages_remember_a_message_by_its_request_and_attempt() -> None:
    first = StageMessage(request_id="r")
    again = StageMessage(request_id="r", attempt=1)
    assert delivery_key(first) == "r" and delivery_key(again) != delivery_key(first)
    assert delivery_key(StageMessage(request_id="r", attempt=1)) == delivery_key(again)
