"""Step 8 on Ray Serve with the same reranker in process as its fallback (`RayOrInProcess`).

Ray is an optional accelerator of the reranker service, not a dependency of its answers: while Ray is not
attached yet (it starts in the background, `serving/runtime.py`), is down, or stops answering, the reranker
built in process under the same name answers instead — the same ranking, since Ray's replicas build that
reranker by the same name over the same index — and the outcome says so (`RerankOutcome.degraded`, which step 8
turns into the answer's `degraded` note, as a lost encoder server is flagged).

Failing fast: a watcher thread probes Ray (`describe` on a replica) every `probe_every_s`. A probe that fails or
takes longer than `probe_timeout_s` marks Ray down, which also ends the wait of every call in flight on Ray
(`try_rerank(abandon=...)`); so a call reaching a dead Ray falls back within about probe_every_s +
probe_timeout_s, whatever its own wait. A call that fails on its own marks Ray down too. While down, calls go in
process at once, and the first probe answered marks Ray up again.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Protocol

from skbqa.query.context import Candidate, QueryContext
from skbqa.query.structured import StructuredQuery
from skbqa.stages.rerank.base import Reranker, RerankOutcome

logger = logging.getLogger(__name__)

DEFAULT_PROBE_EVERY_S = 1.0
# A replica answers `describe` in milliseconds; 2 s leaves room for a busy 2-core machine without letting a
# dead Ray hold calls for long.
DEFAULT_PROBE_TIMEOUT_S = 2.0
NOT_ATTACHED = "Ray not attached yet (starting)"


class RayPath(Protocol):
    """What `RayOrInProcess` needs of the Ray side (`RayServeReranker`)."""

    def try_rerank(
        self,
        query: QueryContext,
        parsed: StructuredQuery | None,
        candidates: list[Candidate],
        *,
        abandon: threading.Event | None = None,
    ) -> RerankOutcome: ...

    def probe(self, timeout_s: float) -> None: ...


class RayOrInProcess:
    """A `Reranker`: Ray when attached and answering, otherwise `fallback` in process, flagged degraded."""

    def __init__(
        self,
        fallback: Reranker,
        *,
        probe_every_s: float = DEFAULT_PROBE_EVERY_S,
        probe_timeout_s: float = DEFAULT_PROBE_TIMEOUT_S,
        on_degraded: Callable[[], None] | None = None,
    ) -> None:
        self.name = fallback.name
        self._fallback = fallback
        self._probe_every_s = probe_every_s
        self._probe_timeout_s = probe_timeout_s
        self._on_degraded = on_degraded
        self._ray: RayPath | None = None
        self._lock = threading.Lock()
        self._why = NOT_ATTACHED
        # Set while Ray is not to be used: new calls go in process and calls waiting on Ray stop waiting.
        self._down = threading.Event()
        self._down.set()
        self._stop = threading.Event()
        self._watcher: threading.Thread | None = None

    @property
    def on_ray(self) -> bool:
        return self._ray is not None and not self._down.is_set()

    @property
    def why_not_ray(self) -> str:
        """ "" while Ray serves; otherwise why not (for logs and tests)."""
        with self._lock:
            return "" if self.on_ray else self._why

    def attach(self, ray: RayPath) -> None:
        """Use `ray` from its first answered probe on, and watch it from now on (once; later calls replace the
        path the same watcher probes)."""
        with self._lock:
            self._ray = ray
            self._why = "Ray attached, not probed yet"
            if self._watcher is None:
                self._watcher = threading.Thread(target=self._watch, name=f"ray-watch-{self.name}", daemon=True)
                self._watcher.start()

    def close(self) -> None:
        self._stop.set()
        if self._watcher is not None:
            self._watcher.join(self._probe_every_s + self._probe_timeout_s + 1.0)

    def rerank(
        self, query: QueryContext, parsed: StructuredQuery | None, candidates: list[Candidate]
    ) -> RerankOutcome:
        from skbqa.stages.rerank.ray_serve import RayCallError

        ray = self._ray
        if ray is not None and not self._down.is_set():
            try:
                return ray.try_rerank(query, parsed, candidates, abandon=self._down)
            except RayCallError as exc:
                self._mark_down(f"Ray unavailable: {exc}")
        with self._lock:
            why = self._why
        outcome = self._fallback.rerank(query, parsed, candidates)
        outcome.degraded = why
        if self._on_degraded is not None:
            self._on_degraded()
        return outcome

    def _mark_down(self, why: str) -> None:
        with self._lock:
            was_up = not self._down.is_set()
            self._why = why
            self._down.set()
        if was_up:
            logger.warning("reranker %s: serving in process: %s", self.name, why)

    def _mark_up(self) -> None:
        with self._lock:
            was_down = self._down.is_set()
            self._why = ""
            self._down.clear()
        if was_down:
            logger.info("reranker %s: serving on Ray again", self.name)

    def _watch(self) -> None:
        while not self._stop.is_set():
            ray = self._ray
            if ray is not None:
                try:
                    ray.probe(self._probe_timeout_s)
                except Exception as exc:  # a timeout or any of Ray's errors: Ray is not answering
                    detail = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
                    self._mark_down(f"Ray unavailable: probe failed: {type(exc).__name__}: {detail}".rstrip(": "))
                else:
                    self._mark_up()
            self._stop.wait(self._probe_every_s)
