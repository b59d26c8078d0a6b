"""The one writer of an index's changes: accepts batches (checked, logged, fsync'd, acknowledged with a version),
and folds the accepted batches into a new snapshot of the index that is renamed over it like an ingest.

A snapshot is written by the ingest builder itself (`ingest.builder.build_snapshot`) from the changed knowledge
base, so an updated index is the index a fresh ingest of the final knowledge base would give; only texts that
changed are encoded (`changes.vectors`). Node table, CSR graph, name lexicon and BM25 are rebuilt (seconds per
100k nodes); a SAGE graph the old snapshot had is rebuilt with its own settings; GRAPE's trained weights carry
over (its features are read from the graph at query time).
"""

from __future__ import annotations

import json
import logging
import shutil
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skbqa.changes.format import Change
from skbqa.changes.log import ChangeLog
from skbqa.changes.state import KbState
from skbqa.changes.vectors import DeltaVectors
from skbqa.ingest.builder import IngestReport, build_snapshot, swap_into_place
from skbqa.models.index_encoder import encoder_for_index
from skbqa.query.encoder import Encoder
from skbqa.stores.graph.csr import CsrGraph
from skbqa.stores.index import EMBEDDING_SETS, load_exact_vectors, read_manifest, verify_files, work_prefix
from skbqa.stores.nodes import NodeTable

logger = logging.getLogger(__name__)

CARRIED_OVER = ("grape",)  # directories a new snapshot keeps as they are


def kb_version(manifest: dict[str, Any]) -> int:
    return int(manifest.get("kb_version", 0))


@dataclass
class SnapshotReport:
    version: int
    nodes: int
    edges: int
    seconds: dict[str, float] = field(default_factory=dict)
    encoded: dict[str, int] = field(default_factory=dict)
    reused: dict[str, int] = field(default_factory=dict)


class IndexUpdater:
    """Holds the index's writer lock from construction to `close`: one updater per index at a time, across
    processes (a second one waits)."""

    def __init__(self, index_dir: Path | str, encoder: Encoder | None = None, *, progress: bool = False) -> None:
        self.directory = Path(index_dir)
        self._progress = progress
        self.log = ChangeLog(self.directory)
        self.log.lock()
        manifest = read_manifest(self.directory)
        verify_files(self.directory, manifest, ("nodes", "graph"))
        self.snapshot_version = kb_version(manifest)
        built_with = manifest.get("encoder", {}).get("name", "")
        self.encoder = encoder or encoder_for_index(self.directory, built_with)
        self.state = KbState.from_index(
            NodeTable.load(self.directory / "nodes"), CsrGraph.load(self.directory / "graph")
        )
        self.accepted = self.snapshot_version
        for version, changes in self.log.batches(after=self.snapshot_version):
            self.state.apply(list(enumerate(changes, start=1)), f"change log version {version}")
            self.accepted = version
        self._lock = threading.Lock()  # submit vs the start of a snapshot
        self._build_lock = threading.Lock()  # one snapshot at a time

    @property
    def pending(self) -> int:
        return self.accepted - self.snapshot_version

    def submit(self, batch: list[tuple[int, Change]], where: str) -> tuple[int, Counter[str]]:
        """Check and accept a batch, whole or not at all; when this returns its version, the batch is in the
        fsync'd log (it survives a kill of this process from here on) and the next snapshot will hold it."""
        with self._lock:
            version = self.accepted + 1
            outcome = self.state.apply(batch, where, then=lambda: self.log.append(version, [c for _, c in batch]))
            self.accepted = version
            return version, outcome

    def snapshot(self) -> SnapshotReport | None:
        """Fold every accepted batch into a new snapshot renamed over the index; None when there is nothing to
        fold. Serving goes on from the old snapshot meanwhile."""
        with self._build_lock:
            with self._lock:
                if self.accepted == self.snapshot_version:
                    return None
                version, skb, touched = self.accepted, self.state.to_skb(), set(self.state.touched)
                self.state.touched.clear()
            try:
                report = self._write(version, skb, touched)
            except BaseException:
                with self._lock:
                    self.state.touched |= touched
                raise
            self.snapshot_version = version
            return report

    def compact(self) -> tuple[SnapshotReport | None, int]:
        """Fold what is pending, then drop from the log the batches the snapshot holds."""
        report = self.snapshot()
        with self._build_lock, self._lock:
            return report, self.log.drop_through(self.snapshot_version)

    def _write(self, version: int, skb: Any, touched: set[int]) -> SnapshotReport:
        started = time.perf_counter()
        old_manifest = read_manifest(self.directory)
        verify_files(self.directory, old_manifest, ("nodes", "graph", "vectors"))
        old_nodes = NodeTable.load(self.directory / "nodes")
        old_sets = {name: load_exact_vectors(self.directory / "vectors" / name) for name in EMBEDDING_SETS}
        delta = DeltaVectors(
            old_nodes,
            CsrGraph.load(self.directory / "graph"),
            old_sets,
            touched,
            self.encoder,
            progress=self._progress,
        )
        sets = old_manifest.get("vectors", {}).get("sets", {})
        ann = {name: "always" if sets.get(name, {}).get("index") == "ann" else "never" for name in EMBEDDING_SETS}
        provenance = {
            "bundle": old_manifest.get("bundle", {}),
            "kb_version": version,
            "updated_unix": int(time.time()),
            "vectors": {"source": "encoder", "updated": True},
        }
        work = Path(tempfile.mkdtemp(prefix=work_prefix(self.directory), dir=self.directory.parent))
        try:
            built: IngestReport = build_snapshot(
                skb,
                work,
                self.encoder,
                vector_dtype=old_manifest.get("vector_dtype", "float32"),
                progress=self._progress,
                ann=ann,
                vectors_for=delta,
                provenance=provenance,
            )
            for name in CARRIED_OVER:
                if (self.directory / name).is_dir():
                    shutil.copytree(self.directory / name, work / name)
            seconds = dict(built.seconds)
            if (self.directory / "sage").is_dir():
                seconds["sage"] = _rebuild_sage(self.directory, work)
            self.log.link_into(work)
            swap_into_place(work, self.directory)
        except BaseException:
            shutil.rmtree(work, ignore_errors=True)
            raise
        seconds["snapshot_total"] = round(time.perf_counter() - started, 3)
        logger.info(
            "index %s: snapshot at version %d in %.1f s", self.directory, version, seconds["snapshot_total"]
        )
        return SnapshotReport(
            version, built.nodes, built.edges, seconds, dict(delta.report.encoded), dict(delta.report.reused)
        )

    def close(self) -> None:
        self.log.close()


def _rebuild_sage(old_dir: Path, work: Path) -> float:
    """The SAGE graph indexes node positions, which a change moves: build it again, with the settings it had."""
    from skbqa.strategies.sage.graph_build import SageBuildConfig, build_for_index
    from skbqa.strategies.sage.store import SAGE_DIR

    started = time.perf_counter()
    meta = json.loads((old_dir / SAGE_DIR / "sage.json").read_text())
    build_for_index(work, SageBuildConfig(**meta.get("config", {})))
    return round(time.perf_counter() - started, 3)
