"""A stage replica following the knowledge base's versions (the distributed form of live updates).

The replica keeps the core of the version it serves and, for `KEEP_PREVIOUS_S` after a switch, the one before:
a request carries the version its first stage computed at (`StageMessage.kb_version`), and every later stage
computes at exactly that version, so no answer mixes two. A new version is opened and warmed on a thread of its
own while the old one keeps serving, and swapped in between messages. What starts a reload: a record on
`skbqa.versions` (the updater folded a version into the shared index directory), and, as a fallback for a missed
record, a look at the index's manifest every `CHECK_EVERY_S`.

Where a new version comes from: the index directory, when it shows the version (it is shared with the updater);
otherwise, when the updater's record says where it shipped the version (changes/shipping.py), a local copy fetched
from the object store (`ingest.snapshot_fetch`). A fetch that fails leaves this replica serving what it serves,
and is tried again on the next record (the updater repeats its record every heartbeat), so the version is never
lost; the version this replica reports moves only once it serves the new one. Copies no longer held are removed.

A request that needs a version this replica does not have yet waits for it up to its deadline (at most
`MAX_WAIT_S`: the worker's partition waits with it); one pinned to a version already let go is refused
UNAVAILABLE (the knowledge base changed twice while it was answered; a retry is answered at the new version).
A replaced version is let go `KEEP_PREVIOUS_S` after the switch, or later while a request given it may still run
(until that request's deadline, past which every stage drops it), and only then is its local copy removed.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

from skbqa.changes.snapshot import kb_version
from skbqa.ingest.object_store import VersionGoneError
from skbqa.ingest.snapshot_fetch import SnapshotFetcher, SnapshotLocation
from skbqa.observability.metrics import get_metrics
from skbqa.serving.runtime import release_stores
from skbqa.serving.stages.chain import members
from skbqa.serving.stages.core import StageCore, StageMessage
from skbqa.stores.index import read_manifest

logger = logging.getLogger(__name__)

KEEP_PREVIOUS_S = 30.0
CHECK_EVERY_S = 5.0
MAX_WAIT_S = 10.0
HOLD_MAX_S = 120.0  # a request with a far deadline holds a replaced version (twice the memory) at most this long
RETRY_MAX_S = 30.0  # the longest pause between two attempts at a version that failed to open or fetch


class VersionUnavailableError(Exception):
    """The request's version cannot be served here (one line, safe for the client)."""


def core_version(core: StageCore) -> int:
    first: Any = members(core)[0]  # every stage core is a StageBase, which holds the runtime it was built on
    return kb_version(first.runtime.stores.manifest)


class VersionedCores:
    def __init__(
        self,
        core: StageCore,
        build: Callable[[Path], StageCore],
        *,
        index: Path,
        role: str,
        follows: bool = True,
        fetcher: SnapshotFetcher | None = None,
    ) -> None:
        """`build`: a new core from the index directory given, as it is now (built, not warmed). `follows`: False
        for a replica whose stores cannot follow changes (it serves its first version and says so). `fetcher`:
        where versions shipped through an object store are copied to (None: `index`'s own `.versions` beside
        it)."""
        self.role = role
        self.instance = f"{role}-{uuid.uuid4().hex[:8]}"
        self.follows = follows
        self._build = build
        self._index = Path(index)
        self.current = core_version(core)
        self._cores: dict[int, StageCore] = {self.current: core}
        self._directories: dict[int, Path] = {self.current: self._index}  # where each held version's files are
        self._fetcher = fetcher or SnapshotFetcher(self._index)
        self._shipped: SnapshotLocation | None = None  # the newest version the updater says it shipped
        self._published = 0  # the newest version the updater says it folded
        self._warned_unshipped = 0
        self._retire_at: dict[int, float] = {}
        self._busy_until: dict[int, float] = {}  # per version: the latest deadline (unix s) of a request given it
        self._changed = threading.Condition()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self.on_switch: Callable[[], None] = lambda: None
        self.last_error = ""
        self._metrics = get_metrics()
        self._metrics.set_kb_version(role, self.current)
        self._thread = threading.Thread(target=self._reload_loop, name="skbqa-kb-versions", daemon=True)
        if follows:
            self._thread.start()

    def report(self) -> dict[str, Any]:
        return {
            "kind": "serving",
            "instance": self.instance,
            "role": self.role,
            "version": self.current,
            "follows": self.follows,
        }

    def on_record(self, record: dict[str, Any]) -> None:
        """A record of the version feed: the updater published a version newer than ours → reload now."""
        if record.get("kind") == "updater" and int(record.get("published", 0)) > self.current:
            location = SnapshotLocation.from_record(record)
            if location is not None and (self._shipped is None or location.kb_version > self._shipped.kb_version):
                self._shipped = location
            self._published = int(record.get("published", 0))
            self._wake.set()

    # ------------------------------------------------------------------------------------------------ serving

    def core_for(self, request: StageMessage) -> StageCore:
        """The core `request` must run on; pins the request to the version served here when it is not pinned
        yet (the first stage). Raises VersionUnavailableError when the version cannot be had in time."""
        left = MAX_WAIT_S
        if request.deadline_unix_ms:
            left = min(left, request.deadline_unix_ms / 1000 - time.time())
        with self._changed:
            if request.kb_version:
                wanted = int(request.kb_version)
                if wanted not in self._cores and wanted > self.current:
                    self._wake.set()
                    self._changed.wait_for(lambda: wanted in self._cores or self.current > wanted, max(left, 0))
                core = self._cores.get(wanted)
                if core is None:
                    raise VersionUnavailableError(self._refusal(wanted))
                self._hold(wanted, request)
                return core
            needed = int(request.min_version)
            if needed > self.current:
                self._wake.set()
                if not self._changed.wait_for(lambda: self.current >= needed, max(left, 0)):
                    raise VersionUnavailableError(
                        f"knowledge-base version {needed} is not visible yet ({self.role} serves "
                        f"{self.current}); retry shortly"
                    )
            request.kb_version = self.current
            self._hold(self.current, request)
            return self._cores[self.current]

    def _hold(self, version: int, request: StageMessage) -> None:
        """Keep `version` (and its copy) while `request` may still run on it: until its deadline (under
        _changed). A request without one is covered by `KEEP_PREVIOUS_S` alone, as before deadlines were known."""
        if request.deadline_unix_ms:
            until = min(request.deadline_unix_ms / 1000, time.time() + HOLD_MAX_S)
            if until > self._busy_until.get(version, 0.0):
                self._busy_until[version] = until

    def _refusal(self, wanted: int) -> str:
        if wanted > self.current:
            return (
                f"knowledge-base version {wanted} is not open yet on {self.role} (serving {self.current}); retry"
            )
        return f"the knowledge base moved on from version {wanted} while this request was answered; retry"

    # ------------------------------------------------------------------------------------------------ reloading

    def _reload_loop(self) -> None:
        try:  # on this thread, not in the constructor: copies an earlier run of this replica left behind
            self._fetcher.claim()
        except OSError as exc:
            logger.warning("%s: the copies of earlier runs could not be removed: %s", self.role, exc)
        failures = 0
        while not self._stop.is_set():
            self._wake.wait(CHECK_EVERY_S)
            self._wake.clear()
            if self._stop.is_set():
                return
            try:
                self._retire()
                source = self._newer_source()
                if source is not None:
                    self._open_newer(source)
                self.last_error = ""
                failures = 0
            except VersionGoneError as exc:  # lagged past the store's retention: the newest is named by now
                self.last_error = f"{type(exc).__name__}: {exc}"[:300]
                logger.warning("%s: %s", self.role, self.last_error)
                self._stop.wait(1.0)
                self._wake.set()
            except Exception as exc:  # e.g. read while a fold renamed the index: the next check tries again
                error = f"{type(exc).__name__}: {exc}"[:300]
                if error != self.last_error:  # not once per retry
                    logger.warning("%s: opening the new knowledge-base version failed: %s", self.role, error)
                self.last_error = error
                # a damaged object stays damaged until it is shipped again: each retry fetches the version anew,
                # so retries slow down (records arriving meanwhile do not hurry them)
                self._stop.wait(min(RETRY_MAX_S, 2.0**failures))
                failures += 1
                self._wake.set()

    def _newer_source(self) -> Path | None:
        """The directory holding a version newer than the one served: the index's own (shared with the
        updater), else a local copy of the newest shipped version (fetched now; raises when that fails)."""
        if kb_version(read_manifest(self._index)) > self.current:
            return self._index
        shipped = self._shipped
        if shipped is not None and shipped.kb_version > self.current:
            return self._fetcher.fetch(shipped)
        published = self._published
        if shipped is None and published > self.current and published > self._warned_unshipped:
            self._warned_unshipped = published  # once per version: the record repeats every heartbeat
            logger.warning(
                "%s: the updater published version %d, which this replica's index directory does not show and "
                "no record says where it was shipped: share the updater's directory or give it --snapshots",
                self.role, published,
            )  # fmt: skip
        return None

    def _open_newer(self, directory: Path) -> None:
        started = time.perf_counter()
        core = self._build(directory)
        core.warm()
        version = core_version(core)  # the snapshot actually opened (a later fold may have landed meanwhile)
        if version <= self.current:
            return
        with self._changed:
            self._retire_at[self.current] = time.monotonic() + KEEP_PREVIOUS_S
            self._cores[version] = core
            self._directories[version] = directory
            self.current = version
            self._changed.notify_all()
        self._metrics.set_kb_version(self.role, version)
        self.on_switch()
        logger.info("%s: serving knowledge-base version %d (opened in %.2f s)", self.role, version,
                    time.perf_counter() - started)  # fmt: skip

    def _retire(self) -> None:
        now, wall = time.monotonic(), time.time()
        with self._changed:
            for version, when in list(self._retire_at.items()):
                if when <= now and version != self.current and self._busy_until.get(version, 0.0) <= wall:
                    retired = self._cores.pop(version, None)
                    del self._retire_at[version]
                    self._busy_until.pop(version, None)
                    self._directories.pop(version, None)
                    if retired is not None:
                        for member in members(retired):  # its Milvus clients, if any
                            release_stores(cast(Any, member).runtime.stores)
            held = set(self._directories.values())
        self._fetcher.sweep(held, self.current)  # local copies of versions let go (and of failed fetches)

    def close(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout=30)
