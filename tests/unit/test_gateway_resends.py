"""A request the pipeline lost (acknowledged by the bus, then never handled) is sent again under an alias id once
no stage holds it, and its call is answered; a request a stage still holds is never sent twice."""

from __future__ import annotations

import threading

from skbqa.bus import topics
from skbqa.bus.memory import MemoryBus
from skbqa.serving.gateway.bus_backend import BusBackend
from skbqa.serving.stages.core import AnswerEnvelope, StageMessage
from tests.unit.test_late_answers import outcome


class OneStage:
    """The parser's group on skbqa.query: answers each request with a final, except those `drop` says to lose
    (read and committed, never answered: the record is gone); `hold_s` keeps a request uncommitted that long."""

    def __init__(self, bus: MemoryBus, drop: set[str], hold_s: float = 0.0) -> None:
        self.seen: list[str] = []
        self._bus, self._drop, self._hold_s = bus, drop, hold_s
        self._stop = threading.Event()
        self._consumer = bus.consumer([topics.QUERY], group="skbqa-parser")
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            batch = self._consumer.poll(0.05, 16)
            for message in batch:
                request = StageMessage.FromString(message.value)
                self.seen.append(request.request_id)
                if request.request_id in self._drop:
                    continue
                self._stop.wait(self._hold_s)  # computing: the input stays uncommitted, the lag counts it
                final = AnswerEnvelope(
                    request_id=request.request_id, gateway_id=request.gateway_id, kind=AnswerEnvelope.FINAL
                )
                self._bus.publish(topics.ANSWER, request.request_id, final.SerializeToString())
            if batch:
                self._consumer.commit(batch)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)


def run(drop: set[str], hold_s: float, request_id: str) -> tuple[AnswerEnvelope, set[str], list[str], float]:
    bus = MemoryBus()
    bus.ensure_topics(topics.ALL)
    backend = BusBackend(bus, stall_s=0.4, resend_after_s=0.3)  # lag checked every 0.2 s
    stage = OneStage(bus, drop, hold_s)
    resent = outcome("resent")
    try:
        assert backend.wait_ready(5)
        waiter = backend.submit(StageMessage(request_id=request_id, question="q", strategy="bm25", k=1), 10)
        final = waiter.next(10)
        backend.forget(waiter)
        return final, set(waiter.ids), list(stage.seen), outcome("resent") - resent
    finally:
        stage.stop()
        backend.close()
        bus.close()


def test_a_lost_request_is_sent_again_under_an_alias_and_answered() -> None:
    final, ids, seen, resent = run({"r-lost"}, 0.0, "r-lost")
    assert final.kind == AnswerEnvelope.FINAL
    assert final.request_id == "r-lost~1" and ids == {"r-lost", "r-lost~1"}
    assert seen == ["r-lost", "r-lost~1"] and resent == 1


def test_a_request_a_stage_still_holds_is_not_sent_again() -> None:
    final, ids, seen, resent = run(set(), 1.5, "r-slow")  # computed for 5x the resend delay
    assert final.request_id == "r-slow" and ids == {"r-slow"}
    assert seen == ["r-slow"] and resent == 0
