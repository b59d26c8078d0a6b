"""`skbqa.v1.Stage/Process` over real gRPC (one in-process server per stage on 127.0.0.1, a free port each), on
the real sample index: every stage's Process gives what calling its core gives, the five chained give the
embedded engine's ranking and what the bus workers give; bad input is INVALID_ARGUMENT with one line; a passed
deadline is DEADLINE_EXCEEDED without computing; a call in progress counts in skbqa_inflight."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import grpc
import pytest

from skbqa.bus import topics
from skbqa.bus.memory import MemoryBus
from skbqa.observability.metrics import get_metrics
from skbqa.serving import codec
from skbqa.serving.stage_service import StageServicer
from skbqa.serving.stage_versions import VersionUnavailableError
from skbqa.serving.stages.core import ROLES, AnswerEnvelope, StageCore, StageMessage, StageOutput, StageRuntime
from skbqa.serving.stages.registry import build_stage, run_stage
from skbqa.serving.worker import StageWorker
from skbqa.v1 import api_pb2, stages_pb2, stages_pb2_grpc
from tests.conftest import SAMPLE_BUNDLE
from tests.fakes.backends import GatedStageCore

QUESTIONS = [json.loads(line)["question"] for line in (SAMPLE_BUNDLE / "qa.jsonl").read_text().splitlines()]


def serve(core: StageCore) -> tuple[grpc.Server, stages_pb2_grpc.StageStub, grpc.Channel]:
    server = grpc.server(ThreadPoolExecutor(4))
    stages_pb2_grpc.add_StageServicer_to_server(StageServicer(core), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    return server, stages_pb2_grpc.StageStub(channel), channel


@pytest.fixture(scope="module")
def runtime(biomed_sample_engine) -> StageRuntime:
    engine = biomed_sample_engine
    return StageRuntime(engine.stores, engine.encoder, engine.strategies)


@pytest.fixture(scope="module")
def cores(runtime) -> dict[str, StageCore]:
    return {role: build_stage(role, runtime) for role in ROLES}


@pytest.fixture(scope="module")
def stubs(cores) -> Iterator[dict[str, stages_pb2_grpc.StageStub]]:
    served = {role: serve(core) for role, core in cores.items()}
    yield {role: stub for role, (_, stub, _) in served.items()}
    for server, _, channel in served.values():
        channel.close()
        server.stop(None)


def request(question: str, strategy: str = "af", k: int = 10, **options: object) -> StageMessage:
    return StageMessage(
        request_id=uuid.uuid4().hex,
        question=question,
        strategy=strategy,
        k=k,
        options_json=codec.to_json(options),
        accepted_unix_ms=int(time.time() * 1000),
    )


def timeless_message(message: StageMessage) -> StageMessage:
    """The message without its step timings (the only part that differs between two runs)."""
    out = StageMessage()
    out.CopyFrom(message)
    out.ClearField("timings_ms")
    return out


def timeless_answer(envelope: AnswerEnvelope) -> tuple[int, str, api_pb2.AskResponse]:
    answer = api_pb2.AskResponse.FromString(envelope.answer)
    answer.ClearField("timings_ms")
    return envelope.kind, envelope.stage, answer


def same_output(result: stages_pb2.StageResult, direct: StageOutput) -> None:
    assert result.has_forward == (direct.forward is not None)
    if direct.forward is not None:
        assert timeless_message(result.forward) == timeless_message(direct.forward)
    assert [timeless_answer(a) for a in result.answers] == [timeless_answer(a) for a in direct.answers]


def final_ids(answers: list[AnswerEnvelope]) -> list[int]:
    final = [a for a in answers if a.kind == AnswerEnvelope.FINAL]
    assert len(final) == 1, answers
    return [item.node_id for item in api_pb2.AskResponse.FromString(final[0].answer).items]


def chain(stubs, cores, message: StageMessage) -> list[AnswerEnvelope]:
    """Run the five stages over gRPC, checking each against its core called directly on the same input."""
    answers: list[AnswerEnvelope] = []
    current: StageMessage | None = message
    for role in ROLES:
        assert current is not None, f"the chain ended before {role}"
        result = stubs[role].Process(current, timeout=60)
        same_output(result, run_stage(cores[role], current))
        answers += result.answers
        current = result.forward if result.has_forward else None
    assert current is None
    return answers


@pytest.mark.parametrize("strategy", ["af", "hybrid"])
def test_each_stage_over_grpc_gives_what_its_core_gives(stubs, cores, biomed_sample_engine, strategy) -> None:
    for question in QUESTIONS[:3]:
        answers = chain(stubs, cores, request(question, strategy))
        expected = biomed_sample_engine.ask(question, strategy=strategy, k=10)
        assert final_ids(answers) == [item.node_id for item in expected.items], question


def test_a_streamed_request_gets_the_partial_answer_from_grounding(stubs, cores) -> None:
    message = request(QUESTIONS[2])
    message.stream_partial = True
    answers = chain(stubs, cores, message)
    assert [(a.kind, a.stage) for a in answers] == [
        (AnswerEnvelope.PARTIAL, "grounding"),
        (AnswerEnvelope.FINAL, "reranker"),
    ]


def test_the_bus_workers_give_what_the_servicers_give(stubs, cores) -> None:
    bus = MemoryBus()
    workers = [StageWorker(core, bus, poll_timeout_s=0.02, lag_interval_s=0).start() for core in cores.values()]
    probe = bus.consumer([topics.ANSWER], group="probe")
    try:
        for question in QUESTIONS[3:5]:
            message = request(question)
            over_grpc = final_ids(chain(stubs, cores, message))
            bus.publish(topics.QUERY, message.request_id, message.SerializeToString())
            found: list[AnswerEnvelope] = []
            deadline = time.monotonic() + 30
            while not found and time.monotonic() < deadline:
                found = [
                    a
                    for a in (AnswerEnvelope.FromString(m.value) for m in probe.poll(0.1, 10))
                    if a.request_id == message.request_id
                ]
            assert final_ids(found) == over_grpc, question
    finally:
        probe.close()
        for worker in workers:
            worker.stop()
        bus.close()


BAD = {
    "unknown strategy": dict(strategy="nope"),
    "k of 0": dict(k=0),
    "empty question": dict(question="   "),
    "options not JSON": dict(options_json="{not json"),
    "options not an object": dict(options_json="[1, 2]"),
    "embedding not float32": dict(question_embedding=b"\x00\x01\x02"),
    "unknown option name": dict(options_json='{"no_such_option": 1}'),
    "empty option name": dict(options_json='{"": 1}'),
    "unknown option of another strategy": dict(strategy="bm25", options_json='{"alpha": 0.5}'),
    "option name of 100 kB": dict(options_json='{"%s": 1}' % ("x" * 100_000)),
}


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_is_invalid_argument_with_one_line(stubs, role, case) -> None:
    message = request(QUESTIONS[0])
    for field, value in BAD[case].items():
        setattr(message, field, value)
    with pytest.raises(grpc.RpcError) as caught:
        stubs[role].Process(message, timeout=30)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT, (case, caught.value.details())
    details = caught.value.details()
    assert details and "\n" not in details and "Traceback" not in details
    assert len(details) <= 400, (case, len(details))


def test_a_bad_af_option_names_the_option(stubs) -> None:
    with pytest.raises(grpc.RpcError) as caught:
        stubs["parser"].Process(request(QUESTIONS[0], alpha=7.5), timeout=30)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "alpha" in caught.value.details()


@pytest.fixture
def counting() -> Iterator[tuple[GatedStageCore, stages_pb2_grpc.StageStub]]:
    core = GatedStageCore(open_gate=True, role="symbols", topics=(topics.PARSED, topics.SYMBOLS))
    server, stub, channel = serve(core)  # type: ignore[arg-type]
    yield core, stub
    core.gate.set()
    channel.close()
    server.stop(None)


def test_a_passed_deadline_is_deadline_exceeded_without_computing(counting) -> None:
    core, stub = counting
    message = request(QUESTIONS[0])
    message.deadline_unix_ms = int(time.time() * 1000) - 1000
    with pytest.raises(grpc.RpcError) as caught:
        stub.Process(message, timeout=10)  # the call's own deadline is generous: the message's one fires
    assert caught.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    assert "deadline passed before the symbols stage" in caught.value.details()
    assert core.calls == 0
    message.deadline_unix_ms = int(time.time() * 1000) + 60_000
    assert stub.Process(message, timeout=10).forward.request_id == message.request_id
    assert core.calls == 1


def test_a_call_in_progress_counts_as_in_flight(counting) -> None:
    core, stub = counting
    registry = get_metrics().registry

    def inflight() -> float:
        return registry.get_sample_value("skbqa_inflight", {"service": "symbols"}) or 0.0

    core.gate.clear()
    call = stub.Process.future(request(QUESTIONS[0]), timeout=10)
    core.wait_entered(1, 5)
    assert inflight() == 1
    core.gate.set()
    call.result()
    assert inflight() == 0


class _TwoVersions:
    """What `VersionedCores.core_for` does, for two versions: a pinned message runs on its version (or is refused
    when that one is gone), an unpinned one is pinned to the version served now."""

    def __init__(self, cores: dict[int, StageCore], current: int) -> None:
        self.cores, self.current = cores, current

    def core_for(self, message: StageMessage) -> StageCore:
        if message.kb_version and message.kb_version not in self.cores:
            raise VersionUnavailableError(f"knowledge-base version {message.kb_version} was let go; retry")
        message.kb_version = message.kb_version or self.current
        return self.cores[message.kb_version]


def test_a_direct_call_runs_on_the_version_its_message_is_pinned_to() -> None:
    """`Stage/Process` follows the knowledge base's versions as the bus worker does: an unpinned message is pinned
    to the version served now (its forward carries it), a pinned one runs on its own version, one pinned to a
    version no longer held is UNAVAILABLE with that line."""
    old, new = (
        GatedStageCore(open_gate=True, role="symbols", topics=(topics.PARSED, topics.SYMBOLS)) for _ in "ab"
    )
    servicer = StageServicer(old)  # type: ignore[arg-type]
    servicer.versions = _TwoVersions({1: old, 2: new}, current=2)  # type: ignore[assignment,dict-item]
    server = grpc.server(ThreadPoolExecutor(2))
    stages_pb2_grpc.add_StageServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = stages_pb2_grpc.StageStub(channel)
            assert stub.Process(request(QUESTIONS[0]), timeout=10).forward.kb_version == 2
            assert (new.calls, old.calls) == (1, 0)
            pinned = request(QUESTIONS[0])
            pinned.kb_version = 1
            assert stub.Process(pinned, timeout=10).forward.kb_version == 1
            assert (new.calls, old.calls) == (1, 1)
            pinned.kb_version = 7
            with pytest.raises(grpc.RpcError) as caught:
                stub.Process(pinned, timeout=10)
            assert caught.value.code() == grpc.StatusCode.UNAVAILABLE
            assert caught.value.details() == "knowledge-base version 7 was let go; retry"
    finally:
        server.stop(None)
