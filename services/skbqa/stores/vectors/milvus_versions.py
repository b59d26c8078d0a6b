"""Milvus following an index's live updates: every knowledge-base version gets its own collections.

Collection rows are keyed by node position, and a fold renumbers positions (a deleted node shifts every later
one), so a version's vectors cannot be patched into the previous version's collections while replicas still
search them. The writer instead loads each new snapshot's sets into fresh collections (`collection_name` ends in
`_v<N>`) *before* the snapshot is renamed over the index: a replica that reads the new manifest always finds its
collections. The cost is a full copy per fold (the whole index's vectors, not just the changed ones), which is
measured in docs/milvus.md, and for a while three versions' worth of collections.

Old versions are dropped once nobody can still search them: the served version and the one before it are kept
(a stage replica keeps the previous version's core for `KEEP_PREVIOUS_S` after it switches, for requests
pinned to it); older ones are dropped at a later fold once `keep_s` has passed since they were superseded.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skbqa.stores.index import read_manifest
from skbqa.stores.vectors.milvus_catalog import _Catalog, collection_stem, collection_version
from skbqa.stores.vectors.milvus_sets import load_vectors_into_milvus

logger = logging.getLogger(__name__)

# Long enough for a replica to open and warm the new version and then let go of the previous one
# (serving.stage_versions.KEEP_PREVIOUS_S = 30 s after its switch), with room for a slow open.
DROP_AFTER_S = 90.0

Loader = Callable[..., dict[str, dict[str, Any]]]


@dataclass(frozen=True)
class MilvusTarget:
    """Where a server's vectors live: `uri` (http://host:19530 or a Milvus Lite file), its token, the prefix."""

    uri: str
    token: str = ""
    prefix: str = "skbqa"


class MilvusVersions:
    """The writer's side (`changes.updater.IndexUpdater`): load a snapshot before its swap, drop old versions after.

    Called under the updater's build lock, so one snapshot at a time touches the collections."""

    def __init__(
        self,
        target: MilvusTarget,
        *,
        keep_s: float = DROP_AFTER_S,
        load: Loader = load_vectors_into_milvus,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """`load`: the copy (tests pass one that fails); `clock`: monotonic seconds."""
        self.target = target
        self._keep_s = keep_s
        self._load = load
        self._clock = clock
        self._started = clock()
        self._superseded: dict[int, float] = {}  # version → when a newer one was swapped in (this process)
        self.last_load: dict[str, dict[str, Any]] = {}

    def before_swap(self, work: Path, served: dict[str, Any]) -> dict[str, dict[str, Any]]:
        """Load the snapshot in `work` into Milvus (the index still serves `served`, its manifest). Raises on any
        failure: the caller must then not swap. Idempotent, so a retried fold of the same version reuses
        complete collections."""
        version = int(served.get("kb_version", 0))
        # A fold that failed or was killed after its load began and before its swap left collections of a
        # version nobody ever served; the retry's snapshot of that version (or a later one) replaces them.
        self._drop(served, lambda v: v > version, "never served")
        started = self._clock()
        report = self._load(work, self.target.uri, token=self.target.token, collection_prefix=self.target.prefix)
        logger.info(
            "Milvus: %s loaded for the next snapshot in %.1f s",
            ", ".join(entry["collection"] for entry in report.values()),
            self._clock() - started,
        )
        self.last_load = report
        return report

    def after_swap(self, directory: Path, previous: int) -> None:
        """The index at `directory` now serves a new version; `previous` is the one it served before. Drops the
        collections of versions older than `previous` once `keep_s` has passed since they were superseded.
        Never raises: the new version is served whatever happens to the old collections (they are tried again
        at the next fold)."""
        now = self._clock()
        self._superseded[previous] = now
        try:
            manifest = read_manifest(directory)
            current = int(manifest.get("kb_version", 0))

            def expired(version: int) -> bool:
                # versions found from before this process started count from its start
                since = self._superseded.get(version, self._started)
                return version < previous and version != current and now - since >= self._keep_s

            self._drop(manifest, expired, "superseded")
        except Exception:
            logger.exception("Milvus: dropping old versions' collections failed; trying again at the next fold")

    def _drop(self, manifest: dict[str, Any], which: Callable[[int], bool], why: str) -> None:
        stem = collection_stem(manifest, self.target.prefix)
        catalog = _Catalog(self.target.uri, self.target.token, None)
        try:
            for name in catalog.names():
                version = collection_version(name, stem)
                if version is not None and which(version):
                    catalog.drop(name)
                    self._superseded.pop(version, None)
                    logger.info("Milvus: dropped %s (version %d, %s)", name, version, why)
        finally:
            catalog.close()
