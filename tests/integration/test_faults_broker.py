"""Faults of the distributed stack around its broker and its encoder server, on a stack of their own (real
processes: tansu on durable s3 storage served by moto, Triton, one process per service): a broker crash mid-stream, a poison
message, the encoder server lost. (The kill -9 of stage workers and the LLM endpoint faults are in
test_faults_stack.py; the broker crash gets a stack of its own so that its group rejoins do not slow those.)

Every call goes through AskStream and is sorted by fault_matrix.tally into answered correctly (the embedded
engine's ranking) / a clear non-OK status / lost (no answer in time, or a wrong one); each test asserts nothing
was lost and no call saw two final answers, and records its row of the fault matrix.
"""

from __future__ import annotations

import importlib.util
import json
import os
import time

import grpc
import pytest

from skbqa.bus import topics
from skbqa.bus.kafka import KafkaBus
from skbqa.serving.stages.core import AnswerEnvelope, StageMessage
from skbqa.v1 import stages_pb2
from tests.integration.fault_matrix import Call, record, tally
from tests.integration.fault_stack import (
    QUESTIONS,
    crash_broker,
    durable_stack,
    embedded_rankings,
    expected_by_index,
    messages,
    storm,
    trace,
    wait_gateway_serving,
)

pytestmark = [
    pytest.mark.slow,  # a durable stack of its own and a broker crash: CI runs it with -m slow
    pytest.mark.distributed,
    pytest.mark.kafka,
    pytest.mark.triton,
    pytest.mark.timeout(900),
    # moto (the durable broker's object store) comes with skbqa[kafka]: on CI its absence must fail, not skip.
    pytest.mark.skipif(
        importlib.util.find_spec("moto") is None and not os.environ.get("CI"),
        reason="the durable broker needs moto: pip install 'skbqa[kafka]'",
    ),
]


@pytest.fixture(scope="module")
def stack(biomed_sample_engine, tmp_path_factory):
    running = durable_stack(biomed_sample_engine.stores.directory, tmp_path_factory.mktemp("fault-stack"))
    yield running
    running.down()


@pytest.fixture(scope="module")
def expected(biomed_sample_engine):
    return embedded_rankings(biomed_sample_engine)


def test_broker_crash_mid_stream_answers_every_accepted_request_once(stack, expected) -> None:
    """SIGKILL of tansu (s3 storage on moto) while calls are in flight; its launcher restarts it on the same port
    and object store."""
    questions = QUESTIONS * 2
    duplicates_before = messages(stack, "gateway-0", "duplicate")
    resent_before = messages(stack, "gateway-0", "resent")
    window: dict[str, float] = {}
    evidence: dict[str, object] = {}

    def fault() -> None:
        window["crash"] = time.monotonic()
        evidence.update(crash_broker(stack))
        window["back"] = time.monotonic()
        window["serving"] = wait_gateway_serving(stack)

    # 4 answers first, so the crash lands mid-stream with 4 calls in flight
    calls, seconds = storm(stack, questions, fault, timeout_s=180, fault_after_answers=4)
    result = tally(calls, expected_by_index(questions, expected))
    # calls in flight across the crash: begun before it, ended after the broker was back
    across = [c for c in calls if c.began < window["crash"] and c.ended > window["back"]]
    dropped = messages(stack, "gateway-0", "duplicate") - duplicates_before
    lost_ids = [
        c.request_id for c in calls if c.status == "DEADLINE_EXCEEDED" or (c.status is None and not c.finals)
    ]
    try:  # where the lost calls stopped: evidence for the row, never the reason this test fails
        lost = trace(stack, lost_ids)
    except Exception as exc:
        lost = {"trace failed": str(exc)[:200]}
    record(
        "broker crash: SIGKILL of tansu (s3 storage on moto), restarted after 2 s",
        "accepted calls answered after the restart; calls made while it was down refused UNAVAILABLE",
        result,
        seconds=seconds,
        duplicates_dropped=dropped,
        module=__name__,
        in_flight_across_crash=len(across),
        # requests the gateway sent again because no stage held them (docs/distributed.md)
        resent=messages(stack, "gateway-0", "resent") - resent_before,
        gateway_serving_after_crash_s=round(window["serving"] - window["crash"], 1),
        in_flight_across_crash_answered=sum(1 for c in across if c.status is None and c.finals),
        lost_requests_records_per_topic=lost,
        **evidence,
    )
    assert evidence["object_store_pid_kept"]  # only tansu died: the object store (the "disk") kept running
    # each lost call: its status and message, when it began relative to the crash, how long it lasted
    timeline = {
        c.request_id: (c.status, c.detail, round(c.began - window["crash"], 1), round(c.ended - c.began, 1))
        for c in calls
        if c.request_id in lost_ids
    }
    # a string, so that pytest shows all of it (it shortens the repr of any other object)
    why = json.dumps(
        {"result": str(result), "trace": lost, "timeline": timeline, "evidence": evidence}, default=str
    )
    assert result.accounted and result.lost == 0, why
    assert result.duplicates_delivered == 0, result  # no call saw a second final answer
    assert set(result.clear_status) <= {"UNAVAILABLE"}, result.clear_status  # refused while it was down
    # how many calls fall in the outage depends on how fast refusals come back and when the gateway's health
    # watcher next probes the broker, not on the stack: what must hold is that every call begun once the gateway
    # reported SERVING again was answered
    after_serving = [c for c in calls if c.began > window["serving"]]
    assert all(c.status is None and c.finals for c in after_serving), [(c.status, c.detail) for c in after_serving]
    # the crash caught accepted calls in flight, and they were answered after it (a call still being submitted
    # when the broker died may instead be refused UNAVAILABLE: a clear status, counted above)
    assert any(c.finals for c in across), [(c.status, len(c.finals)) for c in across]
    # and the stack is whole again afterwards: a full round under the same load is answered, every call right
    again, _ = storm(stack, QUESTIONS, timeout_s=180)
    recovered = tally(again, expected_by_index(QUESTIONS, expected))
    assert recovered.answered == len(QUESTIONS) and recovered.lost == 0, recovered


def test_poison_message_goes_to_the_dead_letter_topic_with_its_error(stack) -> None:
    bus = KafkaBus(stack.ports["bus"].removeprefix("kafka://"), session_timeout_ms=2000, heartbeat_interval_ms=500)
    began = time.monotonic()
    try:
        dead = bus.consumer([topics.DEAD_LETTER], group="fault-test-dlq", from_beginning=False)
        answers = bus.consumer([topics.ANSWER], group="fault-test-answers", from_beginning=False)
        # evidence for a triplet the query does not have: the ranking stage fails on it every time
        poison = StageMessage(
            request_id="poison-1", question="q", strategy="af", k=5, scope_set=True, parsed_set=True
        )
        poison.parsed.target = "x"
        poison.scope.CopyFrom(
            stages_pb2.Scope(
                grounded=True, candidates=[1], levels=[1], has_result=True,
                evidence=[stages_pb2.TripletEvidence(triplet_index=99, other_symbol="y", target=[1], other=[2])],
            )
        )  # fmt: skip
        bus.publish(topics.GROUNDED, poison.request_id, poison.SerializeToString())
        letter, envelopes = None, []
        deadline = time.monotonic() + 60
        while (letter is None or not envelopes) and time.monotonic() < deadline:
            for message in dead.poll(0.5):
                if message.key == "poison-1":
                    letter = message
            for message in answers.poll(0.1, 100):
                if message.key == "poison-1":
                    envelopes.append(AnswerEnvelope.FromString(message.value))
        dead.close()
        answers.close()
    finally:
        bus.close()
    # what the gateway would hand the client: the envelope's status (a final would be an answer)
    call = Call(0)
    for envelope in envelopes:
        if envelope.kind == AnswerEnvelope.ERROR:
            call.status = next(c.name for c in grpc.StatusCode if c.value[0] == envelope.status_code)
        elif envelope.kind == AnswerEnvelope.FINAL:
            call.finals.append([])
    result = tally([call], {0: []})
    record(
        "poison message (the ranking stage fails on it every attempt)",
        "dead-lettered with its error; the client gets INTERNAL",
        result,
        seconds=time.monotonic() - began,
        module=__name__,
        dead_letter_headers=dict(letter.headers) if letter is not None else None,
    )
    assert letter is not None and letter.headers["skbqa-stage"] == "ranking"
    assert letter.headers["skbqa-attempts"] == "3" and "IndexError" in letter.headers["skbqa-error"]
    assert len(envelopes) == 1 and envelopes[0].kind == AnswerEnvelope.ERROR
    assert result.clear_status == {"INTERNAL": 1} and result.lost == 0, result
    assert "poison-1" in envelopes[0].status_message and "after 3 attempt(s)" in envelopes[0].status_message


def test_encoder_server_lost_gives_degraded_answers_not_errors(stack, biomed_sample_engine) -> None:
    """Last in this module: it stops Triton for good. The answers must be the embedded BM25 ranking, flagged."""
    questions = QUESTIONS[:5]
    bm25 = {
        i: [n.node_id for n in biomed_sample_engine.ask(q, strategy="bm25").items] for i, q in enumerate(questions)
    }
    stack.stop_one("triton")
    calls, seconds = storm(stack, questions, None, timeout_s=120, concurrency=1)
    result = tally(calls, bm25)
    degraded = [c.notes[0].get("degraded", {}) for c in calls if c.notes]
    record(
        "Triton encoder server stopped",
        "degraded answers (BM25), flagged degraded",
        result,
        seconds=seconds,
        module=__name__,
        flagged_degraded=sum(1 for c in calls if c.degraded and c.degraded[0]),
        answered_by=sorted({d.get("answered_by", "") for d in degraded}),
    )
    assert result.answered == len(questions) and result.duplicates_delivered == 0, result
    assert all(c.degraded == [True] for c in calls)
    assert all(d["requested_strategy"] == "af" and d["answered_by"] == "bm25" for d in degraded)
    assert all("encoder unavailable" in d["reason"] for d in degraded)
