"""The embedded server's index taking changes while it serves: batches are checked and logged (acknowledged with
their version once fsync'd), and a background thread folds what is pending into a new snapshot, opens it, warms
it and swaps it in between requests. The fold itself runs in a child process at low priority
(`changes.snapshot.write_in_child`), so questions keep the server's cores and interpreter. A request reads the
pipeline it started with to the end, so no answer mixes two versions; `wait_for` gives `Ask.min_version` its
read-your-writes.

The writer (`IndexUpdater`, which holds the knowledge base in memory and the index's lock) is opened on the first
change, or at start when the change log holds batches no snapshot has yet: a server that is only asked never
pays for it, and several servers may serve one index as long as one of them takes its changes.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from skbqa.changes.folding import FoldLoop
from skbqa.changes.format import Change
from skbqa.changes.log import ChangeLog
from skbqa.changes.snapshot import SnapshotReport
from skbqa.changes.updater import IndexUpdater, SnapshotMirror, kb_version
from skbqa.query.encoder import Encoder
from skbqa.serving.gateway.backends import LocalBackend
from skbqa.serving.local_pipeline import LocalPipeline
from skbqa.serving.runtime import release_stores
from skbqa.stores.index import read_manifest, recover_index

logger = logging.getLogger(__name__)


class LiveIndex:
    def __init__(
        self,
        index: Path,
        encoder: Encoder,
        backend: LocalBackend,
        open_pipeline: Callable[[], LocalPipeline],
        *,
        encoder_url: str | None = None,
        mirror: SnapshotMirror | None = None,
    ) -> None:
        """`encoder_url`: the Triton encoder the folds use (None: the index's local encoder). `mirror`: the
        server's Milvus vectors, loaded with each snapshot before its swap (`runtime.snapshot_mirror`)."""
        self._index = Path(index)
        self._encoder_url = encoder_url
        self._mirror = mirror
        self._encoder = encoder
        self._backend = backend
        self._open_pipeline = open_pipeline
        self._served = kb_version(read_manifest(self._index))
        # What folds of a killed server left (their owners gone), whether or not this one will take changes
        recover_index(self._index, clean=True)
        self._updater: IndexUpdater | None = None
        self._replaced: LocalPipeline | None = None  # the version before the served one
        self._opening = threading.Lock()
        self._changed = threading.Condition()
        self._folds = FoldLoop(self._writer, self._folded, encoder_url=encoder_url, name="skbqa-live-index")
        if ChangeLog(self._index).last_version() > self._served:  # acknowledged, never folded in: now
            self._writer()
            self._folds.wake()

    @property
    def last_error(self) -> str:
        return self._folds.last_error

    @property
    def served_version(self) -> int:
        return self._served

    @property
    def accepted_version(self) -> int:
        return self._served if self._updater is None else self._updater.accepted

    def apply(self, batch: list[tuple[int, Change]], where: str, key_id: str = "") -> tuple[int, Counter[str]]:
        """`key_id`: the caller's scoped idempotency key; the writer answers a resend under it (IndexUpdater)."""
        version, outcome = self._writer().submit(batch, where, key_id=key_id)
        self._folds.wake()
        return version, outcome

    def wait_for(self, version: int, timeout_s: float) -> bool:
        """Whether `version` is served, waiting up to `timeout_s` for it."""
        with self._changed:
            return self._changed.wait_for(lambda: self._served >= version, timeout=max(timeout_s, 0.0))

    def _writer(self) -> IndexUpdater:
        with self._opening:
            if self._updater is None:
                self._updater = IndexUpdater(self._index, self._encoder, mirror=self._mirror)
            return self._updater

    def _folded(self, report: SnapshotReport) -> None:
        pipeline = self._open_pipeline()
        pipeline.warm()
        replaced = self._backend.replace(pipeline)
        if self._replaced is not None:
            # one fold later than its replacement: requests that started on it have long finished
            release_stores(self._replaced.runtime.stores)
        self._replaced = replaced
        # a fold killed with an earlier server may have outlived its start's clean-up by moments
        recover_index(self._index, clean=True)
        with self._changed:
            self._served = report.version
            self._changed.notify_all()
        logger.info("serving knowledge-base version %d", report.version)

    def close(self) -> None:
        self._folds.close()
        if self._updater is not None:
            self._updater.close()
