"""Step 8 keeps answering while Ray is down or starting (`RayOrInProcess`, `serving/runtime.ray_rerankers`).

No Ray here: a fake Serve handle whose calls hang (a dead Ray: the router waits for replicas that never come)
or raise, and recovers on demand. Checked: a call on a hung Ray falls back within a bound far under the request
deadline, answered by the in-process reranker and flagged degraded (as the answer's `degraded` note); the first
probe answered switches back to Ray; the service's reranker is ready before Ray is attached.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from skbqa.query.context import Candidate, QueryContext
from skbqa.query.structured import StructuredQuery
from skbqa.serving import runtime
from skbqa.serving.settings import ServiceSettings
from skbqa.stages.config import AfConfig
from skbqa.stages.rerank.base import RerankOutcome
from skbqa.stages.rerank.ray_fallback import NOT_ATTACHED, RayOrInProcess
from skbqa.stages.rerank.ray_serve import RayServeReranker
from skbqa.stages.rerank.ray_wire import RerankRequest, RerankResponse
from skbqa.stages.rerank.step import RerankStep

BOUND_S = 1.5  # probe every 0.05 s, probe timeout 0.2 s: a hung call must be given up well within this


class Reverse:
    """The in-process reranker: reverses the order (so its answers are told apart from the input order)."""

    name = "local"

    def __init__(self) -> None:
        self.calls = 0

    def rerank(
        self, query: QueryContext, parsed: StructuredQuery | None, candidates: list[Candidate]
    ) -> RerankOutcome:
        self.calls += 1
        return RerankOutcome(list(reversed(candidates)))


class FakeRay:
    """A Serve handle: while `alive`, replies as `Reverse` would; otherwise every call blocks for its whole
    timeout (then TimeoutError) or, with `error`, raises at once."""

    def __init__(self) -> None:
        self.alive = threading.Event()
        self.error: BaseException | None = None
        self.rerank = _Method(self, describe=False)
        self.describe = _Method(self, describe=True)


class _Method:
    def __init__(self, ray: FakeRay, *, describe: bool) -> None:
        self._ray, self._describe = ray, describe
        self.calls = 0

    def remote(self, request: RerankRequest | None = None) -> _Response:
        self.calls += 1
        return _Response(self._ray, request, self._describe)


class _Response:
    def __init__(self, ray: FakeRay, request: RerankRequest | None, describe: bool) -> None:
        self._ray, self._request, self._describe = ray, request, describe

    def result(self, *, timeout_s: float | None = None) -> Any:
        if self._ray.error is not None:
            raise self._ray.error
        if not self._ray.alive.wait(timeout_s):
            raise TimeoutError("Timed out resolving to ObjectRef.")
        if self._describe:
            return {"requests": 0}
        assert self._request is not None
        return RerankResponse([c[0] for c in reversed(self._request.candidates)])

    def cancel(self) -> None:
        pass


def _candidates() -> list[Candidate]:
    return [Candidate(p, 1.0 - p / 10, "t", {}, {}) for p in (1, 2, 3)]


def _query() -> QueryContext:
    return QueryContext("q", encoder=None)  # type: ignore[arg-type]


def _wait_until(condition: Any, within_s: float = 3.0) -> bool:
    end = time.monotonic() + within_s
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(0.01)
    return bool(condition())


@pytest.fixture
def fake_ray() -> FakeRay:
    return FakeRay()


@pytest.fixture
def reranker() -> Any:
    degraded: list[int] = []
    wrapper = RayOrInProcess(
        Reverse(), probe_every_s=0.05, probe_timeout_s=0.2, on_degraded=lambda: degraded.append(1)
    )
    wrapper.degraded_count = degraded  # type: ignore[attr-defined]
    yield wrapper
    wrapper.close()


def test_before_ray_is_attached_the_reranker_answers_in_process_flagged(reranker: RayOrInProcess) -> None:
    outcome = reranker.rerank(_query(), None, _candidates())
    assert [c.position for c in outcome.candidates] == [3, 2, 1]
    assert outcome.degraded == NOT_ATTACHED
    assert reranker.degraded_count == [1]  # type: ignore[attr-defined]


def test_a_hung_ray_call_falls_back_within_a_bound_then_ray_serves_again(
    reranker: RayOrInProcess, fake_ray: FakeRay
) -> None:
    # A 30 s wait on Ray (the LLM rerankers' kind): only the watcher can end it early.
    path = RayServeReranker(fake_ray, "local", timeout_s=30.0)
    fake_ray.alive.set()
    reranker.attach(path)
    assert _wait_until(lambda: reranker.on_ray)
    served = reranker.rerank(_query(), None, _candidates())
    assert (served.degraded, [c.position for c in served.candidates]) == ("", [3, 2, 1])

    fake_ray.alive.clear()  # Ray dies: calls and probes now hang
    started = time.monotonic()
    outcome = reranker.rerank(_query(), None, _candidates())
    took = time.monotonic() - started
    assert took < BOUND_S, took
    assert [c.position for c in outcome.candidates] == [3, 2, 1]  # the in-process ranking, same order
    assert outcome.degraded.startswith("Ray unavailable"), outcome.degraded
    # While down, calls go in process at once, without touching Ray.
    before = fake_ray.rerank.calls
    started = time.monotonic()
    assert reranker.rerank(_query(), None, _candidates()).degraded
    assert time.monotonic() - started < 0.1 and fake_ray.rerank.calls == before

    fake_ray.alive.set()  # Ray is back: the next probe answered switches back
    assert _wait_until(lambda: reranker.on_ray)
    again = reranker.rerank(_query(), None, _candidates())
    assert again.degraded == "" and fake_ray.rerank.calls == before + 1


def test_a_failing_ray_call_falls_back_at_once(reranker: RayOrInProcess, fake_ray: FakeRay) -> None:
    fake_ray.alive.set()
    reranker.attach(RayServeReranker(fake_ray, "local", timeout_s=30.0))
    assert _wait_until(lambda: reranker.on_ray)
    fake_ray.error = RuntimeError("ActorDiedError: the replica died")
    outcome = reranker.rerank(_query(), None, _candidates())
    assert [c.position for c in outcome.candidates] == [3, 2, 1]
    assert "ray error: RuntimeError" in outcome.degraded
    fake_ray.error = None
    assert _wait_until(lambda: reranker.on_ray)


def test_step_8_flags_the_answer_degraded(reranker: RayOrInProcess) -> None:
    step = RerankStep(stores=None, chat=None, rerankers={"local": reranker})  # type: ignore[arg-type]
    query = _query()
    ranked = step.run(query, None, _candidates(), 3, AfConfig().with_options({"reranker": "local"}))
    assert [c.position for c in ranked] == [3, 2, 1]
    assert query.notes["degraded"] == {
        "reason": NOT_ATTACHED,
        "stage": "rerank",
        "answered_by": "local reranker in process",
    }


def test_the_service_is_ready_before_ray_and_attaches_it_in_the_background(
    monkeypatch: pytest.MonkeyPatch, fake_ray: FakeRay
) -> None:
    release = threading.Event()

    def slow_ray(settings: ServiceSettings, names: list[str]) -> dict[str, Any]:
        release.wait(10)  # Ray's start: seconds to minutes on a busy machine
        return dict.fromkeys(names, fake_ray)

    monkeypatch.setattr(runtime, "ray_handles", slow_ray)
    settings = ServiceSettings(index=Path("unused"), role="reranker", ray_address="local")
    started = time.monotonic()
    rerankers = runtime.ray_rerankers(settings, {"local": Reverse()})
    assert time.monotonic() - started < 0.5
    wrapper = rerankers["local"]
    assert isinstance(wrapper, RayOrInProcess)
    try:
        assert wrapper.rerank(_query(), None, _candidates()).degraded == NOT_ATTACHED
        fake_ray.alive.set()
        release.set()
        assert _wait_until(lambda: wrapper.on_ray, 5.0)
        assert wrapper.rerank(_query(), None, _candidates()).degraded == ""
    finally:
        release.set()
        wrapper.close()
