"""Build a service's `StageRuntime` from its settings: the index's stores with the configured adapters (Milvus
vectors, NebulaGraph graph), the encoder (local or Triton), the strategies, and the rerankers (in process or Ray
Serve). Heavy clients are imported only when their adapter is asked for."""

from __future__ import annotations

import dataclasses
import logging
import os
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from skbqa.changes.snapshot import kb_version
from skbqa.common.errors import IndexStoreError, InvalidInputError
from skbqa.engine.embedded import build_strategies
from skbqa.models.chat import ChatModel
from skbqa.observability.metrics import MetricsUnavailableError, get_metrics
from skbqa.query.encoder import Encoder
from skbqa.serving.degrade import guard
from skbqa.serving.remote_graph import IndexCheckedGraph
from skbqa.serving.settings import ServiceSettings, stages_of
from skbqa.serving.stages.core import StageRuntime
from skbqa.stages.rerank.base import Reranker
from skbqa.stores.index import IndexStores, open_index

if TYPE_CHECKING:
    from skbqa.ingest.snapshot_fetch import SnapshotLocation
    from skbqa.stages.rerank.ray_fallback import RayOrInProcess
    from skbqa.stores.vectors.milvus_versions import MilvusTarget, MilvusVersions

logger = logging.getLogger(__name__)

LOCAL_RAY_WAIT_S = 5.0  # a call to the `local` app: well under the 30 s request deadline, ~1000x its work
ATTACH_RETRY_FIRST_S = 5.0
ATTACH_RETRY_MAX_S = 60.0


def build_encoder(settings: ServiceSettings, stores: IndexStores) -> Encoder:
    built_with = stores.manifest.get("encoder", {}).get("name", "")
    if settings.encoder_url:
        from skbqa.models.triton_encoder import TritonEncoder

        encoder: Encoder = TritonEncoder.from_url(
            settings.encoder_url, encoder_batch_sizes=encoder_batch_meter(settings.encoder_url)
        )
    else:
        from skbqa.models.local_encoder import encoder_from_name

        encoder = encoder_from_name(built_with)
    if encoder.name != built_with:
        raise IndexStoreError(
            f"{settings.index} was built with encoder {built_with!r} but {settings.encoder_url or 'the local encoder'}"
            f" serves {encoder.name!r}; their vectors are not comparable"
        )
    return encoder


def encoder_batch_meter(url: str) -> Callable[[int], None] | None:
    """The Triton client's batch hook: `skbqa_encoder_batch_size{encoder=<model>}` per batch sent. The label is
    the served model's name from the URL (`skbqa_encoder`): the encoder's own name has slashes and would become
    "other", and reading it needs a call to the server. None without prometheus-client (an embedded server
    records no metrics)."""
    label = urlsplit(url).path.strip("/").split("/")[0] or "triton"
    try:
        metrics = get_metrics()
    except MetricsUnavailableError:
        return None
    return lambda size: metrics.observe_encoder_batch(label, size)


def milvus_target(settings: ServiceSettings) -> MilvusTarget | None:
    """Where `--vectors` points (None: vectors in process). Readers and the writer of the index share it."""
    if not settings.vectors_url:
        return None
    from skbqa.stores.vectors.milvus_versions import MilvusTarget

    url = settings.vectors_url
    uri = "http://" + url[len("milvus://") :] if url.startswith("milvus://") else url
    # the token comes from a Secret (SKBQA_MILVUS_TOKEN, "user:password" or an API key), never from the URL
    return MilvusTarget(uri, token=os.environ.get("SKBQA_MILVUS_TOKEN", ""))


def snapshot_mirror(settings: ServiceSettings) -> MilvusVersions | None:
    """For the index's writer (embedded server, updater role): Milvus loaded with each snapshot before its swap."""
    target = milvus_target(settings)
    if target is None:
        return None
    from skbqa.stores.vectors.milvus_versions import MilvusVersions

    return MilvusVersions(target)


def with_adapters(settings: ServiceSettings, stores: IndexStores) -> IndexStores:
    target = milvus_target(settings)
    if target is not None:
        from skbqa.stores.vectors.milvus_sets import with_milvus_vectors

        stores = with_milvus_vectors(stores, target.uri, token=target.token, collection_prefix=target.prefix)
    if settings.graph_url:
        from skbqa.stores.graph.nebula import NebulaGraph

        parts = urlsplit(settings.graph_url)
        if parts.scheme != "nebula" or not parts.hostname or not parts.path.strip("/"):
            raise InvalidInputError(
                f"graph URL must look like nebula://host:9669/space, got {settings.graph_url!r}"
            )
        graph = IndexCheckedGraph(NebulaGraph.from_url(settings.graph_url), stores.graph)
        stores = dataclasses.replace(stores, graph=graph)
    return stores


def release_stores(stores: IndexStores) -> None:
    """A version no longer served: close its Milvus clients (a late request on it reconnects)."""
    if any(type(v).__name__ == "MilvusIndex" for v in stores.vectors.values()):  # no pymilvus import otherwise
        from skbqa.stores.vectors.milvus_sets import close_milvus_vectors

        close_milvus_vectors(stores)


def build_chat(settings: ServiceSettings) -> ChatModel | None:
    if not settings.llm:
        return None
    from skbqa.models.openai_chat import OpenAIChatModel

    return OpenAIChatModel.from_env()


def build_runtime(
    settings: ServiceSettings,
    encoder: Encoder | None = None,
    *,
    served: StageRuntime | None = None,
    snapshot: SnapshotLocation | None = None,
) -> StageRuntime:
    """`encoder`: one already built for this index (a new snapshot of it reuses the served one). `served`: the
    runtime of the version served now, whose Ray path a new version's rerankers share. `snapshot`: where the
    version in `settings.index` was fetched from (shipped snapshots), which Ray replicas are told to fetch it."""
    stores = with_adapters(settings, open_index(settings.index))
    if encoder is None:
        stores, encoder = guard(stores, build_encoder(settings, stores))
    strategies = build_strategies(stores, build_chat(settings))
    runtime = StageRuntime(stores, encoder, strategies)
    # the reranker's process (alone or co-located with ranking); `all` keeps step 8 in process
    if settings.ray_address and settings.role != "all" and "reranker" in stages_of(settings.role):
        following = served.af.rerank.rerankers if served is not None else None
        version = kb_version(stores.manifest)
        runtime.af.rerank.use(
            ray_rerankers(
                settings, runtime.af.rerank.rerankers, kb_version=version, following=following, snapshot=snapshot
            )
        )
    return runtime


def ray_rerankers(
    settings: ServiceSettings,
    in_process: Mapping[str, Reranker],
    *,
    kb_version: int | None = None,
    following: Mapping[str, Reranker] | None = None,
    snapshot: SnapshotLocation | None = None,
) -> dict[str, Reranker]:
    """Step 8 on Ray Serve, each reranker backed by its in-process twin (`RayOrInProcess`): the service answers,
    flagged degraded, whenever Ray is not answering, or not at the twins' knowledge-base version `kb_version`
    (None: not checked). Returns at once: Ray starts (or is connected to) and the apps deploy in a background
    thread, so the service is ready — serving in process — without waiting for Ray, whose start takes 5–120 s on
    a busy machine (docs/faults.md). `following`: step 8's rerankers of the version served now, for a new
    version of the index: their Ray path is shared (no second attach, no second watcher)."""
    from skbqa.stages.rerank.ray_fallback import RayOrInProcess

    names = ["local"]
    if settings.llm:
        from skbqa.stages.rerank.registry import LLM_RERANKERS

        names += list(LLM_RERANKERS)
    names = [name for name in names if name in in_process]
    served = {n: r for n, r in (following or {}).items() if isinstance(r, RayOrInProcess)}
    if served:
        return {
            name: served[name].follow(in_process[name], kb_version, snapshot) for name in names if name in served
        }
    on_degraded = _degraded_counter()
    rerankers = {
        name: RayOrInProcess(in_process[name], on_degraded=on_degraded, kb_version=kb_version, snapshot=snapshot)
        for name in names
    }
    attach = threading.Thread(target=attach_ray, args=(settings, rerankers), name="ray-attach", daemon=True)
    attach.start()
    return dict(rerankers)


def attach_ray(settings: ServiceSettings, rerankers: Mapping[str, RayOrInProcess]) -> None:
    """Start or connect to Ray and deploy (or find) each reranker's app, then hand the rerankers their Ray path;
    retried with backoff until it works (a cluster's apps may be deployed after this service starts). Never
    returns (a daemon thread, see the end)."""
    delay = ATTACH_RETRY_FIRST_S
    while True:
        try:
            handles = ray_handles(settings, list(rerankers))
            break
        except Exception:  # Ray's start and Serve's deploy raise many unrelated types; all mean "not yet"
            logger.exception("Ray not attached; serving step 8 in process, trying again in %.0f s", delay)
            time.sleep(delay)
            delay = min(delay * 2, ATTACH_RETRY_MAX_S)
    from skbqa.stages.rerank.ray_serve import DEFAULT_TIMEOUT_S, RayServeReranker

    for name, handle in handles.items():
        # `local` answers in milliseconds: a short wait bounds a call on a stuck Ray even before the watcher
        # marks it down. The LLM rerankers keep the long wait their own deadline needs.
        timeout = LOCAL_RAY_WAIT_S if name == "local" else DEFAULT_TIMEOUT_S
        rerankers[name].attach(RayServeReranker(handle, name, timeout_s=timeout))
    logger.info("Ray attached: %s", ", ".join(handles))
    # This thread must outlive the service: Ray starts its node processes (gcs_server, raylet) with
    # PR_SET_PDEATHSIG, which Linux fires when the *thread* that forked them ends, not the process — a returning
    # thread would take the private Ray down with it (seen: every service lost its Ray ~1 min after the start).
    threading.Event().wait()


def ray_handles(settings: ServiceSettings, names: list[str]) -> dict[str, Any]:
    """The reranker apps' handles by name. `ray_address` "local" starts a Ray instance owned by this process
    (2 CPUs, no dashboard) and deploys the apps there; anything else connects to that cluster's apps."""
    import ray

    from skbqa.stages.rerank.ray_serve import (
        RayRerankerSettings,
        connect_reranker,
        deploy_reranker,
        start_local_ray,
    )

    local = settings.ray_address == "local"
    if not ray.is_initialized():
        if local:
            start_local_ray(num_cpus=2)  # a private instance on 127.0.0.1
        else:
            ray.init(address=settings.ray_address, log_to_driver=False)
    llm = None
    if settings.llm:
        from skbqa.models.openai_chat import LlmSettings

        llm = LlmSettings.from_env()
    handles: dict[str, Any] = {}
    for name in names:
        app_name = f"skbqa-reranker-{name}"
        if local:
            # a short batch window: a lone request should not wait long for company (docs/ray.md)
            app = RayRerankerSettings(
                reranker=name,
                app_name=app_name,
                num_cpus=0.5,
                batch_wait_timeout_s=0.002,
                s3_endpoint_url=settings.s3_endpoint_url,  # where shipped versions are fetched (as this service)
            )
            handles[name] = deploy_reranker(settings.index, app, llm=llm)
        else:
            # a shared cluster owns its apps (KubeRay serveConfigV2, or `serve deploy`): only connect
            handles[name] = connect_reranker(app_name, address=settings.ray_address or "auto")
    return handles


def _degraded_counter() -> Callable[[], None] | None:
    """Counts step 8 answered in process as `skbqa_errors_total{stage="reranker", kind="degraded"}`, as a
    degraded encoder or vector store is counted; None without prometheus-client."""
    try:
        metrics = get_metrics()
    except MetricsUnavailableError:
        return None
    return lambda: metrics.count_error("reranker", "degraded")
