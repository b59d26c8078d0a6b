"""Where a shipped snapshot is (`SnapshotLocation`), and a replica's local copies of them (`SnapshotFetcher`): a stage
replica's (serving/stage_versions.py) and a Ray Serve reranker replica's (stages/rerank/ray_replica.py); the
updater's `--snapshots` ships them (changes/shipping.py).

A replica whose index directory is its own cannot open the version the updater folded there; it fetches the
announced version with `skbqa index pull`'s own code (`ingest.object_store.pull_index`: every file's size and
CRC-32 checked against the manifest, a damaged or missing object refused by file name, the copy renamed into
place only when whole) into a fresh directory beside its index, `<index>.versions/v<N>-<id>`, and opens it there:
the version it serves keeps its own files while the new one is fetched and warmed. Copies no longer served are
removed (`sweep`); a copy of a newer version, complete, is kept and found again without a download.

The updater deletes shipped versions older than its newest few (changes/retention.py). A replica that lags that far
behind, or is fetching a version while it is deleted, gets `VersionGoneError` from the pull (its work directory
removed) and then fetches the newest version, which LATEST names, in the same call. A replica claims its root when
it starts (`claim`): it holds a lock there while it lives, removes what an earlier run of itself left behind, and,
for roots that are one of several beside an index (Ray replicas, `replica-<pid>`), the roots of replicas that died.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from skbqa.common.errors import InvalidInputError
from skbqa.ingest.object_store import (
    Location,
    VersionGoneError,
    latest_version,
    pull_index,
    read_object,
    s3_client,
)
from skbqa.stores.index import MANIFEST, kb_version

logger = logging.getLogger(__name__)

OWNER_LOCK = ".owner.lock"  # held (flock) by the process whose copies a root holds, for as long as it lives
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
        self._owner: IO[bytes] | None = None  # the root's lock, held from `claim` on

    def target(self, location: SnapshotLocation) -> Path:
        return self.root / f"v{location.kb_version}-{location.object_id}"

    def fetch(self, location: SnapshotLocation) -> Path:
        """The version's local copy, downloaded unless it is here already; raises (IndexStoreError: damaged,
        BackendUnavailableError: the store is unreachable or an object is missing) leaving nothing half-made.
        When the version is gone from the store (retention removed it, before or during this fetch), the copy of
        the newest version LATEST names is returned instead, if that is newer; else VersionGoneError is raised."""
        if self._client is None:
            self._client = s3_client(self._endpoint_url)  # boto3 is imported only by a replica that fetches
        try:
            return self._pull(location)
        except VersionGoneError as gone:
            newest = self._newest(location.url)
            if newest is None or newest.kb_version <= location.kb_version:
                raise
            logger.warning("%s; fetching the newest, version %d (%s)", gone, newest.kb_version, newest.object_id)
            return self._pull(newest)

    def _newest(self, url: str) -> SnapshotLocation | None:
        """Where the newest shipped version is (LATEST and its manifest), None when that cannot be read now."""
        try:
            object_id = latest_version(url, client=self._client)
            manifest = read_object(url, ("versions", object_id, MANIFEST), client=self._client)
            return SnapshotLocation(url, object_id, kb_version(json.loads(manifest)))
        except Exception as exc:  # the caller's own error says more; this one is only logged
            logger.warning("the newest shipped version at %s cannot be read: %s", url, exc)
            return None

    def _pull(self, location: SnapshotLocation) -> Path:
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
            if entry in keep or entry.name == OWNER_LOCK:
                continue
            if not entry.name.startswith(".") and _version_of_copy(entry.name) > current:
                continue  # fetched ahead of its switch (or by a previous run): a later switch opens it as it is
            shutil.rmtree(entry, ignore_errors=True)
            self._fetched.pop(entry, None)
            logger.info("removed the local copy %s (no longer served)", entry.name)

    def claim(self, *, siblings: bool = False) -> None:
        """Called once when the replica starts: take the root's lock, and remove what earlier runs left in it
        (work directories, copies older than the newest; that one is kept, for a switch to it without a download,
        and swept like any other once a newer version is served). `siblings`: the root is one of several
        `<name>-<pid>` roots beside one index (Ray replicas), and the roots whose owner is gone (their lock free,
        or no lock and no such process) are removed whole. Only the root and its siblings are ever touched."""
        self.root.mkdir(parents=True, exist_ok=True)
        if self._owner is None:
            owner = open(self.root / OWNER_LOCK, "ab")  # noqa: SIM115 (held for the process's life)
            try:
                fcntl.flock(owner, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:  # a live process uses this root too (misconfigured): never remove its copies
                owner.close()
                logger.warning("%s is in use by another live process; its copies are left alone", self.root)
                return
            self._owner = owner
        copies = sorted(
            (e for e in self.root.iterdir() if e.name != OWNER_LOCK), key=lambda e: _version_of_copy(e.name)
        )
        newest = next((e for e in reversed(copies) if (e / MANIFEST).is_file()), None)
        for entry in copies:
            if entry != newest:
                shutil.rmtree(entry, ignore_errors=True)
                logger.info("removed %s, left by an earlier run of this replica", entry)
        if siblings:
            prefix = self.root.name.rsplit("-", 1)[0] + "-"
            for sibling in self.root.parent.iterdir():
                if sibling != self.root and sibling.name.startswith(prefix) and _abandoned(sibling):
                    shutil.rmtree(sibling, ignore_errors=True)
                    logger.info("removed %s, the copies of a replica that is gone", sibling)


def _abandoned(root: Path) -> bool:
    """Whether nobody owns `root`: its lock can be taken (its owner died), or it has none and the process its
    name ends with is not running (an owner that has not locked it yet is running)."""
    try:
        with open(root / OWNER_LOCK, "rb") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return False
            return True
    except FileNotFoundError:
        pid = root.name.rsplit("-", 1)[-1]
        if not pid.isdigit():
            return False
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            return False
        return False
    except OSError:
        return False


def _version_of_copy(name: str) -> int:
    head = name.split("-", 1)[0]
    return int(head[1:]) if head.startswith("v") and head[1:].isdigit() else -1
