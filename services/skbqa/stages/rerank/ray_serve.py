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
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from skbqa.common.errors import BackendUnavailableError, InvalidInputError
from skbqa.ingest.snapshot_fetch import SnapshotLocation
from skbqa.models.openai_chat import LlmSettings
from skbqa.query.context import Candidate, QueryContext
from skbqa.query.structured import StructuredQuery
from skbqa.stages.rerank.base import RerankOutcome
from skbqa.stages.rerank.llm_common import DEADLINE_OPTION, DEFAULT_DEADLINE_SECONDS
from skbqa.stages.rerank.ray_replica import APP_NAME, RayRerankerSettings, RerankerCore
from skbqa.stages.rerank.ray_wire import RerankRequest, RerankResponse, reorder
from skbqa.stores.index import read_manifest

logger = logging.getLogger(__name__)

# The default wait covers the LLM rerankers' own deadline plus the hop, so their "best order so far" arrives.
DEFAULT_DEADLINE_SLACK_S = 5.0
DEFAULT_TIMEOUT_S = DEFAULT_DEADLINE_SECONDS + DEFAULT_DEADLINE_SLACK_S
ABANDON_POLL_S = 0.1  # how soon a call waiting on Ray notices that Ray was found gone (see `try_rerank`)


class RayCallError(BackendUnavailableError):
    """A call to the reranker app got no usable reply: timed out, failed in Ray, or the reply was invalid."""


class RayVersionError(RayCallError):
    """The replica answered at another knowledge-base version than the caller's (it does not hold the caller's
    yet, or any more): Ray works, but this answer is not to be used."""


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
        snapshot: SnapshotLocation | None = None,
    ) -> RerankOutcome:
        """As `rerank`, but no usable reply raises `RayCallError` (its message: `rerank`'s note), for a caller
        with another way to rerank; `abandon` set (Ray found gone, `ray_fallback`) ends the wait at once.
        `kb_version`: the caller's knowledge-base version; a reply computed at another raises `RayVersionError`
        (None: whatever version the replica serves); `snapshot`: where that version was shipped, for a replica
        that must fetch it."""
        request = RerankRequest.build(query, parsed, candidates, kb_version, snapshot)
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
