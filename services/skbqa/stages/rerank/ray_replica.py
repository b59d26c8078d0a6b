"""What one replica of the reranker app runs, free of Ray (so it can be tested and profiled in process): its
settings, and `RerankerCore`, which answers a request only at the knowledge-base version the request was computed
at (`ray_serve` deploys it; `ray_wire` is the wire format)."""

from __future__ import annotations

import logging
import math
import os
import threading
import time
from collections import deque
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skbqa.common.errors import InvalidInputError, clip
from skbqa.ingest.snapshot_fetch import SnapshotFetcher, SnapshotLocation
from skbqa.models.chat import ChatModel
from skbqa.models.openai_chat import LlmSettings
from skbqa.query.context import Candidate, QueryContext
from skbqa.query.encoder import Encoder
from skbqa.stages.rerank.base import Reranker
from skbqa.stages.rerank.ray_wire import RerankRequest, RerankResponse, added_scores, input_order
from skbqa.stages.rerank.registry import LLM_RERANKERS, RERANKERS, RerankerSettings, build_reranker
from skbqa.stores.index import IndexStores, kb_version, open_index, read_manifest

logger = logging.getLogger(__name__)

APP_NAME = "skbqa-reranker"

BATCH_HISTORY = 1024  # batch sizes a replica remembers for describe(); enough to see batching, bounded memory
# A replica keeps the version it served before a reopen this long, for callers still at it (as a stage replica
# does, serving/stage_versions.py), and tries a reopen at most this often (the request's version may not be on
# its volume yet).
KEEP_PREVIOUS_S = 30.0
REOPEN_EVERY_S = 1.0


@dataclass(frozen=True)
class RayRerankerSettings:
    reranker: str = "local"  # a name build_reranker knows: none, local, pointwise, listwise, pairwise
    num_replicas: int = 1
    max_batch_size: int = 8
    batch_wait_timeout_s: float = 0.01
    # Batches a replica runs at once. 1 = the next batch fills while one runs (best for CPU-bound rerankers);
    # more lets an LLM reranker's fast requests overtake a batch held up by one slow request.
    max_concurrent_batches: int = 1
    num_cpus: float = 1.0  # ray_actor_options per replica
    # Requests a replica accepts at once; None = (max_concurrent_batches + 1) × max_batch_size, so a full batch
    # can queue while the running ones finish (Serve's default of 5 would cap every batch at 5).
    max_ongoing_requests: int | None = None
    # Requests of one batch run at once; None = 1 for none/local (CPU-bound: threads would only contend for
    # the GIL) and max_batch_size for the LLM rerankers (they wait on the network).
    batch_concurrency: int | None = None
    encoder_threads: int = 1  # the replica's question encoder; one per CPU the replica reserves is plenty
    # the S3-compatible endpoint of shipped snapshots (None: SKBQA_S3_ENDPOINT_URL, else AWS's own)
    s3_endpoint_url: str | None = None
    rerank: RerankerSettings = field(default_factory=RerankerSettings)
    app_name: str = APP_NAME

    def validated(self) -> RayRerankerSettings:
        if self.reranker not in RERANKERS:
            raise InvalidInputError(f"unknown reranker {self.reranker!r}; available: {', '.join(RERANKERS)}")
        for what in ("num_replicas", "max_batch_size", "max_concurrent_batches", "encoder_threads"):
            _at_least_one(what, getattr(self, what))
        # The derived ones after the fields they default from, which are now known to be integers.
        _at_least_one("max_ongoing_requests", self.ongoing_requests)
        _at_least_one("batch_concurrency", self.concurrency)
        if not math.isfinite(self.batch_wait_timeout_s) or self.batch_wait_timeout_s < 0:
            raise InvalidInputError(f"batch_wait_timeout_s must be >= 0, got {self.batch_wait_timeout_s!r}")
        if not math.isfinite(self.num_cpus) or self.num_cpus < 0:
            raise InvalidInputError(f"num_cpus must be >= 0, got {self.num_cpus!r}")
        if not self.app_name:
            raise InvalidInputError("app_name must not be empty")
        return self

    @property
    def ongoing_requests(self) -> int:
        if self.max_ongoing_requests is not None:
            return self.max_ongoing_requests
        return (self.max_concurrent_batches + 1) * self.max_batch_size

    @property
    def concurrency(self) -> int:
        if self.batch_concurrency is not None:
            return self.batch_concurrency
        return self.max_batch_size if self.reranker in LLM_RERANKERS else 1


def _at_least_one(what: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidInputError(f"{what} must be an integer of at least 1, got {clip(repr(value))}")


# ------------------------------------------------------------------------------------------------ replica side


class RerankerCore:
    """What one replica runs, free of Ray (so it can be tested and profiled in process).

    Follows the knowledge base's versions: it answers a request at the version the request names
    (`RerankRequest.kb_version`) or not at all — a reply of another version, in the input order, that the caller
    does not use. A request at a newer version than the one served starts a reopen in the background (at most one
    at a time, and one try per `REOPEN_EVERY_S`): of `index_dir` when it is shared with the updater and shows the
    version, otherwise of a copy fetched from where the request says the version was shipped
    (`RerankRequest.snapshot`, the caller's own copy's origin) with the stage replicas' own fetcher
    (`ingest.snapshot_fetch`), into a directory of this replica's own beside `index_dir`. The new snapshot is
    served from then on and the previous one is kept `KEEP_PREVIOUS_S` for callers still at it; copies no longer
    held are removed at the next reopen."""

    def __init__(
        self,
        index_dir: Path | str,
        settings: RayRerankerSettings,
        llm: LlmSettings | None = None,
        *,
        encoder: Encoder | None = None,
        chat: ChatModel | None = None,
    ) -> None:
        from skbqa.models.local_encoder import encoder_from_name

        self.settings = settings.validated()
        self._index_dir = Path(index_dir)
        stores = open_index(index_dir)
        self._built_with = stores.manifest.get("encoder", {}).get("name", "")
        self.encoder: Encoder = encoder or encoder_from_name(self._built_with, threads=settings.encoder_threads)
        if chat is None and settings.reranker in LLM_RERANKERS:
            chat = _chat_model(llm)
        self._chat = chat
        self.version = kb_version(stores.manifest)
        self._served: dict[int, tuple[IndexStores, Reranker]] = {self.version: (stores, self._build(stores))}
        self._retire_at: dict[int, float] = {}
        self._reopening: threading.Thread | None = None
        self._directories: dict[int, Path] = {self.version: self._index_dir}  # where each held version's files are
        endpoint = settings.s3_endpoint_url or os.environ.get("SKBQA_S3_ENDPOINT_URL") or None
        # copies of its own: a stage replica (or another Ray replica) beside the same index sweeps its own root
        root = self._index_dir.parent / f"{self._index_dir.name}.ray-versions" / f"replica-{os.getpid()}"
        self._fetcher = SnapshotFetcher(self._index_dir, endpoint_url=endpoint, root=root)
        self._disk = threading.Lock()  # one of a fetch and a sweep at a time: a sweep removes unfinished fetches
        self._in_use: dict[int, int] = {}  # requests answering at each version now: never retired under them
        try:  # what an earlier run of this replica, and replicas that died, left beside the index
            self._fetcher.claim(siblings=True)
        except OSError as exc:
            logger.warning("reranker replica: the copies of earlier runs could not be removed: %s", exc)
        self._last_reopen = -math.inf
        self.last_error = ""
        self._lock = threading.Lock()
        self._batches: deque[int] = deque(maxlen=BATCH_HISTORY)
        self._requests = 0

    @property
    def stores(self) -> IndexStores:
        return self._served[self.version][0]

    @property
    def reranker(self) -> Reranker:
        return self._served[self.version][1]

    def _build(self, stores: IndexStores) -> Reranker:
        return build_reranker(self.settings.reranker, stores, self._chat, self.settings.rerank)

    def warm(self) -> RerankerCore:
        """Load the encoder now: readiness then means the first request pays no model load."""
        self.encoder.encode(["warm up"])
        return self

    def rerank_batch(self, requests: Sequence[RerankRequest]) -> list[RerankResponse]:
        with self._lock:
            self._batches.append(len(requests))
            self._requests += len(requests)
        workers = min(self.settings.concurrency, len(requests))
        if workers <= 1:
            return [self.rerank_one(r) for r in requests]
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="rerank-batch") as pool:
            return list(pool.map(self.rerank_one, requests))

    def rerank_one(self, request: RerankRequest) -> RerankResponse:
        """One request; never raises, so one bad request cannot fail the others of its batch."""
        wanted = getattr(request, "kb_version", None)  # a caller older than versions sends none
        at, reranker = self._reranker_at(wanted, getattr(request, "snapshot", None))
        if reranker is None:
            return input_order(
                request, f"replica serves knowledge-base version {at}, not {wanted}; not reranked", kb_version=at
            )
        try:
            return self._rerank_at(at, reranker, request)
        finally:
            with self._lock:
                self._in_use[at] -= 1

    def _rerank_at(self, at: int, reranker: Reranker, request: RerankRequest) -> RerankResponse:
        try:
            candidates = [Candidate(p, s, src, dict(sc), dict(ev)) for p, s, src, sc, ev in request.candidates]
            query = QueryContext(request.question, self.encoder, options=dict(request.options))
            outcome = reranker.rerank(query, request.parsed, candidates)
        except InvalidInputError as exc:
            return RerankResponse([c[0] for c in request.candidates], invalid_input=str(exc), kb_version=at)
        except Exception as exc:  # the contract: a failing reranker leaves the input order and says why
            logger.exception("rerank failed")
            return input_order(request, f"replica error: {type(exc).__name__}: {exc}", kb_version=at)
        return RerankResponse(
            [c.position for c in outcome.candidates],
            added_scores(request.candidates, outcome.candidates),
            outcome.note,
            dict(outcome.usage),
            dict(query.timings),
            kb_version=at,
        )

    # ------------------------------------------------------------------------------------------ versions

    def _reranker_at(
        self, wanted: int | None, snapshot: SnapshotLocation | None = None
    ) -> tuple[int, Reranker | None]:
        """(the version answered at, its reranker), or (the version served, None) when `wanted` is not held;
        a newer one is then opened in the background."""
        with self._lock:
            now = time.monotonic()
            self._retire_expired(now)
            if wanted is None:
                wanted = self.version
            held = self._served.get(wanted)
            if held is not None:
                self._in_use[wanted] = self._in_use.get(wanted, 0) + 1  # released by rerank_one
                return wanted, held[1]
            current = self.version
            newer = wanted > current and self._reopening is None and now - self._last_reopen >= REOPEN_EVERY_S
            if newer:
                self._last_reopen = now
                self._reopening = threading.Thread(
                    target=self.reopen, args=(snapshot,), name="reranker-reopen", daemon=True
                )
                self._reopening.start()
        return current, None

    def _retire_expired(self, now: float) -> None:
        """Let go of the versions kept past their time, unless a request still answers at one (under _lock)."""
        for version, when in list(self._retire_at.items()):
            if when <= now and not self._in_use.get(version):
                self._served.pop(version, None)
                self._directories.pop(version, None)
                self._in_use.pop(version, None)
                del self._retire_at[version]

    def sweep(self) -> None:
        """Remove the local copies of versions let go (and of fetches that did not finish); runs
        `KEEP_PREVIOUS_S` after each switch, so a copy goes once it is no longer served, not at the next reopen."""
        with self._disk:
            with self._lock:
                self._retire_expired(time.monotonic())
                held = set(self._directories.values())
                pending = bool(self._retire_at)
            self._fetcher.sweep(held, self.version)
        if pending:  # kept by a request still at it: look again shortly
            self._sweep_later(REOPEN_EVERY_S * 5)

    def _sweep_later(self, delay: float) -> None:
        timer = threading.Timer(delay, self.sweep)
        timer.daemon = True
        timer.start()

    def reopen(self, snapshot: SnapshotLocation | None = None) -> int:
        """Open the index as it is now, or `snapshot` fetched when the index does not show that version, and
        serve it if it is newer; returns the version served after. Errors (the index read while a fold renamed
        it, a fetch refused or the store away) are logged and kept in `last_error`: a later request at the new
        version tries again (and fetches anew)."""
        try:
            directory = self._index_dir
            if snapshot is not None and snapshot.kb_version > max(
                self.version, kb_version(read_manifest(directory))
            ):
                with self._disk:  # not shared with the updater: its own copy
                    directory = self._fetcher.fetch(snapshot)
            stores = open_index(directory)
            version = kb_version(stores.manifest)
            built_with = stores.manifest.get("encoder", {}).get("name", "")
            if built_with != self._built_with:
                raise InvalidInputError(
                    f"version {version} of the index was built with encoder {built_with!r}, this replica "
                    f"encodes with {self._built_with!r}; redeploy the app"
                )
            if version > self.version:
                reranker = self._build(stores)
                with self._lock:
                    self._retire_at[self.version] = time.monotonic() + KEEP_PREVIOUS_S
                    self._served[version] = (stores, reranker)
                    self._directories[version] = directory
                    self.version = version
                logger.info("reranker replica: serving knowledge-base version %d (%s)", version, directory.name)
                self._sweep_later(KEEP_PREVIOUS_S)  # the previous version's copy, once it is let go
            self.sweep()  # copies of versions let go, and of failed fetches
            self.last_error = ""
        except Exception as exc:
            self.last_error = f"{type(exc).__name__}: {exc}"[:300]
            logger.warning("reranker replica: opening the index's new version failed: %s", self.last_error)
        finally:
            with self._lock:
                self._reopening = None
        return self.version

    def describe(self) -> dict[str, Any]:
        """For observability and tests: what this replica runs and the batch sizes it has seen."""
        with self._lock:
            batches = list(self._batches)
            requests = self._requests
            versions = sorted(self._served)
        return {
            "pid": os.getpid(),
            "reranker": self.reranker.name,
            "encoder": self.encoder.name,
            "index": str(self.stores.directory),
            "kb_version": self.version,
            "kb_versions": versions,
            "max_batch_size": self.settings.max_batch_size,
            "batch_wait_timeout_s": self.settings.batch_wait_timeout_s,
            "max_concurrent_batches": self.settings.max_concurrent_batches,
            "batch_concurrency": self.settings.concurrency,
            "batch_sizes": batches,
            "requests": requests,
        }


def _chat_model(llm: LlmSettings | None) -> ChatModel:
    from skbqa.models.openai_chat import OpenAIChatModel

    return OpenAIChatModel.from_settings(llm) if llm is not None else OpenAIChatModel.from_env()
