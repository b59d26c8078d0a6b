"""A stage replica's local copies of shipped snapshots (the updater's `--snapshots`, changes/shipping.py).

A replica whose index directory is its own cannot open the version the updater folded there; it fetches the
announced version with `skbqa index pull`'s own code (`ingest.object_store.pull_index`: every file's size and
CRC-32 checked against the manifest, a damaged or missing object refused by file name, the copy renamed into
place only when whole) into a fresh directory beside its index, `<index>.versions/v<N>-<id>`, and opens it there:
the version it serves keeps its own files while the new one is fetched and warmed. Copies no longer served are
removed (`sweep`); a copy of a newer version, complete, is kept and found again without a download.
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path
from typing import Any

from skbqa.changes.shipping import SnapshotLocation
from skbqa.ingest.object_store import pull_index, s3_client

logger = logging.getLogger(__name__)


class SnapshotFetcher:
    def __init__(self, index: Path, *, endpoint_url: str | None = None) -> None:
        """`index`: the replica's own index directory; `endpoint_url`: its S3-compatible endpoint (None: AWS)."""
        index = Path(index)
        self.root = index.parent / f"{index.name}.versions"
        self._endpoint_url = endpoint_url
        self._client: Any = None

    def target(self, location: SnapshotLocation) -> Path:
        return self.root / f"v{location.kb_version}-{location.object_id}"

    def fetch(self, location: SnapshotLocation) -> Path:
        """The version's local copy, downloaded unless it is here already; raises (IndexStoreError: damaged,
        BackendUnavailableError: the store is unreachable or an object is missing) leaving nothing half-made."""
        if self._client is None:
            self._client = s3_client(self._endpoint_url)  # boto3 is imported only by a replica that fetches
        target = self.target(location)
        self.root.mkdir(parents=True, exist_ok=True)
        transfer = pull_index(location.url, target, client=self._client, version=location.object_id)
        if not transfer.skipped:
            logger.info(
                "fetched knowledge-base version %d (%s): %d files, %.1f MiB in %.2f s",
                location.kb_version, location.object_id, transfer.files, transfer.bytes / 2**20, transfer.seconds,
            )  # fmt: skip
        return target

    def sweep(self, keep: set[Path], current: int) -> None:
        """Remove the copies of versions up to `current` that are not in `keep` (the directories of the versions
        still held), and the work directories of pulls that did not finish (pulls run on the caller's thread,
        so none is running now)."""
        if not self.root.is_dir():
            return
        for entry in self.root.iterdir():
            if entry in keep:
                continue
            if not entry.name.startswith(".") and _version_of_copy(entry.name) > current:
                continue  # fetched ahead of its switch (or by a previous run): a later switch opens it as it is
            shutil.rmtree(entry, ignore_errors=True)
            logger.info("removed the local copy %s (no longer served)", entry.name)


def _version_of_copy(name: str) -> int:
    head = name.split("-", 1)[0]
    return int(head[1:]) if head.startswith("v") and head[1:].isdigit() else -1
