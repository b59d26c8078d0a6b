"""Build a service's `StageRuntime` from its settings: the index's stores with the configured adapters (Milvus
vectors, NebulaGraph graph), the encoder (local or Triton), the strategies, and the rerankers (in process or Ray
Serve). Heavy clients are imported only when their adapter is asked for."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from urllib.parse import urlsplit

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


def with_adapters(settings: ServiceSettings, stores: IndexStores) -> IndexStores:
    if settings.vectors_url:
        from skbqa.stores.vectors.milvus_sets import with_milvus_vectors

        url = settings.vectors_url
        uri = "http://" + url[len("milvus://") :] if url.startswith("milvus://") else url
        # the token comes from a Secret (SKBQA_MILVUS_TOKEN, "user:password" or an API key), never from the URL
        stores = with_milvus_vectors(stores, uri, token=os.environ.get("SKBQA_MILVUS_TOKEN", ""))
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


def build_chat(settings: ServiceSettings) -> ChatModel | None:
    if not settings.llm:
        return None
    from skbqa.models.openai_chat import OpenAIChatModel

    return OpenAIChatModel.from_env()


def build_runtime(settings: ServiceSettings, encoder: Encoder | None = None) -> StageRuntime:
    """`encoder`: one already built for this index (a new snapshot of it reuses the served one)."""
    stores = with_adapters(settings, open_index(settings.index))
    if encoder is None:
        stores, encoder = guard(stores, build_encoder(settings, stores))
    strategies = build_strategies(stores, build_chat(settings))
    runtime = StageRuntime(stores, encoder, strategies)
    # the reranker's process (alone or co-located with ranking); `all` keeps step 8 in process
    if settings.ray_address and settings.role != "all" and "reranker" in stages_of(settings.role):
        runtime.af.rerank.use(ray_rerankers(settings))
    return runtime


def ray_rerankers(settings: ServiceSettings) -> dict[str, Reranker]:
    """Step 8 on Ray Serve: the `local` reranker (and the LLM rerankers with an LLM) as Serve deployments with
    `@serve.batch`. `ray_address` "local" starts a Ray instance owned by this process (2 CPUs, no dashboard);
    anything else connects to that cluster."""

    import ray

    from skbqa.stages.rerank.ray_serve import (
        RayRerankerSettings,
        RayServeReranker,
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
    names = ["local"]
    if settings.llm:
        from skbqa.models.openai_chat import LlmSettings
        from skbqa.stages.rerank.registry import LLM_RERANKERS

        llm = LlmSettings.from_env()
        names += list(LLM_RERANKERS)
    rerankers: dict[str, Reranker] = {}
    for name in names:
        app_name = f"skbqa-reranker-{name}"
        if local:
            # a short batch window: a lone request should not wait long for company (docs/ray.md)
            app = RayRerankerSettings(reranker=name, app_name=app_name, num_cpus=0.5, batch_wait_timeout_s=0.002)
            handle = deploy_reranker(settings.index, app, llm=llm)
        else:
            # a shared cluster owns its apps (KubeRay serveConfigV2, or `serve deploy`): only connect
            handle = connect_reranker(app_name, address=settings.ray_address or "auto")
        rerankers[name] = RayServeReranker(handle, name)
    return rerankers
