"""Where a shipped snapshot is (`SnapshotLocation`), and a replica's local copies of them (`SnapshotFetcher`): a stage
replica's (serving/stage_versions.py) and a Ray Serve reranker replica's (stages/rerank/ray_replica.py); the
updater's `--snapshots` ships them (changes/shipping.py).

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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skbqa.common.errors import InvalidInputError
from skbqa.ingest.object_store import Location, pull_index, s3_client

logger = logging.getLogger(__name__)

RECORD_KEY = "snapshot"  # the key of the location in the updater's version record (serving.kb_feed)
_HEX = frozenset("0123456789abcdef")


@dataclass(frozen=True)
class SnapshotLocation:
    """Where knowledge-base version `kb_version` was shipped: `url` (s3://BUCKET/PREFIX) and the published
    version id under it (`object_store.version_of` its manifest)."""

    url: str
    object_id: str
    kb_version: int

    def to_record(self) -> dict[str, Any]:
        return {"url": self.url, "id": self.object_id, "kb_version": self.kb_version}

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> SnapshotLocation | None:
        """The location a version record carries; None when it carries none (the shared directory) or one this
        replica cannot read (an unreadable location is never guessed at: it is logged and skipped)."""
        found = record.get(RECORD_KEY)
        if found is None:
            return None
        try:
            url, object_id, version = str(found["url"]), str(found["id"]), int(found["kb_version"])
            Location.parse(url)
        except (KeyError, TypeError, ValueError, InvalidInputError) as exc:
            logger.warning("version feed: an unreadable snapshot location was skipped (%s)", type(exc).__name__)
            return None
        if len(object_id) != 16 or not set(object_id) <= _HEX:
            logger.warning("version feed: a snapshot location with a bad id was skipped")
            return None
        return cls(url, object_id, version)


class SnapshotFetcher:
    def __init__(self, index: Path, *, endpoint_url: str | None = None, root: Path | None = None) -> None:
        """`index`: the replica's own index directory; `endpoint_url`: its S3-compatible endpoint (None: AWS);
        `root`: where the copies go (default `<index>.versions`; two replicas beside one index each need their
        own, as each removes the copies it does not hold)."""
        index = Path(index)
        self.root = root if root is not None else index.parent / f"{index.name}.versions"
        self._endpoint_url = endpoint_url
        self._client: Any = None
        self._fetched: dict[Path, SnapshotLocation] = {}  # where each copy came from (`location_of`)

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
        self._fetched[target] = location
        if not transfer.skipped:
            logger.info(
                "fetched knowledge-base version %d (%s): %d files, %.1f MiB in %.2f s",
                location.kb_version, location.object_id, transfer.files, transfer.bytes / 2**20, transfer.seconds,
            )  # fmt: skip
        return target

    def location_of(self, directory: Path) -> SnapshotLocation | None:
        """The shipped location `directory` was fetched from (None: not a copy this fetcher made), which a version
        built on it passes on to its Ray replicas, so they fetch the same version (stages/rerank/ray_replica.py)."""
        return self._fetched.get(Path(directory))

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
            self._fetched.pop(entry, None)
            logger.info("removed the local copy %s (no longer served)", entry.name)


def _version_of_copy(name: str) -> int:
    head = name.split("-", 1)[0]
    return int(head[1:]) if head.startswith("v") and head[1:].isdigit() else -1
