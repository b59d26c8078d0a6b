"""Snapshots shipped through an object store, for replicas that do not share the updater's index directory.

The updater (`--snapshots s3://BUCKET/PREFIX`) pushes each folded snapshot with `skbqa index push`'s own code
(`ingest.object_store.push_index`: one location per snapshot, `versions/<id>/`, then the LATEST pointer) after it
is written and before it is renamed over the index, so the index never serves a version that is not in the store;
a push that fails fails the fold, which is retried with the batches still logged (as a Milvus load does). Its
version record then names where the version is (`SnapshotLocation`, under "snapshot"); a record without one means
"the shared index directory", as before shipping existed. A stage replica whose own directory does not show the
announced version fetches it from there (`ingest.snapshot_fetch`). LATEST follows the pushes, so a pod that
starts later (`skbqa index pull` in its init container) starts at the newest shipped version. The location and
the fetching live in `ingest.snapshot_fetch`, below both this writer and the readers (stage and Ray replicas).
After each swap the versions older than the newest `keep` are deleted from the store (`changes.retention`).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from skbqa.changes.retention import DEFAULT_KEEP, Pruned, checked_keep, prune_versions
from skbqa.changes.snapshot import kb_version
from skbqa.ingest.object_store import Location, push_index, s3_client, version_of
from skbqa.ingest.snapshot_fetch import SnapshotLocation
from skbqa.stores.index import MANIFEST, read_manifest

logger = logging.getLogger(__name__)


class SnapshotShipper:
    """The updater's `SnapshotMirror` for an object store: push before the swap, announce after it."""

    def __init__(
        self, url: str, *, endpoint_url: str | None = None, client: Any = None, keep: int = DEFAULT_KEEP
    ) -> None:
        """`keep`: the newest shipped versions the store keeps (at least 1; older ones are deleted after a swap)."""
        Location.parse(url)  # a bad URL is refused when the updater starts, not at its first fold
        self.url = url
        self.keep = checked_keep(keep)
        self.last_pruned: Pruned | None = None
        self._known: dict[str, tuple[int, int]] = {}  # version id → its order (manifests never change)
        self._endpoint_url = endpoint_url
        self._client = client
        self._pushed: SnapshotLocation | None = None
        self.shipped: SnapshotLocation | None = None  # what the version record names (the index serves it)

    def _s3(self) -> Any:
        if self._client is None:
            self._client = s3_client(self._endpoint_url)
        return self._client

    def ensure(self, directory: Path) -> SnapshotLocation:
        """At start: the version the index holds now, pushed unless the store has it already (the ingest Job
        published it, or a previous run of the updater shipped it), so replicas can be sent to it."""
        manifest_bytes = (directory / MANIFEST).read_bytes()
        location = Location.parse(self.url)
        object_id = version_of(manifest_bytes)
        try:
            self._s3().head_object(Bucket=location.bucket, Key=location.key("versions", object_id, MANIFEST))
        except Exception:  # not there (or not readable): push, which reports an unreachable store in one line
            push_index(directory, self.url, client=self._s3())
        self.shipped = SnapshotLocation(self.url, object_id, kb_version(read_manifest(directory)))
        return self.shipped

    def before_swap(self, work: Path, served: dict[str, Any]) -> SnapshotLocation:
        transfer = push_index(work, self.url, client=self._s3())
        self._pushed = SnapshotLocation(self.url, transfer.version, kb_version(read_manifest(work)))
        logger.info(
            "snapshot of version %d shipped to %s (%s, %.1f MiB in %.2f s)",
            self._pushed.kb_version, self.url, transfer.version, transfer.bytes / 2**20, transfer.seconds,
        )  # fmt: skip
        return self._pushed

    def after_swap(self, directory: Path, previous: int) -> None:
        if self._pushed is not None:
            self.shipped, self._pushed = self._pushed, None
            self.prune()

    def prune(self) -> Pruned | None:
        """Delete the shipped versions older than the newest `keep`, never the one served (which is the one just
        shipped, after a swap). Runs after the swap, so a failure costs space only: it is logged, never raised
        (the fold is done), and the next ship tries again."""
        protect = {self.shipped.object_id} if self.shipped is not None else set()
        try:
            self.last_pruned = prune_versions(self._s3(), self.url, self.keep, protect, self._known)
        except Exception as exc:
            logger.warning("snapshot retention on %s failed (tried again after the next ship): %s", self.url, exc)
            return None
        return self.last_pruned
