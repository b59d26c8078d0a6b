"""The Ray reranker follows the knowledge base's versions without Ray: a `RerankerCore` (what a replica runs) and
the caller's `RayServeReranker` / `RayOrInProcess` over an in-process handle.

A replica reads node texts and vectors by position from the snapshot it opened; after a change its stale answer
would differ from the caller's version. Checked: a replica asked at a version it does not hold answers nothing
usable (input order, its own version) and opens the new version in the background, then answers exactly like an
in-process reranker on the new index; the caller answers in process at its own version meanwhile (flagged, Ray
not marked down); a new version's wrapper shares the served one's Ray path.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from skbqa.changes.format import parse_change
from skbqa.changes.updater import IndexUpdater
from skbqa.ingest.builder import ingest
from skbqa.query.context import Candidate, QueryContext
from skbqa.serving import run, runtime
from skbqa.serving.settings import ServiceSettings
from skbqa.stages.rerank.ray_fallback import RayOrInProcess
from skbqa.stages.rerank.ray_serve import RayRerankerSettings, RayServeReranker, RerankerCore
from skbqa.stages.rerank.ray_wire import RerankRequest, RerankResponse
from skbqa.stages.rerank.registry import build_reranker
from skbqa.stores.index import IndexStores, open_index
from tests.helpers import HashingEncoder, write_bundle

QUESTION = "attention models for protein structure"
# Version 1 rewrites the texts: the paper about protein structure becomes one about robots, and the one about
# molecules becomes the protein paper, so version 0's data ranks the candidates differently from version 1's.
CHANGES = [
    {
        "op": "upsert_node",
        "node": {
            "id": 12,
            "type": "paper",
            "name": "Robot arms",
            "attrs": {},
            "text": "Reward signals for robots.",
        },
    },
    {
        "op": "upsert_node",
        "node": {
            "id": 10,
            "type": "paper",
            "name": "Attention for protein structure",
            "attrs": {},
            "text": "Attention models predict protein structure from sequence with attention.",
        },
    },
    # a node before the papers: positions move too
    {"op": "upsert_node", "node": {"id": 1, "type": "author", "name": "Emmy Noether", "attrs": {}, "text": "x"}},
]
PAPERS = (10, 11, 12)


@pytest.fixture
def index(tmp_path: Path) -> Path:
    target = tmp_path / "index"
    ingest(write_bundle(tmp_path / "bundle"), target, HashingEncoder(), progress=False)
    return target


def _change(index: Path) -> None:
    updater = IndexUpdater(index, HashingEncoder())
    try:
        updater.submit([(i, parse_change(c, "test", i)) for i, c in enumerate(CHANGES, 1)], "test")
        updater.snapshot()
    finally:
        updater.close()


def _candidates(stores: IndexStores) -> list[Candidate]:
    """The papers, retrieval order by id, without a dense score (the reranker reads their stored vectors)."""
    positions = stores.nodes.positions(list(PAPERS)).tolist()
    return [Candidate(int(p), 1.0 - i / 10, "test", {}, {}) for i, p in enumerate(positions)]


def _in_process(stores: IndexStores, candidates: list[Candidate]) -> list[tuple[int, dict[str, float]]]:
    outcome = build_reranker("local", stores).rerank(QueryContext(QUESTION, HashingEncoder()), None, candidates)
    return [(c.position, c.scores) for c in outcome.candidates]


def _request(candidates: list[Candidate], version: int | None) -> RerankRequest:
    return RerankRequest.build(QueryContext(QUESTION, HashingEncoder()), None, candidates, version)


def _ids(stores: IndexStores, positions: list[int]) -> list[int]:
    return [int(stores.nodes.ids[p]) for p in positions]


def _wait_until(condition: Any, within_s: float = 10.0) -> bool:
    end = time.monotonic() + within_s
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(0.02)
    return bool(condition())


class InProcessHandle:
    """A Serve handle whose calls run on a `RerankerCore` in this process."""

    def __init__(self, core: RerankerCore) -> None:
        self.rerank = _Method(lambda request: core.rerank_one(request))
        self.describe = _Method(lambda _=None: core.describe())


class _Method:
    def __init__(self, call: Any) -> None:
        self._call = call
        self.calls = 0

    def remote(self, request: Any = None) -> Any:
        self.calls += 1
        result = self._call(request)

        class _Response:
            def result(self, *, timeout_s: float | None = None) -> Any:
                return result

            def cancel(self) -> None:
                pass

        return _Response()


def test_a_replica_answers_only_at_the_requests_version_and_opens_the_newer_one(index: Path) -> None:
    core = RerankerCore(index, RayRerankerSettings("local"), encoder=HashingEncoder())
    old = open_index(index)
    _change(index)
    new = open_index(index)
    assert (core.version, int(new.manifest["kb_version"])) == (0, 1)
    old_candidates, new_candidates = _candidates(old), _candidates(new)
    expected = _in_process(new, new_candidates)
    # what a replica reading version 0 computes for the version-1 request: another order of other papers
    stale = core.reranker.rerank(QueryContext(QUESTION, HashingEncoder()), None, new_candidates).candidates
    assert _ids(old, [c.position for c in stale]) != _ids(new, [p for p, _ in expected])

    refused = core.rerank_one(_request(new_candidates, 1))
    assert refused.kb_version == 0 and "not reranked" in refused.note
    assert refused.positions == [c.position for c in new_candidates] and not refused.scores

    assert _wait_until(lambda: core.version == 1), core.last_error  # opened in the background
    served = core.rerank_one(_request(new_candidates, 1))
    assert served.kb_version == 1 and served.note == ""
    assert served.positions == [p for p, _ in expected]
    assert served.scores == [s for _, s in expected]  # every score the candidates had none of is added
    # the previous version is kept for callers still at it, and answers as it did
    assert core.rerank_one(_request(old_candidates, 0)).positions == [
        p for p, _ in _in_process(old, old_candidates)
    ]
    assert core.rerank_one(_request(new_candidates, None)).kb_version == 1  # unversioned: the newest
    assert core.describe()["kb_versions"] == [0, 1]


def test_the_caller_answers_in_process_at_its_version_until_the_replica_has_it(index: Path) -> None:
    core = RerankerCore(index, RayRerankerSettings("local"), encoder=HashingEncoder())
    degraded: list[int] = []
    served = RayOrInProcess(
        build_reranker("local", open_index(index)),
        probe_every_s=0.05,
        on_degraded=lambda: degraded.append(1),
        kb_version=0,
    )
    try:
        served.attach(RayServeReranker(InProcessHandle(core), "local", timeout_s=5.0))
        assert _wait_until(lambda: served.on_ray)
        _change(index)
        new = open_index(index)
        following = served.follow(build_reranker("local", new), 1)  # what the service builds for version 1
        assert following.on_ray  # the served one's Ray path: no attach of its own
        candidates = _candidates(new)
        expected = _in_process(new, candidates)

        first = following.rerank(QueryContext(QUESTION, HashingEncoder()), None, candidates)
        assert [(c.position, c.scores) for c in first.candidates] == expected  # version 1's data, in process
        assert "knowledge-base version 0, this request at 1" in first.degraded and degraded == [1]
        assert following.on_ray and served.on_ray  # Ray works: not marked down

        assert _wait_until(lambda: core.version == 1), core.last_error
        again = following.rerank(QueryContext(QUESTION, HashingEncoder()), None, candidates)
        assert again.degraded == "" and [(c.position, c.scores) for c in again.candidates] == expected
        assert degraded == [1]
    finally:
        served.close()


def test_a_reply_without_a_version_is_not_used_by_a_versioned_caller(index: Path) -> None:
    """An app older than versions: its answers cannot be told to be at the caller's version."""

    class OldApp(InProcessHandle):
        def __init__(self) -> None:
            self.rerank = _Method(lambda r: RerankResponse([c[0] for c in reversed(r.candidates)]))
            self.describe = _Method(lambda _=None: {})

    stores = open_index(index)
    wrapper = RayOrInProcess(build_reranker("local", stores), probe_every_s=0.05, kb_version=0)
    try:
        wrapper.attach(RayServeReranker(OldApp(), "local", timeout_s=5.0))
        assert _wait_until(lambda: wrapper.on_ray)
        outcome = wrapper.rerank(QueryContext(QUESTION, HashingEncoder()), None, _candidates(stores))
        assert "version None" in outcome.degraded
        assert [(c.position, c.scores) for c in outcome.candidates] == _in_process(stores, _candidates(stores))
    finally:
        wrapper.close()


def test_a_new_versions_rerankers_share_the_served_ones_ray_path(monkeypatch: pytest.MonkeyPatch) -> None:
    attached: list[int] = []
    monkeypatch.setattr(runtime, "attach_ray", lambda settings, rerankers: attached.append(len(rerankers)))
    settings = ServiceSettings(index=Path("unused"), role="reranker", ray_address="local")
    fallback = build_reranker("none", None)  # type: ignore[arg-type]
    fallback.name = "local"  # type: ignore[misc]
    first = runtime.ray_rerankers(settings, {"local": fallback}, kb_version=3)
    assert _wait_until(lambda: attached == [1], 2.0)
    second = runtime.ray_rerankers(settings, {"local": fallback}, kb_version=4, following=first)
    time.sleep(0.1)
    assert attached == [1]  # no second attach
    one, two = first["local"], second["local"]
    assert isinstance(one, RayOrInProcess) and isinstance(two, RayOrInProcess)
    assert (one.kb_version, two.kb_version) == (3, 4)

    class Answering:  # a Ray path whose probes answer
        def probe(self, timeout_s: float) -> None:
            pass

    try:
        one.attach(Answering())  # type: ignore[arg-type]
        assert _wait_until(lambda: two.on_ray, 2.0)  # the path attached once serves every version
    finally:
        one.close()


def test_a_reranker_stage_opening_a_new_version_reranks_it_on_the_same_ray_path(
    index: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What `start_stage` and `start_embedded` build per version: `build_runtime(..., served=...)`."""
    attached: list[Any] = []
    monkeypatch.setattr(runtime, "attach_ray", lambda settings, rerankers: attached.append(rerankers))
    settings = ServiceSettings(index=index, role="reranker", ray_address="local")
    first = runtime.build_runtime(settings, HashingEncoder())
    _change(index)
    second = runtime.build_runtime(settings, first.encoder, served=first)
    one, two = first.af.rerank.rerankers["local"], second.af.rerank.rerankers["local"]
    assert isinstance(one, RayOrInProcess) and isinstance(two, RayOrInProcess)
    assert (one.kb_version, two.kb_version) == (0, 1)
    assert _wait_until(lambda: len(attached) == 1, 2.0)
    time.sleep(0.1)
    assert len(attached) == 1  # the new version attached nothing of its own
    core = RerankerCore(index, RayRerankerSettings("local"), encoder=HashingEncoder())  # a replica already at 1
    try:
        one.attach(RayServeReranker(InProcessHandle(core), "local", timeout_s=5.0))
        assert _wait_until(lambda: two.on_ray)
        candidates = _candidates(second.stores)
        outcome = two.rerank(QueryContext(QUESTION, HashingEncoder()), None, candidates)
        assert outcome.degraded == ""  # on Ray, at version 1
        assert [(c.position, c.scores) for c in outcome.candidates] == _in_process(second.stores, candidates)
        assert (
            "version 1, this request at 0"
            in one.rerank(QueryContext(QUESTION, HashingEncoder()), None, _candidates(first.stores)).degraded
        )  # the replica opened after the change holds only 1: version 0's answer stays in process
    finally:
        one.close()


def test_servers_on_ray_take_changes_and_nebula_ones_do_not() -> None:
    index = Path("unused")
    assert run.takes_changes(ServiceSettings(index=index, ray_address="local"))
    assert not run.takes_changes(ServiceSettings(index=index, ray_address="local", graph_url="nebula://h:9669/s"))
