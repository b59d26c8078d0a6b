"""Backend faults answered in one process (the embedded server runs the same stage cores as the services):
an LLM endpoint that is down, slow or answers garbage; a vector store that is gone; a graph store that is gone."""

from __future__ import annotations

import json
import socket
import time

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from skbqa.observability.metrics import get_metrics
from skbqa.serving.local_pipeline import LocalPipeline
from skbqa.serving.requests import new_request
from skbqa.serving.run import start_embedded
from skbqa.serving.runtime import build_runtime
from skbqa.serving.settings import ServiceSettings
from skbqa.serving.stages.core import AnswerEnvelope
from skbqa.stores.vectors.milvus import MilvusIndex
from skbqa.v1 import api_pb2, api_pb2_grpc
from tests.conftest import SAMPLE_BUNDLE
from tests.fakes.openai_server import FakeOpenAIServer
from tests.integration.fault_matrix import Call, record, tally

QUESTIONS = [json.loads(line)["question"] for line in (SAMPLE_BUNDLE / "qa.jsonl").read_text().splitlines()]
# parses into triplets on the sample (so grounding needs the graph store)
GRAPH_QUESTION = QUESTIONS[1]


def _reply_call(index: int, reply: api_pb2.AskResponse) -> Call:
    """A unary reply as a matrix call (Ask returns one final answer, or raises)."""
    notes = json.loads(reply.notes_json) if reply.notes_json else {}
    return Call(index, finals=[[i.node_id for i in reply.items]], notes=[notes], degraded=[reply.degraded])


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _llm_fallbacks() -> float:
    text = get_metrics().render().decode()
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("skbqa_errors_total") and 'kind="llm_fallback"' in line and 'stage="parser"' in line
    )


@pytest.mark.parametrize("mode", ["down", "slow", "garbage"])
def test_llm_endpoint_faults_fall_back_never_hang(biomed_sample_engine, monkeypatch, mode) -> None:
    fake = FakeOpenAIServer(default_reply="}}}} this is not Cypher ((((").start()
    url = fake.url
    if mode == "down":
        fake.stop()
    elif mode == "slow":
        fake.delay = 5.0
    monkeypatch.setenv("SKBQA_LLM_URL", url)
    monkeypatch.setenv("SKBQA_LLM_MODEL", "fake")
    monkeypatch.setenv("SKBQA_LLM_TIMEOUT", "0.5")
    monkeypatch.setenv("SKBQA_LLM_RETRIES", "1")
    before = _llm_fallbacks()
    questions = QUESTIONS[:3]
    # the reference: the engine without an LLM, i.e. the encoder parser the fallback uses
    expected: dict[int, list[int] | None] = {
        i: [n.node_id for n in biomed_sample_engine.ask(q, k=10).items] for i, q in enumerate(questions)
    }
    if mode == "garbage":
        # the garbage reply is refused and the question kept as text: no engine answers that way without this
        # LLM, so there is no reference ranking; any non-empty ranking counts (and the row says so)
        expected = dict.fromkeys(expected)
    running, stop = start_embedded(ServiceSettings(index=biomed_sample_engine.stores.directory, port=0, llm=True))
    try:
        with grpc.insecure_channel(f"127.0.0.1:{running.port}") as channel:
            stub = api_pb2_grpc.SkbqaStub(channel)
            started = time.monotonic()
            calls = []
            for index, question in enumerate(questions):
                try:
                    reply = stub.Ask(api_pb2.AskRequest(question=question, k=10), timeout=60)
                    calls.append(_reply_call(index, reply))
                except grpc.RpcError as exc:
                    calls.append(Call(index, status=exc.code().name))
            seconds = time.monotonic() - started
        result = tally(calls, expected)
        notes = [c.notes[0] for c in calls if c.notes]
        fallbacks = _llm_fallbacks() - before
        record(
            f"LLM endpoint {mode} (embedded server)",
            "answered (no reference ranking); the LLM reply refused as untrusted, question kept as text"
            if mode == "garbage"
            else "answered by the encoder parser; fallback in notes and metric",
            result,
            seconds=seconds,
            module=__name__,
            llm_fallback_metric=int(fallbacks),
            notes_with_parser_fallback=sum(1 for n in notes if "parser_fallback" in n),
        )
        assert result.answered == len(questions) and result.lost == 0, result
        if mode == "garbage":
            # the endpoint answered: its reply is untrusted input, refused, and the question kept as text
            assert all(n["parsed"]["warnings"] for n in notes)
            assert all(n["parsed"]["text"] for n in notes)
        else:
            assert all("parser_fallback" in n and "encoder parser used" in n["parser_fallback"] for n in notes)
            assert fallbacks >= len(questions)
        assert seconds < 45  # bounded by timeout × attempts, never a hang
    finally:
        stop()
        fake.stop()


def test_vector_store_lost_gives_degraded_flagged_answers(biomed_sample_engine) -> None:
    """Vectors served by a Milvus server that is not there (a real pymilvus client failing to connect)."""
    runtime = build_runtime(ServiceSettings(index=biomed_sample_engine.stores.directory))
    uri = f"http://127.0.0.1:{_closed_port()}"
    for name, guarded in runtime.stores.vectors.items():
        guarded._inner = MilvusIndex(uri, collection=f"gone_{name}", dim=guarded.dim, timeout=2.0)
    pipeline = LocalPipeline(runtime)
    outcomes: list[AnswerEnvelope] = []
    questions = QUESTIONS[:3]
    started = time.monotonic()
    for question in questions:
        message = new_request(
            api_pb2.AskRequest(question=question),
            strategies=["af", "bm25"],
            default_strategy="af",
            gateway_id="t",
            deadline_s=None,
            stream=False,
        )
        pipeline.run(message, outcomes.append)
    seconds = time.monotonic() - started
    finals = [api_pb2.AskResponse.FromString(e.answer) for e in outcomes if e.kind == AnswerEnvelope.FINAL]
    calls = [_reply_call(index, reply) for index, reply in enumerate(finals)]
    calls += [Call(len(calls) + i) for i in range(len(questions) - len(calls))]  # a missing final is lost
    bm25 = {
        i: [n.node_id for n in biomed_sample_engine.ask(q, strategy="bm25").items] for i, q in enumerate(questions)
    }
    result = tally(calls, bm25)
    record(
        "vector store (Milvus) unreachable",
        "degraded answers (BM25), flagged degraded",
        result,
        seconds=seconds,
        module=__name__,
        flagged_degraded=sum(1 for r in finals if r.degraded),
    )
    assert result.answered == len(questions) and len(finals) == len(questions), result
    assert all(r.degraded and r.items for r in finals)
    degraded = json.loads(finals[0].notes_json)["degraded"]
    assert "vector store unavailable" in degraded["reason"] and degraded["answered_by"] == "bm25"


def test_graph_store_lost_is_unavailable_and_not_serving(biomed_sample_engine) -> None:
    graph = f"nebula://127.0.0.1:{_closed_port()}/skbqa"
    settings = ServiceSettings(index=biomed_sample_engine.stores.directory, port=0, graph_url=graph)
    running, stop = start_embedded(settings)
    started = time.monotonic()
    try:
        with grpc.insecure_channel(f"127.0.0.1:{running.port}") as channel:
            health = health_pb2_grpc.HealthStub(channel)
            deadline = time.monotonic() + 30
            status = None
            while time.monotonic() < deadline:
                status = health.Check(health_pb2.HealthCheckRequest(), timeout=5).status
                if status == health_pb2.HealthCheckResponse.NOT_SERVING:
                    break
                time.sleep(0.5)
            assert status == health_pb2.HealthCheckResponse.NOT_SERVING
            with pytest.raises(grpc.RpcError) as caught:
                api_pb2_grpc.SkbqaStub(channel).Ask(api_pb2.AskRequest(question=GRAPH_QUESTION), timeout=60)
        result = tally([Call(0, status=caught.value.code().name)], {0: []})
        record(
            "graph store (NebulaGraph) unreachable",
            "UNAVAILABLE with a message; health NOT_SERVING",
            result,
            seconds=time.monotonic() - started,
            module=__name__,
            health=health_pb2.HealthCheckResponse.ServingStatus.Name(status),
            details=caught.value.details(),
        )
        assert caught.value.code() == grpc.StatusCode.UNAVAILABLE
        assert "NebulaGraph" in caught.value.details() and "\n" not in caught.value.details()
    finally:
        stop()


def test_question_embedding_is_reused_not_recomputed(biomed_sample_engine) -> None:
    """The parser stage embeds the question once; later stages reuse it from the message (no second call)."""
    calls: list[list[str]] = []
    runtime = build_runtime(ServiceSettings(index=biomed_sample_engine.stores.directory))
    inner = runtime.encoder._inner  # type: ignore[attr-defined]

    class Counting:
        name, dim = inner.name, inner.dim

        def encode(self, texts, *, progress=None):
            calls.append(list(texts))
            return inner.encode(texts, progress=progress)

    runtime.encoder._inner = Counting()  # type: ignore[attr-defined]
    pipeline = LocalPipeline(runtime)
    message = new_request(
        api_pb2.AskRequest(question=GRAPH_QUESTION),
        strategies=["af"],
        default_strategy="af",
        gateway_id="t",
        deadline_s=None,
        stream=False,
    )
    answers: list[AnswerEnvelope] = []
    pipeline.run(message, answers.append)
    assert answers[-1].kind == AnswerEnvelope.FINAL
    encoded = [text for call in calls for text in call]
    assert encoded.count(message.question) == 1  # five stages, one embedding of the question
