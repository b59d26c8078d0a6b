"""The one writer of an index's changes: accepts batches (checked, logged, fsync'd, acknowledged with a version),
and folds the accepted batches into a new snapshot of the index that is renamed over it like an ingest.

How a snapshot is written is in `changes.snapshot`; here, the order of things: a batch is in the log before it
is acknowledged, and the snapshot that holds it gets the log (hard links) before it is renamed over the index.
A mirror (`SnapshotMirror`: Milvus, `stores.vectors.milvus_versions`) gets the snapshot after it is written and
before it is renamed: a reader that sees the new manifest finds its copies, and a failed copy fails the fold.
"""

from __future__ import annotations

import logging
import shutil
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any, Protocol

from skbqa.changes.format import Change, change_to_json
from skbqa.changes.idempotency import IdempotencyKeyReused, KeyedAnswer, RememberedKeys, batch_digest
from skbqa.changes.log import ChangeLog
from skbqa.changes.snapshot import SnapshotReport, kb_version, write_in_child, write_snapshot
from skbqa.changes.state import KbState, Touched
from skbqa.ingest.builder import swap_into_place
from skbqa.models.index_encoder import encoder_for_index
from skbqa.query.encoder import Encoder
from skbqa.stores.graph.csr import CsrGraph
from skbqa.stores.index import (
    read_manifest,
    recover_index,
    verify_files,
)
from skbqa.stores.nodes import NodeTable

logger = logging.getLogger(__name__)


class SnapshotMirror(Protocol):
    """A copy of the index's stores kept outside the index directory, which must follow its versions."""

    def before_swap(self, work: Path, served: dict[str, Any]) -> Any:
        """Copy the snapshot written in `work` (the index still serves the manifest `served`); raise to fail it."""

    def after_swap(self, directory: Path, previous: int) -> None:
        """The index now serves its new snapshot (`previous`: the version it served before); must not raise."""


class Mirrors:
    """Several mirrors, copied to in order (the updater's: Milvus first, then the object store whose record
    sends replicas to the version, so a replica that fetches it finds its collections loaded)."""

    def __init__(self, *mirrors: SnapshotMirror | None) -> None:
        self._mirrors = [m for m in mirrors if m is not None]

    def __bool__(self) -> bool:
        return bool(self._mirrors)

    def before_swap(self, work: Path, served: dict[str, Any]) -> Any:
        return [mirror.before_swap(work, served) for mirror in self._mirrors]

    def after_swap(self, directory: Path, previous: int) -> None:
        for mirror in self._mirrors:
            mirror.after_swap(directory, previous)


class IndexUpdater:
    """Holds the index's writer lock from construction to `close`: one updater per index at a time, across
    processes (a second one waits)."""

    def __init__(
        self,
        index_dir: Path | str,
        encoder: Encoder | None = None,
        *,
        progress: bool = False,
        mirror: SnapshotMirror | None = None,
    ) -> None:
        """`mirror`: the server's Milvus vectors (`MilvusVersions`), loaded with each snapshot before its swap."""
        self.directory = Path(index_dir)
        self._progress = progress
        self._mirror = mirror
        recover_index(self.directory)  # a fold killed between its two renames: the snapshot back first
        self.log = ChangeLog(self.directory)
        self.log.lock()
        recover_index(self.directory, clean=True)  # work directories of killed folds (their owners are gone)
        manifest = read_manifest(self.directory)
        verify_files(self.directory, manifest, ("nodes", "graph"))
        self.snapshot_version = kb_version(manifest)
        built_with = manifest.get("encoder", {}).get("name", "")
        self.encoder = encoder or encoder_for_index(self.directory, built_with)
        self.state = KbState.from_index(
            NodeTable.load(self.directory / "nodes"), CsrGraph.load(self.directory / "graph")
        )
        self.accepted = self.snapshot_version
        # batch id → version: a redelivered record is not applied twice; key id → answer: nor is a client's resend
        self.batches, keyed = self.log.remembered()
        self.keys = RememberedKeys()
        for key_id, answer in keyed:
            self.keys.add(key_id, answer)
        for version, changes in self.log.batches(after=self.snapshot_version):
            self.state.apply(list(enumerate(changes, start=1)), f"change log version {version}")
            self.accepted = version
        self._lock = threading.Lock()  # submit vs the start of a snapshot
        self._build_lock = threading.Lock()  # one snapshot at a time

    @property
    def pending(self) -> int:
        return self.accepted - self.snapshot_version

    def submit(
        self, batch: list[tuple[int, Change]], where: str, batch_id: str = "", key_id: str = ""
    ) -> tuple[int, Counter[str]]:
        """Check and accept a batch, whole or not at all; when this returns its version, the batch is in the
        fsync'd log (it survives a kill of this process from here on) and the next snapshot will hold it.
        `batch_id`: a batch already logged under this id is not applied again; its version is returned with an
        empty outcome (the distributed form's redelivery after a crash). `key_id`: the client's idempotency key
        (scoped, `changes.idempotency`): a batch already accepted under it is not applied again and its first
        answer is returned; IdempotencyKeyReused when the key came with another batch."""
        changes = [c for _, c in batch]
        digest = batch_digest([change_to_json(c) for c in changes]) if key_id else ""
        with self._lock:
            # before the batch is checked: a resend must get its first answer even when the batch would no longer
            # fit the knowledge base (a later batch deleted a node it adds edges to)
            known = self.keys.get(key_id) if key_id else None
            if known is not None:
                if known.digest != digest:
                    raise IdempotencyKeyReused()
                return known.version, known.counter()
            if batch_id and batch_id in self.batches:
                return self.batches[batch_id], Counter()
            version = self.accepted + 1
            answer: KeyedAnswer | None = None

            def log(outcome: Counter[str]) -> None:
                nonlocal answer
                if key_id:
                    answer = KeyedAnswer(version, digest, tuple(sorted(outcome.items())))
                self.log.append(version, changes, batch_id, None if answer is None else (key_id, answer))

            outcome = self.state.apply(batch, where, then=log)
            self.accepted = version
            if batch_id:
                self.batches[batch_id] = version
            if answer is not None:
                self.keys.add(key_id, answer)
            return version, outcome

    def snapshot(self, *, in_child: bool = False, encoder_url: str | None = None) -> SnapshotReport | None:
        """Fold every accepted batch into a new snapshot renamed over the index; None when there is nothing to
        fold. Serving goes on from the old snapshot meanwhile. `in_child`: computed by a child process at low
        priority (`snapshot.write_in_child`, with the Triton encoder at `encoder_url` if given)."""
        with self._build_lock:
            with self._lock:
                if self.accepted == self.snapshot_version:
                    return None
                version, touched = self.accepted, self.state.touched
                skb = None if in_child else self.state.to_skb()
                self.state.touched = Touched()
            try:
                if skb is None:
                    work, report = write_in_child(
                        self.directory, version, encoder_url=encoder_url, progress=self._progress
                    )
                else:
                    work, report = write_snapshot(
                        self.directory, version, skb, touched, self.encoder, progress=self._progress
                    )
                try:
                    if self._mirror is not None:  # before the swap: no served manifest without its copies
                        started = time.perf_counter()
                        self._mirror.before_swap(work, read_manifest(self.directory))
                        report.seconds["mirror_load"] = round(time.perf_counter() - started, 3)
                    self.log.link_into(work)
                    swap_into_place(work, self.directory)
                except BaseException:
                    shutil.rmtree(work, ignore_errors=True)
                    raise
            except BaseException:
                with self._lock:
                    self.state.touched.merge(touched)
                raise
            previous, self.snapshot_version = self.snapshot_version, version
            if self._mirror is not None:
                self._mirror.after_swap(self.directory, previous)
            logger.info(
                "index %s: version %d in %.1f s", self.directory, version, report.seconds["snapshot_total"]
            )
            return report

    def compact(self) -> tuple[SnapshotReport | None, int]:
        """Fold what is pending, then drop from the log the batches the snapshot holds."""
        report = self.snapshot()
        with self._build_lock, self._lock:
            dropped = self.log.drop_through(self.snapshot_version)
            self.keys.drop_through(self.snapshot_version)  # as after a restart: the log no longer has them
            return report, dropped

    def close(self) -> None:
        self.log.close()
