"""Run a served process: the embedded server (every stage here) or one role of the distributed form.

Each process: builds what its role needs, warms it, starts its gRPC server (health NOT_SERVING until warm and,
for the gateway, until its answer consumer is assigned), serves `/metrics` when asked, and on SIGTERM/SIGINT
reports NOT_SERVING, stops taking work (uncommitted messages go to another replica) and exits.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from skbqa.serving.gateway.limits import ClientLimits
from skbqa.serving.grpc_server import RunningServer, start_server
from skbqa.serving.security import security_options
from skbqa.serving.settings import ServiceSettings
from skbqa.v1 import api_pb2

logger = logging.getLogger(__name__)
API_SERVICE = "skbqa.v1.Skbqa"


# how long a stage waits for its consumer group to assign it partitions before it reports SERVING anyway
JOIN_TIMEOUT_S = 60.0


def index_status(settings: ServiceSettings, strategies: list[str]) -> api_pb2.IndexStatusResponse:
    from skbqa.serving.codec import to_json
    from skbqa.stores.index import read_manifest

    manifest = read_manifest(settings.index)
    counts = manifest.get("counts", {})
    # Names, not the server's paths: a client has no business with the host's file layout.
    bundle = dict(manifest.get("bundle", {}))
    bundle_name = Path(str(bundle.get("path", ""))).name
    if "path" in bundle:
        bundle["path"] = bundle_name
    manifest = {**manifest, "bundle": bundle}
    return api_pb2.IndexStatusResponse(
        index=Path(settings.index).resolve().name,
        skb_name=manifest.get("schema_name") or bundle_name,
        nodes=int(counts.get("nodes", 0)),
        edges=int(counts.get("edges", 0)),
        encoder=manifest.get("encoder", {}).get("name", ""),
        manifest_json=to_json(manifest),
        strategies=strategies,
    )


def _api_server(settings: ServiceSettings, servicer: Any, limits: ClientLimits | None) -> RunningServer:
    from skbqa.v1 import api_pb2_grpc

    return start_server(
        [(api_pb2_grpc.add_SkbqaServicer_to_server, servicer, API_SERVICE)],
        host=settings.host,
        port=settings.port,
        max_inflight=settings.max_inflight,  # the servicer refuses beyond it; the pool is sized to match
        limits=limits,
        service="gateway",
        **security_options(settings),
    )


def _api_servicer(settings: ServiceSettings, backend: Any, gateway_id: str, live: Any = None) -> Any:
    from skbqa.engine.embedded import DEFAULT_STRATEGY, STRATEGY_NAMES
    from skbqa.serving.gateway.api import SkbqaServicer
    from skbqa.serving.gateway.updates import UpdatePolicy
    from skbqa.serving.security import admin_tokens

    return SkbqaServicer(
        backend,
        strategies=list(STRATEGY_NAMES),
        default_strategy=DEFAULT_STRATEGY,
        status=index_status(settings, list(STRATEGY_NAMES)),
        gateway_id=gateway_id,
        request_timeout_s=settings.request_timeout_s,
        max_inflight=settings.max_inflight,
        live=live,
        update_policy=UpdatePolicy(
            tokens_on=bool(security_options(settings)["tokens"]), admin_tokens=admin_tokens(settings)
        ),
    )


def watch_health(server: RunningServer, probe: Callable[[], str], *, interval_s: float = 2.0) -> threading.Event:
    """Keep the health status in step with `probe` ("" = can serve): a service whose graph store is gone turns
    NOT_SERVING, and SERVING again once it is back. Returns the event that stops the watcher."""
    stop = threading.Event()
    state: dict[str, str | None] = {"reason": None}

    def loop() -> None:
        while not stop.is_set():
            try:
                reason = probe()
            except Exception as exc:  # a probe must never take the service down
                reason = f"health probe failed: {type(exc).__name__}"
            if reason != state["reason"]:
                if reason:
                    logger.warning("not serving: %s", reason)
                server.set_serving(not reason)
                state["reason"] = reason
            stop.wait(interval_s)

    threading.Thread(target=loop, name="skbqa-health", daemon=True).start()
    return stop


def takes_changes(settings: ServiceSettings) -> bool:
    """Live updates reach the index's own stores and its Milvus vectors (the writer loads each snapshot's sets
    into collections of their own before the swap, `stores.vectors.milvus_versions`); NebulaGraph copies do not
    follow yet, so a server using them serves its index as loaded. (Ray Serve's reranker replicas follow:
    stages/rerank/ray_serve.)"""
    return settings.graph_url is None


def start_embedded(
    settings: ServiceSettings, *, limits: ClientLimits | None = None
) -> tuple[RunningServer, Callable[[], None]]:
    """The whole pipeline in this process behind the public API. Returns the server and a stop function.
    `limits`: per-client request limits (None: off)."""
    from skbqa.serving.gateway.backends import LocalBackend
    from skbqa.serving.local_pipeline import LocalPipeline
    from skbqa.serving.runtime import build_runtime, snapshot_mirror

    runtime = build_runtime(settings)
    pipeline = LocalPipeline(runtime)
    backend = LocalBackend(pipeline, workers=settings.workers)
    live = None
    if takes_changes(settings):
        from skbqa.serving.live_index import LiveIndex

        live = LiveIndex(
            settings.index,
            runtime.encoder,
            backend,
            lambda: LocalPipeline(build_runtime(settings, runtime.encoder, served=runtime)),
            encoder_url=settings.encoder_url,
            mirror=snapshot_mirror(settings),
        )
    servicer = _api_servicer(settings, backend, "embedded", live)
    server = _api_server(settings, servicer, limits)
    pipeline.warm()
    server.set_serving(True)
    watcher = watch_health(server, backend.probe)

    def stop() -> None:
        watcher.set()
        server.stop()
        backend.close()
        if live is not None:
            live.close()

    return server, stop


def start_gateway(
    settings: ServiceSettings, *, ready_timeout_s: float = 60.0, limits: ClientLimits | None = None
) -> tuple[RunningServer, Callable[[], None]]:
    from skbqa.bus.kafka import bus_from_url

    bus = bus_from_url(settings.bus_url)
    from skbqa.serving.gateway.bus_backend import backend_for

    backend = backend_for(bus, settings)
    feed, live = None, None
    if takes_changes(settings):  # changes go to the updater through skbqa.changes (docs/updates.md)
        from skbqa.changes.snapshot import kb_version
        from skbqa.serving.gateway.distributed_updates import DistributedUpdates
        from skbqa.serving.kb_feed import VersionFeed
        from skbqa.stores.index import read_manifest

        feed = VersionFeed(bus)
        start_version = kb_version(read_manifest(settings.index))
        live = DistributedUpdates(backend, feed, start_version=start_version, timeout_s=settings.request_timeout_s)
    servicer = _api_servicer(settings, backend, backend.gateway_id, live)
    server = _api_server(settings, servicer, limits)
    if not backend.wait_ready(ready_timeout_s):
        logger.warning("gateway: answer consumer not assigned after %.0f s; serving anyway", ready_timeout_s)
    server.set_serving(True)
    watcher = watch_health(server, backend.probe)

    def stop() -> None:
        watcher.set()
        server.stop()
        if feed is not None:
            feed.close()
        backend.close()
        bus.close()

    return server, stop


def start_stage(
    settings: ServiceSettings, *, limits: ClientLimits | None = None
) -> tuple[RunningServer, Callable[[], None]]:
    from skbqa.bus.base import unreachable
    from skbqa.bus.kafka import bus_from_url
    from skbqa.bus.topics import ALL as ALL_TOPICS
    from skbqa.ingest.snapshot_fetch import SnapshotFetcher
    from skbqa.serving.kb_feed import VersionFeed
    from skbqa.serving.runtime import build_runtime
    from skbqa.serving.stage_service import StageServicer, start_stage_server
    from skbqa.serving.stage_versions import VersionedCores
    from skbqa.serving.stages.registry import build_stage
    from skbqa.serving.worker import StageWorker

    role = settings.role
    assert role is not None
    runtime = build_runtime(settings)
    core = build_stage(role, runtime)
    servicer = StageServicer(core)
    server = start_stage_server(core, settings, limits=limits, servicer=servicer)
    core.warm()
    bus = bus_from_url(settings.bus_url)
    bus.ensure_topics(ALL_TOPICS)
    # live updates: this replica opens each new version the updater folds in, and says which one it serves
    fetcher = SnapshotFetcher(settings.index, endpoint_url=settings.s3_endpoint_url)

    def version_at(where: Path) -> Any:  # the index's own directory, or a copy of a shipped snapshot,
        snapshot = fetcher.location_of(where)  # whose location its Ray replicas fetch it from (ray_replica.py)
        return build_stage(role, build_runtime(replace(settings, index=where), runtime.encoder, served=runtime,
                                               snapshot=snapshot))  # fmt: skip

    versions = VersionedCores(
        core, version_at, index=settings.index, role=role, follows=takes_changes(settings), fetcher=fetcher
    )
    feed = VersionFeed(bus, report=versions.report, on_record=versions.on_record)
    versions.on_switch = feed.announce
    servicer.versions = versions  # direct calls follow the versions too
    worker = StageWorker(core, bus, lag_interval_s=settings.lag_interval_s, versions=versions).start()
    if not worker.wait_joined(JOIN_TIMEOUT_S):  # e.g. more replicas than partitions: this one stands by
        logger.warning("%s: no partitions assigned after %.0f s; serving anyway", settings.role, JOIN_TIMEOUT_S)
    server.set_serving(True)
    watcher = watch_health(
        server, lambda: core.probe() or ("the message bus is unreachable" if unreachable(bus) else "")
    )

    def stop() -> None:
        watcher.set()
        server.set_serving(False)
        worker.stop()
        server.stop()
        versions.close()
        feed.close()
        bus.close()
        _stop_ray()

    return server, stop


def start_updater(
    settings: ServiceSettings, *, limits: ClientLimits | None = None
) -> tuple[RunningServer, Callable[[], None]]:
    """The knowledge base's one writer in the distributed form (serving/updater_service.py), and a gRPC server
    carrying health only (the stack waits on it)."""
    from skbqa.bus import topics
    from skbqa.bus.kafka import bus_from_url
    from skbqa.changes.updater import IndexUpdater, Mirrors
    from skbqa.serving.runtime import snapshot_mirror
    from skbqa.serving.updater_service import UpdaterService

    encoder = None
    if settings.encoder_url:
        from skbqa.models.triton_encoder import TritonEncoder

        encoder = TritonEncoder.from_url(settings.encoder_url)
    bus = bus_from_url(settings.bus_url)
    bus.ensure_topics(topics.ALL)
    bus.ensure_topics(topics.SINGLE_PARTITION, partitions=1)
    shipper = None
    if settings.snapshots_url:  # replicas with directories of their own fetch each version from there
        from skbqa.changes.shipping import SnapshotShipper

        shipper = SnapshotShipper(
            settings.snapshots_url, endpoint_url=settings.s3_endpoint_url, keep=settings.snapshots_keep
        )
    mirrors = Mirrors(snapshot_mirror(settings), shipper)  # Milvus first: a fetched version finds its collections
    updater = IndexUpdater(settings.index, encoder, mirror=mirrors or None)
    if shipper is not None:
        shipper.ensure(updater.directory)  # the version served now, for replicas that start behind it
    service = UpdaterService(updater, bus, shipper=shipper)
    server = start_server(
        [], host=settings.host, port=settings.port, limits=limits, service="updater", **security_options(settings)
    )
    if not service.joined.wait(JOIN_TIMEOUT_S):
        logger.warning("updater: no partition of %s after %.0f s; serving anyway", topics.CHANGES, JOIN_TIMEOUT_S)
    server.set_serving(True)
    watcher = watch_health(
        server, lambda: f"folding failed: {service.folds.last_error}" if service.folds.last_error else ""
    )

    def stop() -> None:
        watcher.set()
        server.stop()
        service.close()
        bus.close()

    return server, stop


def _stop_ray() -> None:
    """End the Ray instance this process started (the reranker's `--ray-address local`), if any."""
    import sys

    if "ray" not in sys.modules:
        return
    import ray

    if ray.is_initialized():
        try:
            from ray import serve

            serve.shutdown()
        finally:
            ray.shutdown()


def start_all_in_one(
    settings: ServiceSettings, *, limits: ClientLimits | None = None
) -> tuple[RunningServer, Callable[[], None]]:
    """The gateway and one worker per stage in this process, sharing one runtime, over `settings.bus_url`:
    the distributed code path (bus, workers, answer routing) without separate processes. Each of
    `settings.colocated`'s groups is one worker running its stages in sequence, as its own service would."""
    from skbqa.bus.kafka import bus_from_url
    from skbqa.bus.topics import ALL as ALL_TOPICS
    from skbqa.serving.runtime import build_runtime
    from skbqa.serving.stages.chain import service_roles
    from skbqa.serving.stages.registry import build_stage
    from skbqa.serving.worker import StageWorker

    runtime = build_runtime(settings)
    cores = [build_stage(role, runtime) for role in service_roles(settings.colocated)]
    for core in cores:
        core.warm()
    bus = bus_from_url(settings.bus_url)
    bus.ensure_topics(ALL_TOPICS)
    workers = [StageWorker(core, bus, lag_interval_s=settings.lag_interval_s).start() for core in cores]
    for worker in workers:
        if not worker.wait_joined(JOIN_TIMEOUT_S):
            logger.warning(
                "%s: no partitions assigned after %.0f s; serving anyway", worker.core.role, JOIN_TIMEOUT_S
            )
    from skbqa.serving.gateway.bus_backend import backend_for

    backend = backend_for(bus, settings)
    servicer = _api_servicer(settings, backend, backend.gateway_id)
    server = _api_server(settings, servicer, limits)
    backend.wait_ready(60.0)
    server.set_serving(True)
    watcher = watch_health(server, backend.probe)

    def stop() -> None:
        watcher.set()
        server.stop()
        for worker in workers:
            worker.stop()
        backend.close()
        bus.close()
        _stop_ray()

    return server, stop


def serve(settings: ServiceSettings, limits: ClientLimits | None = None) -> int:
    """Run until SIGTERM/SIGINT. Prints one line when serving (scripts and the stack wait for it)."""
    settings.validate()
    if limits is not None:
        limits.validate()
    if settings.metrics_port is not None:
        from skbqa.observability.metrics import get_metrics

        get_metrics().start_metrics_server(settings.metrics_port, settings.host)
    started = time.perf_counter()
    if settings.role is None:
        server, stop = start_embedded(settings, limits=limits)
    elif settings.role == "gateway":
        server, stop = start_gateway(settings, limits=limits)
    elif settings.role == "all":
        server, stop = start_all_in_one(settings, limits=limits)
    elif settings.role == "updater":
        server, stop = start_updater(settings, limits=limits)
    else:
        server, stop = start_stage(settings, limits=limits)
    role = settings.role or "embedded"
    print(
        f"skbqa {role} serving on {settings.host}:{server.port} ({time.perf_counter() - started:.1f} s)",
        flush=True,
    )
    finished = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: finished.set())
    finished.wait()
    stop()
    return 0
