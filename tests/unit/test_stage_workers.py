"""The bus shell of a stage (StageWorker) and the gateway's answer routing (BusBackend), over the in-memory bus:
at-least-once delivery, retries then dead-letter, permanent errors answered at once, expired deadlines,
duplicates skipped, and replicas sharing a topic."""

from __future__ import annotations

import time
import uuid

import pytest

from skbqa.bus import topics
from skbqa.bus.memory import MemoryBus
from skbqa.common.errors import BackendUnavailableError, InvalidInputError
from skbqa.serving.gateway.bus_backend import BusBackend
from skbqa.serving.stages.core import AnswerEnvelope, StageMessage, StageOutput
from skbqa.serving.status import DEADLINE_EXCEEDED, INVALID_ARGUMENT, UNAVAILABLE
from skbqa.serving.worker import StageWorker
from tests.fakes.pipeline import read_answers


class EchoRanker:
    """A last stage: answers every request with its question as the answer's text."""

    role, input_topic, output_topic = "reranker", topics.RANKED, topics.ANSWER

    def __init__(self, fail_times: int = 0, error: Exception | None = None) -> None:
        self.calls = 0
        self.fail_times = fail_times
        self.error = error or BackendUnavailableError("backend down")

    def warm(self) -> None:
        pass

    def process(self, message: StageMessage) -> StageOutput:
        self.calls += 1
        if self.calls <= self.fail_times:
            raise self.error
        answer = AnswerEnvelope(
            request_id=message.request_id,
            kind=AnswerEnvelope.FINAL,
            stage=self.role,
            answer=message.question.encode(),
            gateway_id=message.gateway_id,
        )
        return StageOutput(None, [answer])


def _request(question: str = "q", *, deadline_ms: int = 0) -> StageMessage:
    return StageMessage(
        request_id=uuid.uuid4().hex, question=question, strategy="af", k=5, deadline_unix_ms=deadline_ms
    )


@pytest.fixture
def bus():
    memory = MemoryBus()
    yield memory
    memory.close()


def test_answers_every_request_and_commits(bus) -> None:
    worker = StageWorker(EchoRanker(), bus, poll_timeout_s=0.02).start()
    try:
        sent = [_request(f"q{i}") for i in range(20)]
        for message in sent:
            bus.publish(topics.RANKED, message.request_id, message.SerializeToString())
        answers = read_answers(bus, 20)
        assert sorted(a.answer.decode() for a in answers) == sorted(m.question for m in sent)
        deadline = time.monotonic() + 5
        while bus.lag(worker.group, [topics.RANKED])[topics.RANKED] and time.monotonic() < deadline:
            time.sleep(0.05)
        assert bus.lag(worker.group, [topics.RANKED])[topics.RANKED] == 0
    finally:
        worker.stop()


def test_transient_failure_is_retried(bus) -> None:
    core = EchoRanker(fail_times=2)
    worker = StageWorker(core, bus, poll_timeout_s=0.02, retry_backoff_s=0.01).start()
    try:
        message = _request("retry me")
        bus.publish(topics.RANKED, message.request_id, message.SerializeToString())
        (answer,) = read_answers(bus, 1)
        assert answer.kind == AnswerEnvelope.FINAL and core.calls == 3
    finally:
        worker.stop()


def test_failing_for_good_goes_to_dead_letter_with_a_clear_status(bus) -> None:
    worker = StageWorker(EchoRanker(fail_times=99), bus, poll_timeout_s=0.02, retry_backoff_s=0.01).start()
    dead = bus.consumer([topics.DEAD_LETTER], group="dlq-probe")
    try:
        message = _request("poison")
        bus.publish(topics.RANKED, message.request_id, message.SerializeToString())
        (answer,) = read_answers(bus, 1)
        assert answer.kind == AnswerEnvelope.ERROR and answer.status_code == UNAVAILABLE
        assert "backend down" in answer.status_message and "after 3 attempt(s)" in answer.status_message
        letters = []
        deadline = time.monotonic() + 5
        while not letters and time.monotonic() < deadline:
            letters = dead.poll(0.1)
        assert letters and letters[0].key == message.request_id
        assert "BackendUnavailableError: backend down" in letters[0].headers["skbqa-error"]
        assert StageMessage.FromString(letters[0].value).question == "poison"
    finally:
        dead.close()
        worker.stop()


def test_invalid_input_is_answered_at_once_not_retried(bus) -> None:
    core = EchoRanker(fail_times=99, error=InvalidInputError("alpha must be within [0, 1]"))
    worker = StageWorker(core, bus, poll_timeout_s=0.02).start()
    try:
        message = _request()
        bus.publish(topics.RANKED, message.request_id, message.SerializeToString())
        (answer,) = read_answers(bus, 1)
        assert answer.status_code == INVALID_ARGUMENT and core.calls == 1
    finally:
        worker.stop()


def test_expired_deadline_is_answered_without_computing(bus) -> None:
    core = EchoRanker()
    worker = StageWorker(core, bus, poll_timeout_s=0.02).start()
    try:
        message = _request(deadline_ms=int(time.time() * 1000) - 1)
        bus.publish(topics.RANKED, message.request_id, message.SerializeToString())
        (answer,) = read_answers(bus, 1)
        assert answer.status_code == DEADLINE_EXCEEDED and core.calls == 0
    finally:
        worker.stop()


def test_redelivered_request_is_skipped_once_published(bus) -> None:
    core = EchoRanker()
    worker = StageWorker(core, bus, poll_timeout_s=0.02).start()
    try:
        message = _request()
        for _ in range(3):  # the same request delivered three times (a producer retry, a rebalance)
            bus.publish(topics.RANKED, message.request_id, message.SerializeToString())
        answers = read_answers(bus, 3, timeout_s=1.0)
        assert len(answers) == 1 and core.calls == 1
    finally:
        worker.stop()


def test_two_replicas_share_a_topic(bus) -> None:
    bus.ensure_topics([topics.RANKED], partitions=4)
    cores = [EchoRanker(), EchoRanker()]
    workers = [StageWorker(core, bus, poll_timeout_s=0.02).start() for core in cores]
    try:
        for i in range(40):
            message = _request(f"q{i}")
            bus.publish(topics.RANKED, message.request_id, message.SerializeToString())
        assert len(read_answers(bus, 40)) == 40
        assert all(core.calls > 0 for core in cores) and sum(c.calls for c in cores) == 40
    finally:
        for worker in workers:
            worker.stop()


def test_gateway_backend_routes_answers_to_the_waiting_call_only(bus) -> None:
    worker = StageWorker(EchoRanker(), bus, poll_timeout_s=0.02).start()
    first, second = BusBackend(bus, gateway_id="gw-a"), BusBackend(bus, gateway_id="gw-b")
    try:
        assert first.wait_ready(5) and second.wait_ready(5)

        def relay(message: StageMessage) -> None:  # stands in for the stages between query and reranker
            bus.publish(topics.RANKED, message.request_id, message.SerializeToString())

        relay_consumer = bus.consumer([topics.QUERY], group="relay")
        waiter_a = first.submit(_request("for a"))
        waiter_b = second.submit(_request("for b"))
        moved = 0
        deadline = time.monotonic() + 5
        while moved < 2 and time.monotonic() < deadline:
            for m in relay_consumer.poll(0.1):
                relay(StageMessage.FromString(m.value))
                moved += 1
        assert waiter_a.next(5).answer == b"for a"
        assert waiter_b.next(5).answer == b"for b"
        with pytest.raises(TimeoutError):
            waiter_a.next(0.2)  # nothing else arrives for this call
        relay_consumer.close()
    finally:
        first.close()
        second.close()
        worker.stop()


def test_undecodable_message_is_dead_lettered_and_the_worker_keeps_going(bus) -> None:
    worker = StageWorker(EchoRanker(), bus, poll_timeout_s=0.02).start()
    dead = bus.consumer([topics.DEAD_LETTER], group="dlq-probe-2")
    try:
        bus.publish(topics.RANKED, "garbage-1", b"\xff\xfe not a protobuf \x00\x01")
        good = _request("after the garbage")
        bus.publish(topics.RANKED, good.request_id, good.SerializeToString())
        answers = read_answers(bus, 2)
        by_id = {a.request_id: a for a in answers}
        assert by_id["garbage-1"].status_code == INVALID_ARGUMENT
        assert by_id[good.request_id].kind == AnswerEnvelope.FINAL
        letters = []
        deadline = time.monotonic() + 5
        while not letters and time.monotonic() < deadline:
            letters = dead.poll(0.1)
        assert letters[0].key == "garbage-1" and letters[0].headers["skbqa-attempts"] == "1"
    finally:
        dead.close()
        worker.stop()
