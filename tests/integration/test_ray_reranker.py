"""The reranker as a Ray Serve deployment, against a real local Ray (2 CPUs) and a small index built here with the
real encoder.

Two apps are deployed once per module: `local` (1 replica, batches of up to 8) and `pointwise` (2 replicas,
batches of up to 4) over the fake OpenAI-compatible server. The served orders must equal the in-process
rerankers' orders; concurrent callers must be batched; nothing is ever added or dropped; a timeout gives the
input order with a note. Adapter edge cases that need no Ray (invalid replies, errors) use a fake handle.
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from skbqa.common.errors import InvalidInputError
from skbqa.ingest.builder import ingest
from skbqa.models.openai_chat import LlmSettings, OpenAIChatModel
from skbqa.query.context import Candidate, QueryContext
from skbqa.query.structured import StructuredQuery, Symbol, Triplet
from skbqa.stages.rerank.base import RerankOutcome
from skbqa.stages.rerank.ray_fallback import RayOrInProcess
from skbqa.stages.rerank.ray_serve import (
    RayRerankerSettings,
    RayServeReranker,
    RerankerCore,
    deploy_reranker,
    start_local_ray,
)
from skbqa.stages.rerank.ray_wire import RerankRequest, RerankResponse
from skbqa.stages.rerank.registry import build_reranker
from skbqa.stores.index import IndexStores, open_index
from tests.fakes.openai_server import FakeOpenAIServer
from tests.helpers import SCHEMA, write_bundle

pytestmark = [pytest.mark.ray, pytest.mark.timeout(240)]

LOCAL_APP = "skbqa-reranker-test-local"
LLM_APP = "skbqa-reranker-test-pointwise"
DOOMED_APP = "skbqa-reranker-test-doomed"  # deleted and deployed again by the fallback test
K = 20
TOPICS = [
    ("protein structure prediction", "Attention models predict protein structure and folding from sequence."),
    ("graph neural networks for molecules", "Message passing over chemical graphs learns molecular properties."),
    ("dense retrieval", "Dense and sparse retrieval of entities from semi-structured knowledge bases."),
    ("reinforcement learning for robots", "Policies for robot arms are learned from reward signals."),
    ("speech recognition", "Acoustic models transcribe spoken language into text."),
    ("image segmentation", "Convolutional networks label every pixel of medical images."),
    ("question answering", "Multi-hop questions are answered over text and knowledge graphs."),
    ("climate modelling", "Simulations of ocean and atmosphere project future temperatures."),
]
AUTHORS = ["Ada Lovelace", "Alan Turing", "Grace Hopper", "Emmy Noether", "Kurt Goedel", "Barbara Liskov"]
FIELDS = ["biology", "chemistry", "information retrieval", "robotics", "signal processing"]
# The pointwise fake scores only the paper whose text has this word high. Not in its name: neighbours' descriptions
# list names (its author's would match too), and in no question.
FAVOURITE = "quokka"
QUESTIONS = [
    "Which papers about protein structure did Ada Lovelace write?",
    "graph neural networks for molecules",
    "papers on dense retrieval over knowledge bases",
    "reinforcement learning for robot arms by Grace Hopper",
    "Which question answering papers cite retrieval work?",
    "image segmentation of medical images",
]


# ----------------------------------------------------------------------------------------------------- fixtures


def _bundle(directory: Path) -> Path:
    nodes: list[dict[str, Any]] = []
    edges: list[dict[str, Any]] = []
    for i, name in enumerate(AUTHORS):
        nodes.append({"id": 100 + i, "type": "author", "name": name, "attrs": {}, "text": f"{name}, researcher."})
    for i, name in enumerate(FIELDS):
        nodes.append({"id": 200 + i, "type": "field", "name": name, "attrs": {}, "text": f"The field of {name}."})
    for t, (topic, text) in enumerate(TOPICS):
        for v in range(4):
            pid = 1000 + 10 * t + v
            title = f"{topic.capitalize()}, part {v + 1}"
            nodes.append({"id": pid, "type": "paper", "name": title, "attrs": {"year": 2015 + v}, "text": text})
            edges.append({"src": pid, "type": "written_by", "dst": 100 + (t + v) % len(AUTHORS)})
            edges.append({"src": pid, "type": "has_field", "dst": 200 + t % len(FIELDS)})
            if t and v == 0:
                edges.append({"src": pid, "type": "cites", "dst": 1000 + 10 * (t - 1)})
    nodes.append(
        {
            "id": 9000,
            "type": "paper",
            "name": "Retrieval of protein structure",
            "attrs": {},
            "text": f"A {FAVOURITE}.",
        }
    )
    edges.append({"src": 9000, "type": "written_by", "dst": 100})
    return write_bundle(directory, schema=SCHEMA, nodes=nodes, edges=edges, qa=[])


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory: pytest.TempPathFactory, onnx_encoder: Any) -> Path:
    root = tmp_path_factory.mktemp("ray-reranker")
    ingest(_bundle(root / "bundle"), root / "index", onnx_encoder, progress=False)
    return root / "index"


@pytest.fixture(scope="module")
def stores(index_dir: Path) -> IndexStores:
    return open_index(index_dir)


@pytest.fixture(scope="module")
def ray_local() -> Iterator[None]:
    """A local Ray on 2 CPUs, dashboard off, token auth off; Serve and Ray are stopped afterwards."""
    ray = pytest.importorskip("ray")
    serve = pytest.importorskip("ray.serve")
    previous = os.environ.get("RAY_AUTH_MODE")
    os.environ["RAY_AUTH_MODE"] = "disabled"
    # address="local": always a fresh private Ray, never a cluster another process on this machine started.
    start_local_ray(num_cpus=2)
    try:
        yield
    finally:
        serve.shutdown()
        ray.shutdown()
        if previous is None:
            os.environ.pop("RAY_AUTH_MODE", None)
        else:
            os.environ["RAY_AUTH_MODE"] = previous


@pytest.fixture(scope="module")
def local_handle(ray_local: None, index_dir: Path) -> Any:
    # A 50 ms batch window makes the 8 concurrent callers below meet in one batch reliably on a busy machine.
    settings = RayRerankerSettings(
        "local", num_replicas=1, max_batch_size=8, batch_wait_timeout_s=0.05, num_cpus=0.5, app_name=LOCAL_APP
    )
    return deploy_reranker(index_dir, settings)


@pytest.fixture(scope="module")
def fake_llm() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(default_reply="0.1") as server:
        server.reply(FAVOURITE, reply="1.0")
        yield server


@pytest.fixture(scope="module")
def llm_settings(fake_llm: FakeOpenAIServer) -> LlmSettings:
    return LlmSettings(url=fake_llm.url, model="fake", retries=0, timeout=10.0)


@pytest.fixture(scope="module")
def llm_handle(ray_local: None, index_dir: Path, llm_settings: LlmSettings) -> Any:
    settings = RayRerankerSettings(
        "pointwise", num_replicas=2, max_batch_size=4, batch_wait_timeout_s=0.02, num_cpus=0.25, app_name=LLM_APP
    )
    return deploy_reranker(index_dir, settings, llm=llm_settings)


# ------------------------------------------------------------------------------------------------------ helpers


@dataclass
class Case:
    question: str
    parsed: StructuredQuery | None
    candidates: list[Candidate]


def _case(stores: IndexStores, encoder: Any, i: int, question: str) -> Case:
    """The question's top-K papers by document vector, shuffled a little, with a mix of evidence: some with a
    dense score on every candidate, some without (the replica then embeds the question itself)."""
    hits = stores.vectors["document"].search(encoder.encode([question]), K)[0]
    rng = random.Random(i)
    pairs = list(zip(hits.keys.tolist(), hits.scores.tolist(), strict=True))
    for _ in range(4):
        a, b = rng.randrange(len(pairs)), rng.randrange(len(pairs))
        pairs[a], pairs[b] = pairs[b], pairs[a]
    candidates = []
    for rank, (position, cosine) in enumerate(pairs):
        scores = {"dense": float(cosine)} if i % 2 == 0 or rank % 2 == 0 else {}
        evidence: dict[str, Any] = {"strand": "test"}
        if rank in (5, 9, 13):
            scores["grounded"] = 1.0
            evidence["triplets"] = [("p", "written_by", "a")] * (1 + rank % 2)
        candidates.append(Candidate(int(position), 1.0 - rank / K, "vss", scores, evidence))
    parsed = None
    if i % 3 != 2:
        parsed = StructuredQuery(
            "p",
            {"p": Symbol("p", "paper"), "a": Symbol("a", "author", ("Ada Lovelace",))},
            [Triplet("p", "written_by", "a")],
            text_constraints=[question.split(" by ")[0]] if i % 3 == 0 else [],
        )
    return Case(question, parsed, candidates)


@pytest.fixture(scope="module")
def cases(stores: IndexStores, onnx_encoder: Any) -> list[Case]:
    return [_case(stores, onnx_encoder, i, q) for i, q in enumerate(QUESTIONS)]


@pytest.fixture(scope="module")
def expected(stores: IndexStores, onnx_encoder: Any, cases: list[Case]) -> list[RerankOutcome]:
    """The in-process local reranker's outcomes: what the served one must reproduce."""
    reranker = build_reranker("local", stores)
    return [reranker.rerank(QueryContext(c.question, onnx_encoder), c.parsed, c.candidates) for c in cases]


def positions(candidates: list[Candidate]) -> list[int]:
    return [c.position for c in candidates]


def describe(handle: Any) -> dict[str, Any]:
    return handle.describe.remote().result(timeout_s=30)  # type: ignore[no-any-return]


# ------------------------------------------------------------------------------------------ served vs in process


def test_served_local_order_equals_the_in_process_order(
    local_handle: Any, onnx_encoder: Any, cases: list[Case], expected: list[RerankOutcome]
) -> None:
    adapter = RayServeReranker(local_handle, "local", timeout_s=30)
    # Otherwise the test could pass with an adapter that returns the input order.
    assert any(positions(e.candidates) != positions(c.candidates) for c, e in zip(cases, expected, strict=True))
    for case, want in zip(cases, expected, strict=True):
        query = QueryContext(case.question, onnx_encoder)
        got = adapter.rerank(query, case.parsed, case.candidates)
        assert positions(got.candidates) == positions(want.candidates), case.question
        assert got.note == want.note == ""
        for g, w in zip(got.candidates, want.candidates, strict=True):
            assert g.scores == pytest.approx(w.scores, abs=1e-9)
        assert "rerank_local" in query.timings  # the replica's stage timings reach the caller's context
        assert "rerank_ray" in query.timings


def test_served_pointwise_order_equals_the_in_process_order_on_two_replicas(
    llm_handle: Any,
    stores: IndexStores,
    onnx_encoder: Any,
    cases: list[Case],
    llm_settings: LlmSettings,
) -> None:
    from ray import serve

    status = serve.status().applications[LLM_APP]
    states = status.deployments["reranker"].replica_states  # keyed by ReplicaState, a str enum
    assert sum(n for state, n in states.items() if state == "RUNNING") == 2
    info = describe(llm_handle)
    assert (info["reranker"], info["max_batch_size"], info["batch_concurrency"]) == ("pointwise", 4, 4)
    assert info["batch_wait_timeout_s"] == 0.02

    in_process = build_reranker("pointwise", stores, OpenAIChatModel.from_settings(llm_settings))
    adapter = RayServeReranker(llm_handle, "pointwise", timeout_s=30)
    favourite = int(stores.nodes.positions([9000])[0])
    case = next(c for c in cases if favourite in positions(c.candidates) and c.candidates[0].position != favourite)
    want = in_process.rerank(QueryContext(case.question, onnx_encoder), case.parsed, case.candidates)
    got = adapter.rerank(QueryContext(case.question, onnx_encoder), case.parsed, case.candidates)
    assert positions(got.candidates)[0] == favourite  # the fake LLM's 1.0 moved it to the top
    assert positions(got.candidates) == positions(want.candidates)
    assert got.usage["prompts"] == len(case.candidates) and got.note == ""


# ------------------------------------------------------------------------------ Ray gone: the in-process twin


def test_with_its_app_gone_the_reranker_answers_in_process_then_on_ray_again(
    ray_local: None,
    index_dir: Path,
    stores: IndexStores,
    onnx_encoder: Any,
    cases: list[Case],
    expected: list[RerankOutcome],
) -> None:
    """`RayOrInProcess` over a real handle: on Ray while the app answers; the app deleted (its replicas gone,
    as when Ray is killed) → the next call is answered in process within seconds, the same ranking, flagged
    degraded; the app deployed again → back on Ray through the same handle."""
    from ray import serve

    app = RayRerankerSettings("local", batch_wait_timeout_s=0.0, num_cpus=0.25, app_name=DOOMED_APP)
    handle = deploy_reranker(index_dir, app)
    reranker = RayOrInProcess(build_reranker("local", stores), probe_every_s=0.5, probe_timeout_s=2.0)
    reranker.attach(RayServeReranker(handle, "local", timeout_s=30))
    try:
        assert _eventually(lambda: reranker.on_ray, 30)

        def check(case: Case, want: RerankOutcome, degraded: bool) -> float:
            started = time.monotonic()
            got = reranker.rerank(QueryContext(case.question, onnx_encoder), case.parsed, case.candidates)
            assert positions(got.candidates) == positions(want.candidates), case.question
            assert bool(got.degraded) == degraded, got.degraded
            return time.monotonic() - started

        check(cases[0], expected[0], degraded=False)
        serve.delete(DOOMED_APP)
        fell_back_s = check(cases[1], expected[1], degraded=True)
        print(f"first call after the app was deleted: answered in process after {fell_back_s:.2f} s")
        assert fell_back_s < 10.0  # not the call's own 30 s wait
        assert not reranker.on_ray
        check(cases[2], expected[2], degraded=True)
        deploy_reranker(index_dir, app)
        assert _eventually(lambda: reranker.on_ray, 60)
        check(cases[3], expected[3], degraded=False)
    finally:
        reranker.close()
        serve.delete(DOOMED_APP)


def _eventually(condition: Any, within_s: float) -> bool:
    end = time.monotonic() + within_s
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(0.1)
    return bool(condition())


# ---------------------------------------------------------------------------------------------------- batching


def test_concurrent_callers_are_batched(
    local_handle: Any, onnx_encoder: Any, cases: list[Case], expected: list[RerankOutcome]
) -> None:
    adapter = RayServeReranker(local_handle, "local", timeout_s=60)
    seen_before = len(describe(local_handle)["batch_sizes"])
    callers, rounds = 8, 3
    barrier = threading.Barrier(callers)
    failures: list[str] = []

    def call(worker: int) -> None:
        barrier.wait()
        for r in range(rounds):
            i = (worker + r) % len(cases)
            got = adapter.rerank(
                QueryContext(cases[i].question, onnx_encoder), cases[i].parsed, cases[i].candidates
            )
            if positions(got.candidates) != positions(expected[i].candidates) or got.note:
                failures.append(f"worker {worker} round {r}: {got.note or 'wrong order'}")

    threads = [threading.Thread(target=call, args=(w,)) for w in range(callers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not failures
    sizes = describe(local_handle)["batch_sizes"][seen_before:]
    assert sum(sizes) == callers * rounds  # one replica saw every request, each exactly once
    assert max(sizes) > 1, sizes


# --------------------------------------------------------------------------------------- never adds or drops


@pytest.mark.parametrize("take", [0, 1, 2, K])
def test_never_adds_or_drops_and_keeps_the_callers_objects(
    local_handle: Any, onnx_encoder: Any, cases: list[Case], take: int
) -> None:
    given = cases[0].candidates[:take]
    if take == K:
        given = [*given[:-2], Candidate(given[0].position, 0.0, "dup", {}, {"strand": "duplicate"}), given[-1]]
    outcome = RayServeReranker(local_handle, "local").rerank(
        QueryContext(cases[0].question, onnx_encoder), cases[0].parsed, given
    )
    assert Counter(positions(outcome.candidates)) == Counter(positions(given))
    assert outcome.note == ""
    # The caller's evidence objects come back (reordered), not copies rebuilt from the wire.
    assert sorted(map(id, (c.evidence for c in outcome.candidates))) == sorted(
        map(id, (c.evidence for c in given))
    )


# ----------------------------------------------------------------------------------------------------- timeouts


def test_timeout_returns_the_input_order_with_a_note(
    llm_handle: Any, onnx_encoder: Any, cases: list[Case], fake_llm: FakeOpenAIServer
) -> None:
    fake_llm.delay = 2.0  # every LLM reply now takes 2 s; the caller waits 0.5 s
    try:
        case = cases[1]
        started = time.monotonic()
        outcome = RayServeReranker(llm_handle, "pointwise", timeout_s=0.5).rerank(
            QueryContext(case.question, onnx_encoder), case.parsed, case.candidates
        )
        waited = time.monotonic() - started
    finally:
        fake_llm.delay = 0.0
    assert outcome.note.startswith("ray timeout after"), outcome.note
    assert [id(c) for c in outcome.candidates] == [id(c) for c in case.candidates]
    assert outcome.usage == {}
    assert waited < 1.5


def test_a_request_deadline_sets_the_wait(llm_handle: Any) -> None:
    adapter = RayServeReranker(llm_handle, "pointwise", timeout_s=30, deadline_slack_s=2)
    assert adapter.wait_seconds({"rerank_deadline_s": 1.5}) == 3.5
    assert adapter.wait_seconds({"rerank_deadline_s": -1}) == 30  # unusable: the replica refuses it, see below
    assert adapter.wait_seconds({}) == 30


def test_an_invalid_request_is_raised_in_the_caller(llm_handle: Any, onnx_encoder: Any, cases: list[Case]) -> None:
    query = QueryContext(cases[0].question, onnx_encoder, options={"rerank_deadline_s": -1})
    with pytest.raises(InvalidInputError, match="rerank_deadline_s"):
        RayServeReranker(llm_handle, "pointwise").rerank(query, None, cases[0].candidates)


# ------------------------------------------------------------------------------------ the adapter without Ray


class _Response:
    def __init__(self, reply: Any = None, error: BaseException | None = None) -> None:
        self._reply, self._error = reply, error
        self.cancelled = False

    def result(self, *, timeout_s: float | None = None) -> Any:
        if self._error is not None:
            raise self._error
        return self._reply

    def cancel(self) -> None:
        self.cancelled = True


class _Method:
    def __init__(self, answer: Any) -> None:
        self.answer = answer
        self.sent: list[RerankRequest] = []

    def remote(self, request: RerankRequest) -> _Response:
        self.sent.append(request)
        return self.answer(request) if callable(self.answer) else self.answer


class _Handle:
    def __init__(self, answer: Any) -> None:
        self.rerank = _Method(answer)


def _three() -> list[Candidate]:
    return [Candidate(p, 1.0 - p / 10, "t", {"dense": 0.1 * p}, {"n": p}) for p in (3, 1, 2)]


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        (RerankResponse([1, 2]), "not a permutation"),
        (RerankResponse([1, 2, 2]), "not a permutation"),
        (RerankResponse([1, 2, 3, 4]), "not a permutation"),
        (RerankResponse([1, 2, 3], scores=[{}]), "scores do not match"),
    ],
)
def test_an_invalid_reply_gives_the_input_order(reply: RerankResponse, problem: str) -> None:
    given = _three()
    outcome = RayServeReranker(_Handle(_Response(reply))).rerank(QueryContext("q", encoder=None), None, given)  # type: ignore[arg-type]
    assert outcome.candidates == given and problem in outcome.note


def test_a_failed_or_timed_out_call_gives_the_input_order() -> None:
    given = _three()
    query = QueryContext("q", encoder=None)  # type: ignore[arg-type]
    failed = RayServeReranker(_Handle(_Response(error=RuntimeError("replica died\ntraceback…")))).rerank(
        query, None, given
    )
    assert failed.candidates == given and failed.note == "ray error: RuntimeError: replica died"
    late = _Response(error=TimeoutError())
    timed_out = RayServeReranker(_Handle(late)).rerank(query, None, given)
    assert timed_out.candidates == given and timed_out.note.startswith("ray timeout")
    assert late.cancelled


def test_a_valid_reply_reorders_the_callers_candidates_and_adds_scores() -> None:
    given = _three()
    reply = RerankResponse([2, 3, 1], [{"x": 1.0}, {}, {"x": 0.5}], note="deadline", usage={"prompts": 3})
    handle = _Handle(_Response(reply))
    query = QueryContext("q", encoder=None, options={"a": 1})  # type: ignore[arg-type]
    outcome = RayServeReranker(handle).rerank(query, None, given)
    assert positions(outcome.candidates) == [2, 3, 1]
    assert outcome.candidates[1] is given[0]  # unchanged scores: the caller's object itself
    assert outcome.candidates[0].scores == {"dense": 0.2, "x": 1.0}
    assert outcome.candidates[0].evidence is given[2].evidence
    assert (outcome.note, outcome.usage) == ("deadline", {"prompts": 3})
    sent = handle.rerank.sent[0]
    assert sent.question == "q" and sent.options == {"a": 1}
    assert sent.candidates[0] == (3, 0.7, "t", {"dense": pytest.approx(0.3)}, {"n": 3})


def test_settings_are_validated() -> None:
    with pytest.raises(InvalidInputError, match="unknown reranker"):
        RayRerankerSettings("cross-encoder").validated()
    with pytest.raises(InvalidInputError, match="num_replicas"):
        RayRerankerSettings(num_replicas=0).validated()
    with pytest.raises(InvalidInputError, match="max_concurrent_batches"):
        RayRerankerSettings(max_concurrent_batches=None).validated()  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="max_ongoing_requests"):
        RayRerankerSettings(max_ongoing_requests=0).validated()
    with pytest.raises(InvalidInputError, match="batch_wait_timeout_s"):
        RayRerankerSettings(batch_wait_timeout_s=float("nan")).validated()
    settings = RayRerankerSettings("listwise", max_batch_size=6)
    assert (settings.ongoing_requests, settings.concurrency) == (12, 6)
    assert RayRerankerSettings(max_batch_size=6, max_concurrent_batches=2).ongoing_requests == 18
    assert RayRerankerSettings("local", max_batch_size=6).concurrency == 1


def test_the_core_isolates_a_failing_request_from_its_batch(index_dir: Path, onnx_encoder: Any) -> None:
    core = RerankerCore(index_dir, RayRerankerSettings("local"), encoder=onnx_encoder)
    good = RerankRequest("protein structure", [(0, 1.0, "t", {}, {}), (1, 0.5, "t", {}, {})])
    bad = RerankRequest("protein structure", [(0, 1.0, "t", {}, {}), (10**9, 0.5, "t", {}, {})])
    replies = core.rerank_batch([good, bad])
    assert sorted(replies[0].positions) == [0, 1] and replies[0].note == ""
    assert replies[1].positions == [0, 10**9] and replies[1].note.startswith("replica error: IndexError")
    assert core.describe()["batch_sizes"] == [2]
    assert np.isfinite(list(replies[0].timings.values())).all()
