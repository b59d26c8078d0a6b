"""Faults of the distributed stack, on a stack of their own (real processes: tansu on durable s3rver storage,
Triton, one process per service): a broker restart mid-stream, a poison message, the encoder server lost.
(The kill -9 tests are in test_faults_stack.py; see docs/distributed.md for why the broker restart gets a fresh
stack.)

Each test sends requests while the fault happens and checks that every accepted request is answered (correctly:
the embedded engine's ranking) or ends with a clear status — none is lost, none hangs.
"""

from __future__ import annotations

import json
import shutil
import time

import grpc
import pytest

from skbqa.bus import topics
from skbqa.bus.kafka import KafkaBus
from skbqa.distributed.stages import AnswerEnvelope, StageMessage
from skbqa.v1 import api_pb2, stages_pb2
from tests.integration.fault_matrix import record
from tests.integration.fault_stack import QUESTIONS, check, durable_stack, embedded_rankings, storm, stub_for

pytestmark = [
    pytest.mark.distributed,
    pytest.mark.kafka,
    pytest.mark.triton,
    pytest.mark.timeout(900),
    pytest.mark.skipif(shutil.which("npx") is None, reason="the durable broker needs npx (s3rver)"),
]


@pytest.fixture(scope="module")
def stack(biomed_sample_engine, tmp_path_factory):
    running = durable_stack(biomed_sample_engine.stores.directory, tmp_path_factory.mktemp("fault-stack"))
    yield running
    running.down()


@pytest.fixture(scope="module")
def expected(biomed_sample_engine):
    return embedded_rankings(biomed_sample_engine)


def test_broker_restart_mid_stream_answers_every_accepted_request(stack, expected) -> None:
    questions = QUESTIONS * 2
    result = storm(stack, lambda: stack.restart_broker(down_s=1.0), questions, timeout_s=180)
    # calls that reached the gateway while the broker was down are refused UNAVAILABLE (nothing accepted);
    # every call accepted before or after is answered once, correctly
    check(result, questions, expected, "broker restart (s3 storage) mid-stream", "accepted ones answered")
    assert all(code == grpc.StatusCode.UNAVAILABLE for code in result["statuses"].values())
    assert len(result["answers"]) >= len(questions) // 2
    # and the stack is whole again afterwards
    reply = stub_for(stack).Ask(api_pb2.AskRequest(question=QUESTIONS[0]), timeout=120)
    assert [i.node_id for i in reply.items] == expected[QUESTIONS[0]]


def test_poison_message_goes_to_the_dead_letter_topic_with_its_error(stack) -> None:
    bus = KafkaBus(stack.ports["bus"].removeprefix("kafka://"), session_timeout_ms=2000, heartbeat_interval_ms=500)
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
        letter, envelope = None, None
        deadline = time.monotonic() + 60
        while (letter is None or envelope is None) and time.monotonic() < deadline:
            for message in dead.poll(0.5):
                if message.key == "poison-1":
                    letter = message
            for message in answers.poll(0.1, 100):
                if message.key == "poison-1":
                    envelope = AnswerEnvelope.FromString(message.value)
        assert letter is not None and letter.headers["skbqa-stage"] == "ranking"
        assert letter.headers["skbqa-attempts"] == "3" and "IndexError" in letter.headers["skbqa-error"]
        assert envelope is not None and envelope.kind == AnswerEnvelope.ERROR
        assert envelope.status_code == grpc.StatusCode.INTERNAL.value[0]
        assert "poison-1" in envelope.status_message and "after 3 attempt(s)" in envelope.status_message
        record("poison message (fails every attempt)", "dead-lettered after 3 attempts, ERROR answer", 1, 0, 1)
        dead.close()
        answers.close()
    finally:
        bus.close()


def test_encoder_server_lost_gives_degraded_answers_not_errors(stack) -> None:
    """Last in this module: it stops Triton for good."""
    stack.stop_one("triton")
    stub = stub_for(stack)
    replies = [stub.Ask(api_pb2.AskRequest(question=q), timeout=120) for q in QUESTIONS[:5]]
    assert all(r.degraded and r.items for r in replies)
    notes = json.loads(replies[0].notes_json)["degraded"]
    assert notes["requested_strategy"] == "af" and notes["answered_by"] == "bm25"
    assert "encoder unavailable" in notes["reason"]
    record("Triton encoder server stopped", "degraded answers (bm25), flagged", 5, 5)
