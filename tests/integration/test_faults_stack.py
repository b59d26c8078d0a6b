"""Faults of the distributed stack's workers, with real processes (tansu, Triton, one process per service; the broker
keeps running, so it runs on memory storage): kill -9 of each stage worker with requests certainly in flight, and the parser service's
LLM endpoint slow or down. (The broker crash, the poison message and the encoder server lost are in
test_faults_broker.py.)

kill -9 with work certainly in flight: the target worker is frozen (SIGSTOP) until all 16 requests wait at its
input, then resumed with its commit held (the worker's fault-injection file, serving/worker.py), so that once its
``ok`` counter moves it has published outputs whose input offsets are not committed — then SIGKILLed. The test then checks that those requests were redelivered to the
restarted replica (it processes exactly what was uncommitted), that the copies of outputs already published were
dropped downstream as duplicates, and that every client got exactly one final answer, the embedded ranking.
"""

from __future__ import annotations

import signal
import time
from contextlib import suppress

import pytest

from skbqa.bus import topics
from skbqa.bus.kafka import KafkaBus
from tests.fakes.openai_server import FakeOpenAIServer
from tests.integration.fault_matrix import record, tally
from tests.integration.fault_stack import (
    QUESTIONS,
    counter,
    durable_stack,
    embedded_rankings,
    expected_by_index,
    messages,
    metrics_port,
    signal_service,
    storm,
    trace,
)

pytestmark = [
    pytest.mark.slow,  # a stack of its own and minutes of faults: CI runs it with -m slow
    pytest.mark.distributed,
    pytest.mark.kafka,
    pytest.mark.triton,
    pytest.mark.timeout(900),
]

ROLES = ["parser", "symbols", "grounding", "ranking", "reranker"]
INPUT = {
    "parser": topics.QUERY,
    "symbols": topics.PARSED,
    "grounding": topics.SYMBOLS,
    "ranking": topics.GROUNDED,
    "reranker": topics.RANKED,
}
SERVICES = [*(f"{role}-0" for role in ROLES), "gateway-0"]


@pytest.fixture(scope="module")
def fault_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("faults")


@pytest.fixture(scope="module")
def stack(biomed_sample_engine, tmp_path_factory, fault_dir):
    with pytest.MonkeyPatch.context() as env:
        env.setenv("SKBQA_FAULT_DIR", str(fault_dir))  # every service process (and restart) inherits it
        # The broker keeps running through these faults, so its storage needs no durability (see durable_stack).
        running = durable_stack(
            biomed_sample_engine.stores.directory, tmp_path_factory.mktemp("fault-stack"), broker_storage="memory"
        )
        yield running
        running.down()


@pytest.fixture(scope="module")
def expected(biomed_sample_engine):
    return embedded_rankings(biomed_sample_engine)


@pytest.fixture(scope="module")
def bus(stack):
    admin = KafkaBus(stack.ports["bus"].removeprefix("kafka://"))
    yield admin
    admin.close()


def _wait_for(check, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


@pytest.mark.parametrize("role", ROLES)
def test_kill_9_of_a_stage_worker_with_work_in_flight_loses_no_request(
    stack, expected, bus, fault_dir, role
) -> None:
    name, group, topic = f"{role}-0", f"skbqa-{role}", INPUT[role]
    questions = QUESTIONS[:16]

    def pending() -> int:
        return bus.lag(group, [topic])[topic]

    def settled_pending(reads: int = 4, every_s: float = 0.4) -> int:
        """The group's uncommitted count once `reads` reads in a row agree (a commit sent just before the kill
        can land late)."""
        values = [pending()]
        while len(values) < reads or len(set(values[-reads:])) > 1:
            time.sleep(every_s)
            values.append(pending())
        return values[-1]

    _wait_for(lambda: pending() == 0, 60, f"{group} to have committed everything before the test")
    ok_before = messages(stack, name, "ok")
    others = [s for s in SERVICES if s != name]
    duplicates_before = {s: messages(stack, s, "duplicate") for s in others}
    evidence: dict[str, int] = {}
    hold = fault_dir / f"hold-commit-{role}"

    def fault() -> None:
        _wait_for(lambda: pending() == len(questions), 90, f"all {len(questions)} requests queued for {name}")
        hold.touch()  # the worker now keeps each handled batch uncommitted after publishing its outputs
        signal_service(stack, name, signal.SIGCONT)
        _wait_for(lambda: messages(stack, name, "ok") > ok_before, 60, f"{name} to publish an output")
        processed = messages(stack, name, "ok") - ok_before  # outputs published (counted after publishing)
        stack.kill(name)  # SIGKILL: no clean shutdown, no commit
        hold.unlink()  # the restarted worker commits as usual
        evidence.update(processed_before_kill=processed, uncommitted_at_kill=settled_pending())
        evidence["committed_at_kill"] = len(questions) - evidence["uncommitted_at_kill"]
        stack.start_service(role, 0)  # its group resumes from the last commit

    signal_service(stack, name, signal.SIGSTOP)  # so that every request queues at its input
    try:
        calls, seconds = storm(stack, questions, fault, timeout_s=150, concurrency=len(questions))
    finally:
        hold.unlink(missing_ok=True)
        with suppress(ProcessLookupError):
            signal_service(stack, name, signal.SIGCONT)  # never leave a frozen worker behind a failed test
    result = tally(calls, expected_by_index(questions, expected))
    lost = trace(stack, [c.request_id for c in calls if c.status is not None or not c.finals])
    held = evidence["processed_before_kill"] - evidence["committed_at_kill"]

    def dropped_downstream() -> int:
        return sum(messages(stack, s, "duplicate") - duplicates_before[s] for s in others)

    # every client has its answer, but the restarted worker may still be re-processing requests answered before
    # the kill (their copies are dropped downstream): the assertions below report a shortfall with the evidence
    with suppress(AssertionError):
        _wait_for(lambda: messages(stack, name, "ok") >= evidence["uncommitted_at_kill"], 60, "redelivery")
        _wait_for(lambda: dropped_downstream() >= held, 30, "the copies dropped downstream")
    redelivered = messages(stack, name, "ok")  # the restarted process counts from zero
    dropped = dropped_downstream()
    record(
        f"kill -9 of the {role} worker holding uncommitted work, restarted",
        "the uncommitted requests redelivered to the restarted worker; every call answered once",
        result,
        seconds=seconds,
        duplicates_dropped=dropped,
        module=__name__,
        held_processed_uncommitted=held,
        redelivered_and_processed=redelivered,
        lost_requests_records_per_topic=lost,
        **evidence,
    )
    assert held >= 1, evidence  # the killed worker had published outputs it had not committed
    assert redelivered >= evidence["uncommitted_at_kill"], (redelivered, evidence)
    assert dropped >= held, (dropped, held)  # the re-published copies were dropped, not delivered
    assert result.accounted and result.lost == 0 and not result.clear_status, (result, lost)
    assert result.answered == len(questions) and result.duplicates_delivered == 0, result


@pytest.mark.parametrize("mode", ["slow", "down"])
def test_llm_endpoint_fault_in_the_parser_service_falls_back(stack, expected, monkeypatch, mode) -> None:
    """The parser service on an OpenAI-compatible endpoint that is slow (5 s, against a 0.5 s timeout) or down:
    answers still come, from the encoder parser, with the fallback in the answer's notes and in the metric."""
    fake = FakeOpenAIServer(default_reply="}}}} this is not Cypher ((((").start()
    url = fake.url
    if mode == "down":
        fake.stop()
    else:
        fake.delay = 5.0
    questions = QUESTIONS[:4]
    try:
        # the stack's processes inherit the test's environment when they start: set it for the parser only
        with monkeypatch.context() as env:
            env.setenv("SKBQA_LLM_URL", url)
            env.setenv("SKBQA_LLM_MODEL", "fake")
            env.setenv("SKBQA_LLM_TIMEOUT", "0.5")
            env.setenv("SKBQA_LLM_RETRIES", "1")
            stack.stop_one("parser-0")
            stack.start_service("parser", 0)
        calls, seconds = storm(stack, questions, None, timeout_s=60, concurrency=2)
        fallbacks = counter(
            metrics_port(stack, "parser-0"), "skbqa_errors_total", stage="parser", kind="llm_fallback"
        )
        result = tally(calls, expected_by_index(questions, expected))
        notes = [c.notes[0] for c in calls if c.notes]
        record(
            f"LLM endpoint {mode} (parser service, distributed)",
            "answered by the encoder parser; fallback in the answer notes and skbqa_errors_total{kind=llm_fallback}",
            result,
            seconds=seconds,
            module=__name__,
            llm_fallback_metric=int(fallbacks),
            notes_with_parser_fallback=sum(1 for n in notes if "parser_fallback" in n),
            llm_requests_seen=fake.count,
        )
        assert result.answered == len(questions) and result.lost == 0 and result.duplicates_delivered == 0, result
        assert all("encoder parser used" in n.get("parser_fallback", "") for n in notes), notes
        assert fallbacks >= len(questions)
        assert max(c.ended - c.began for c in calls) < 30  # bounded by timeout x attempts, never a hang
        if mode == "slow":
            assert fake.count >= len(questions)  # the parser did call it, and gave up in time
    finally:
        fake.stop()
        stack.stop_one("parser-0")  # back to the parser without an LLM for whatever runs next
        stack.start_service("parser", 0)
