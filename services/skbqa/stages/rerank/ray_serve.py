"""The reranker (AF-Retriever step 8) as a Ray Serve deployment, and `RayServeReranker`, the `Reranker` port over it.

- Same contract as every reranker: never adds or drops a candidate. A call that fails, times out or returns
  something that is not a permutation of the input gives the input order and a note saying why; a request the
  replica's reranker refuses as invalid (InvalidInputError) is raised again in the caller, as in process.
- `ray` is imported only inside functions: the embedded install does not need it. The wire format is `ray_wire`.
- Replicas open the index from `index_dir`, so the directory must be readable where the replicas run (same
  machine, or a shared volume in a cluster). An LLM reranker's endpoint comes from the replica's own
  `SKBQA_LLM_*` environment unless `LlmSettings` are passed to `deploy_reranker` (those then travel in the
  deployment's init arguments, which Serve keeps in its controller state).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import math
import os
import threading
import time
from collections import deque
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skbqa.changes.snapshot import kb_version
from skbqa.common.errors import BackendUnavailableError, InvalidInputError, clip
from skbqa.models.chat import ChatModel
from skbqa.models.openai_chat import LlmSettings
from skbqa.query.context import Candidate, QueryContext
from skbqa.query.encoder import Encoder
from skbqa.query.structured import StructuredQuery
from skbqa.stages.rerank.base import Reranker, RerankOutcome
from skbqa.stages.rerank.llm_common import DEADLINE_OPTION, DEFAULT_DEADLINE_SECONDS
from skbqa.stages.rerank.ray_wire import RerankRequest, RerankResponse, added_scores, input_order, reorder
from skbqa.stages.rerank.registry import LLM_RERANKERS, RERANKERS, RerankerSettings, build_reranker
from skbqa.stores.index import IndexStores, open_index, read_manifest

logger = logging.getLogger(__name__)

APP_NAME = "skbqa-reranker"
BATCH_HISTORY = 1024  # batch sizes a replica remembers for describe(); enough to see batching, bounded memory
# The default wait covers the LLM rerankers' own deadline plus the hop, so their "best order so far" arrives.
DEFAULT_DEADLINE_SLACK_S = 5.0
DEFAULT_TIMEOUT_S = DEFAULT_DEADLINE_SECONDS + DEFAULT_DEADLINE_SLACK_S
ABANDON_POLL_S = 0.1  # how soon a call waiting on Ray notices that Ray was found gone (see `try_rerank`)
# A replica keeps the version it served before a reopen this long, for callers still at it (as a stage replica
# does, serving/stage_versions.py), and tries a reopen at most this often (the request's version may not be on
# its volume yet).
KEEP_PREVIOUS_S = 30.0
REOPEN_EVERY_S = 1.0


class RayCallError(BackendUnavailableError):
    """A call to the reranker app got no usable reply: timed out, failed in Ray, or the reply was invalid."""


class RayVersionError(RayCallError):
    """The replica answered at another knowledge-base version than the caller's (it does not hold the caller's
    yet, or any more): Ray works, but this answer is not to be used."""


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
    does not use. A request at a newer version than the one served starts a reopen of `index_dir` in the
    background (at most one at a time, and one try per `REOPEN_EVERY_S`); the new snapshot is served from then on
    and the previous one is kept `KEEP_PREVIOUS_S` for callers still at it."""

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
        at, reranker = self._reranker_at(wanted)
        if reranker is None:
            return input_order(
                request, f"replica serves knowledge-base version {at}, not {wanted}; not reranked", kb_version=at
            )
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

    def _reranker_at(self, wanted: int | None) -> tuple[int, Reranker | None]:
        """(the version answered at, its reranker), or (the version served, None) when `wanted` is not held;
        a newer one is then opened in the background."""
        with self._lock:
            now = time.monotonic()
            for version, when in list(self._retire_at.items()):
                if when <= now:
                    self._served.pop(version, None)
                    del self._retire_at[version]
            if wanted is None:
                wanted = self.version
            held = self._served.get(wanted)
            if held is not None:
                return wanted, held[1]
            current = self.version
            newer = wanted > current and self._reopening is None and now - self._last_reopen >= REOPEN_EVERY_S
            if newer:
                self._last_reopen = now
                self._reopening = threading.Thread(target=self.reopen, name="reranker-reopen", daemon=True)
                self._reopening.start()
        return current, None

    def reopen(self) -> int:
        """Open the index as it is now and serve it if it is newer; returns the version served after. Errors
        (e.g. the index read while a fold renamed it) are logged and kept in `last_error`: a later request at
        the new version tries again."""
        try:
            stores = open_index(self._index_dir)
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
                    self.version = version
                logger.info("reranker replica: serving knowledge-base version %d", version)
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


def reranker_deployment(settings: RayRerankerSettings) -> Any:
    """The Serve deployment class for these settings (a `ray.serve.Deployment`; bind it with
    `(index_dir, settings, llm)`). Built in a function so that importing this module does not import ray, and so
    the batch limits, which `@serve.batch` takes at class creation, come from the settings."""
    from ray import serve

    settings = settings.validated()

    @serve.deployment(
        name="reranker",
        num_replicas=settings.num_replicas,
        max_ongoing_requests=settings.ongoing_requests,
        ray_actor_options={"num_cpus": settings.num_cpus},
    )
    class RerankerDeployment:
        def __init__(self, index_dir: str, settings: RayRerankerSettings, llm: LlmSettings | None) -> None:
            self._core = RerankerCore(index_dir, settings, llm).warm()

        @serve.batch(
            max_batch_size=settings.max_batch_size,
            batch_wait_timeout_s=settings.batch_wait_timeout_s,
            max_concurrent_batches=settings.max_concurrent_batches,
        )
        async def rerank(self, requests: list[RerankRequest]) -> list[RerankResponse]:
            # Off the event loop: requests keep arriving (and the next batch fills) while this one computes.
            return await asyncio.to_thread(self._core.rerank_batch, requests)

        def describe(self) -> dict[str, Any]:
            return self._core.describe()

    return RerankerDeployment


def app_builder(args: dict[str, Any]) -> Any:
    """Ray Serve application builder for declarative deployments (KubeRay `RayService.serveConfigV2`:
    ``import_path: skbqa.stages.rerank.ray_serve:app_builder`` with ``args: {reranker, index_dir, ...}``). Settings not
    given keep their defaults; the LLM comes from the replicas' `SKBQA_LLM_*` environment."""
    known = {f.name for f in dataclasses.fields(RayRerankerSettings)} - {"rerank"}
    index_dir = args.get("index_dir")
    if not index_dir:
        raise InvalidInputError("the reranker app needs args.index_dir (the index path inside the Ray pods)")
    unknown = set(args) - known - {"index_dir"}
    if unknown:
        raise InvalidInputError(f"unknown reranker app argument(s): {', '.join(sorted(unknown))}")
    settings = RayRerankerSettings(**{k: v for k, v in args.items() if k in known}).validated()
    return reranker_deployment(settings).bind(str(index_dir), settings, None)


def start_local_ray(num_cpus: int = 2, *, attempts: int = 2) -> None:
    """A private Ray on this machine (127.0.0.1, no dashboard, token auth off). Ray waits a fixed 30 s for its
    raylet to register; on a busy 2-core box that start has timed out once in a full test run (the raylet never
    came up), so a failed start is shut down and tried again, `attempts` times in all."""
    import os

    import ray

    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    os.environ.setdefault("RAY_gcs_server_port_wait_time_s", "120")  # the GCS default, 30 s, is short here too
    for attempt in range(1, attempts + 1):
        try:
            ray.init(address="local", num_cpus=num_cpus, include_dashboard=False, log_to_driver=False)
            return
        except Exception as exc:
            ray.shutdown()  # stop whatever half-started, so the next try begins clean
            if attempt == attempts:
                raise
            logger.warning("local Ray did not start (%s); trying again", str(exc).splitlines()[0])


def deploy_reranker(
    index_dir: Path | str, settings: RayRerankerSettings | None = None, *, llm: LlmSettings | None = None
) -> Any:
    """Deploy (or redeploy) the reranker app and return its `DeploymentHandle` once every replica is ready.

    Uses the Ray the process is connected to (call `ray.init` first; otherwise Serve starts a local Ray with
    its defaults). No HTTP route and no proxy: the app is reached through handles only."""
    from ray import serve

    settings = (settings or RayRerankerSettings()).validated()
    index_dir = Path(index_dir).resolve()
    read_manifest(index_dir)  # fail here, in the caller, rather than in every replica's constructor
    # Handles need no proxy; without one Serve listens on no HTTP port. (Ignored if Serve is already running.)
    serve.start(proxy_location="Disabled")
    app = reranker_deployment(settings).bind(str(index_dir), settings, llm)
    return serve.run(app, name=settings.app_name, route_prefix=None)


def connect_reranker(app_name: str = APP_NAME, *, address: str = "auto") -> Any:
    """A handle to a deployed reranker app from another process (connects to Ray at `address` if needed)."""
    import ray
    from ray import serve

    if not ray.is_initialized():
        ray.init(address=address, log_to_driver=False)
    return serve.get_app_handle(app_name)


# ------------------------------------------------------------------------------------------------- caller side


class RayServeReranker:
    """The `Reranker` port over a deployed reranker app's handle.

    `name` is the reranker the app serves (the key the af strategy selects rerankers by). Each call waits at
    most `timeout_s`, or, when the request sets `rerank_deadline_s`, that deadline plus `deadline_slack_s` (so an
    LLM reranker's own deadline fires first and its best order so far still arrives)."""

    def __init__(
        self,
        handle: Any,
        name: str = "local",
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        deadline_slack_s: float = DEFAULT_DEADLINE_SLACK_S,
    ) -> None:
        if not math.isfinite(timeout_s) or timeout_s <= 0 or not math.isfinite(deadline_slack_s):
            raise InvalidInputError("timeout_s must be a positive number of seconds and deadline_slack_s finite")
        self.name = name
        self._handle = handle
        self._timeout_s = timeout_s
        self._slack_s = max(0.0, deadline_slack_s)

    def rerank(
        self, query: QueryContext, parsed: StructuredQuery | None, candidates: list[Candidate]
    ) -> RerankOutcome:
        try:
            return self.try_rerank(query, parsed, candidates)
        except RayCallError as exc:
            return RerankOutcome(list(candidates), note=str(exc))

    def try_rerank(
        self,
        query: QueryContext,
        parsed: StructuredQuery | None,
        candidates: list[Candidate],
        *,
        abandon: threading.Event | None = None,
        kb_version: int | None = None,
    ) -> RerankOutcome:
        """As `rerank`, but no usable reply raises `RayCallError` (its message: `rerank`'s note), for a caller
        with another way to rerank; `abandon` set (Ray found gone, `ray_fallback`) ends the wait at once.
        `kb_version`: the caller's knowledge-base version; a reply computed at another raises `RayVersionError`
        (None: whatever version the replica serves)."""
        request = RerankRequest.build(query, parsed, candidates, kb_version)
        timeout = self.wait_seconds(query.options)
        with query.stage("rerank_ray"):
            reply = self._call(request, timeout, abandon)
        if isinstance(reply, str):
            raise RayCallError(reply)
        replied_at = getattr(reply, "kb_version", None)  # an app older than versions says none
        if kb_version is not None and replied_at != kb_version:
            raise RayVersionError(
                f"the Ray replica is at knowledge-base version {replied_at}, this request at {kb_version}"
            )
        if reply.invalid_input is not None:
            raise InvalidInputError(reply.invalid_input, reranker=self.name)
        ranked = reorder(candidates, reply)
        if isinstance(ranked, str):
            raise RayCallError(f"ray: invalid reply ({ranked})")
        for stage, seconds in reply.timings.items():
            query.timings[stage] = query.timings.get(stage, 0.0) + seconds
        return RerankOutcome(ranked, reply.note, dict(reply.usage))

    def probe(self, timeout_s: float) -> None:
        """Raises unless a replica answers `describe` within `timeout_s`: the whole path (router, replica) works."""
        self._handle.describe.remote().result(timeout_s=timeout_s)  # a late one only costs the replica a dict

    def wait_seconds(self, options: Mapping[str, Any]) -> float:
        deadline = options.get(DEADLINE_OPTION)
        if (
            isinstance(deadline, int | float)
            and not isinstance(deadline, bool)
            and math.isfinite(deadline)
            and deadline > 0
        ):
            return float(deadline) + self._slack_s
        return self._timeout_s  # an unusable deadline is the replica's to refuse, not this wait's

    def _call(
        self, request: RerankRequest, timeout: float, abandon: threading.Event | None = None
    ) -> RerankResponse | str:
        """The reply, or a note saying why there is none."""
        started = time.monotonic()
        response = None
        try:
            response = self._handle.rerank.remote(request)
            if abandon is None:
                return response.result(timeout_s=timeout)  # type: ignore[no-any-return]
            # In slices, so that a Ray found dead meanwhile ends the wait now rather than at its end.
            while True:
                left = timeout - (time.monotonic() - started)
                if abandon.is_set() or left <= 0:
                    raise TimeoutError
                try:
                    return response.result(timeout_s=min(ABANDON_POLL_S, left))  # type: ignore[no-any-return]
                except TimeoutError:
                    continue
        except TimeoutError:
            if response is not None:
                response.cancel()  # best effort: frees the replica's slot if the request has not started
            gone = " (Ray stopped answering)" if abandon is not None and abandon.is_set() else ""
            return f"ray timeout after {time.monotonic() - started:.2f} s{gone}"
        except Exception as exc:  # Ray's errors (dead replica, back-pressure, cancelled) have no common base
            logger.warning("ray rerank call failed: %s", exc)
            return f"ray error: {type(exc).__name__}: {_first_line(exc)}"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:300] if text else ""
