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

Knowledge-base versions: each version a service opens has its own `RayOrInProcess` (`follow`), whose fallback
reads that version, sharing one Ray path and watcher. A call sends its version; a replica that does not hold it
answers nothing usable (`RayVersionError`: it opens the newer version meanwhile), and the call is answered in
process at its own version, flagged degraded as above, without marking Ray down. So an answer never mixes the
replica's version with the caller's.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Protocol

from skbqa.ingest.snapshot_fetch import SnapshotLocation
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
        kb_version: int | None = None,
        snapshot: SnapshotLocation | None = None,
    ) -> RerankOutcome: ...

    def probe(self, timeout_s: float) -> None: ...


class _RayLink:
    """The Ray path of one reranker and whether it answers (the watcher), shared by the reranker's
    `RayOrInProcess` of every knowledge-base version a service opens (`RayOrInProcess.follow`)."""

    def __init__(self, name: str, probe_every_s: float, probe_timeout_s: float) -> None:
        self.name = name
        self.probe_every_s = probe_every_s
        self.probe_timeout_s = probe_timeout_s
        self.ray: RayPath | None = None
        self.lock = threading.Lock()
        self.why = NOT_ATTACHED
        # Set while Ray is not to be used: new calls go in process and calls waiting on Ray stop waiting.
        self.down = threading.Event()
        self.down.set()
        self._stop = threading.Event()
        self._watcher: threading.Thread | None = None

    def attach(self, ray: RayPath) -> None:
        with self.lock:
            self.ray = ray
            self.why = "Ray attached, not probed yet"
            if self._watcher is None:
                self._watcher = threading.Thread(target=self._watch, name=f"ray-watch-{self.name}", daemon=True)
                self._watcher.start()

    def close(self) -> None:
        self._stop.set()
        if self._watcher is not None:
            self._watcher.join(self.probe_every_s + self.probe_timeout_s + 1.0)

    def mark_down(self, why: str) -> None:
        with self.lock:
            was_up = not self.down.is_set()
            self.why = why
            self.down.set()
        if was_up:
            logger.warning("reranker %s: serving in process: %s", self.name, why)

    def mark_up(self) -> None:
        with self.lock:
            was_down = self.down.is_set()
            self.why = ""
            self.down.clear()
        if was_down:
            logger.info("reranker %s: serving on Ray again", self.name)

    def _watch(self) -> None:
        while not self._stop.is_set():
            ray = self.ray
            if ray is not None:
                try:
                    ray.probe(self.probe_timeout_s)
                except Exception as exc:  # a timeout or any of Ray's errors: Ray is not answering
                    detail = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
                    self.mark_down(f"Ray unavailable: probe failed: {type(exc).__name__}: {detail}".rstrip(": "))
                else:
                    self.mark_up()
            self._stop.wait(self.probe_every_s)


class RayOrInProcess:
    """A `Reranker`: Ray when attached and answering, otherwise `fallback` in process, flagged degraded.

    `kb_version`: the knowledge-base version `fallback` reads (None: not checked). Ray's answer is used only
    when its replica computed at that version (`RayVersionError` otherwise); a service opening a new version
    makes that version's wrapper with `follow`, which shares this one's Ray path and watcher."""

    def __init__(
        self,
        fallback: Reranker,
        *,
        probe_every_s: float = DEFAULT_PROBE_EVERY_S,
        probe_timeout_s: float = DEFAULT_PROBE_TIMEOUT_S,
        on_degraded: Callable[[], None] | None = None,
        kb_version: int | None = None,
        snapshot: SnapshotLocation | None = None,
        _link: _RayLink | None = None,
    ) -> None:
        self.name = fallback.name
        self.snapshot = snapshot  # where `kb_version` was shipped, for a Ray replica that must fetch it
        self.kb_version = kb_version
        self._fallback = fallback
        self._on_degraded = on_degraded
        self._link = _link or _RayLink(self.name, probe_every_s, probe_timeout_s)

    def follow(
        self, fallback: Reranker, kb_version: int | None, snapshot: SnapshotLocation | None = None
    ) -> RayOrInProcess:
        """The same reranker at another knowledge-base version: `fallback` built on it, this one's Ray path."""
        return RayOrInProcess(
            fallback, on_degraded=self._on_degraded, kb_version=kb_version, snapshot=snapshot, _link=self._link
        )

    @property
    def on_ray(self) -> bool:
        return self._link.ray is not None and not self._link.down.is_set()

    @property
    def why_not_ray(self) -> str:
        """ "" while Ray serves; otherwise why not (for logs and tests)."""
        with self._link.lock:
            return "" if self.on_ray else self._link.why

    def attach(self, ray: RayPath) -> None:
        """Use `ray` from its first answered probe on, and watch it from now on (once; later calls replace the
        path the same watcher probes)."""
        self._link.attach(ray)

    def close(self) -> None:
        self._link.close()

    def rerank(
        self, query: QueryContext, parsed: StructuredQuery | None, candidates: list[Candidate]
    ) -> RerankOutcome:
        from skbqa.stages.rerank.ray_serve import RayCallError, RayVersionError

        link = self._link
        ray = link.ray
        why = ""
        if ray is not None and not link.down.is_set():
            try:
                return ray.try_rerank(
                    query,
                    parsed,
                    candidates,
                    abandon=link.down,
                    kb_version=self.kb_version,
                    snapshot=self.snapshot,
                )
            except RayVersionError as exc:  # Ray works; its replica is not at this version (yet, or any more)
                why = f"{exc}; answered at {self.kb_version} in process"
            except RayCallError as exc:
                link.mark_down(f"Ray unavailable: {exc}")
        if not why:
            with link.lock:
                why = link.why
        outcome = self._fallback.rerank(query, parsed, candidates)
        outcome.degraded = why
        if self._on_degraded is not None:
            self._on_degraded()
        return outcome
