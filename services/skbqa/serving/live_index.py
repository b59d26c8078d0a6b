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

from skbqa.changes.format import Change
from skbqa.changes.log import ChangeLog
from skbqa.changes.updater import IndexUpdater, kb_version
from skbqa.query.encoder import Encoder
from skbqa.serving.gateway.backends import LocalBackend
from skbqa.serving.local_pipeline import LocalPipeline
from skbqa.stores.index import read_manifest, recover_index

logger = logging.getLogger(__name__)

RETRY_AFTER_FAILURE_S = 5.0


class LiveIndex:
    def __init__(
        self,
        index: Path,
        encoder: Encoder,
        backend: LocalBackend,
        open_pipeline: Callable[[], LocalPipeline],
        *,
        encoder_url: str | None = None,
    ) -> None:
        """`encoder_url`: the Triton encoder the folds use (None: the index's local encoder)."""
        self._index = Path(index)
        self._encoder_url = encoder_url
        self._encoder = encoder
        self._backend = backend
        self._open_pipeline = open_pipeline
        self._served = kb_version(read_manifest(self._index))
        # What folds of a killed server left (their owners gone), whether or not this one will take changes
        recover_index(self._index, clean=True)
        self._updater: IndexUpdater | None = None
        self._opening = threading.Lock()
        self._changed = threading.Condition()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self.last_error = ""
        self._thread = threading.Thread(target=self._fold_loop, name="skbqa-live-index", daemon=True)
        self._thread.start()
        if ChangeLog(self._index).last_version() > self._served:  # acknowledged, never folded in: now
            self._writer()
            self._wake.set()

    @property
    def served_version(self) -> int:
        return self._served

    @property
    def accepted_version(self) -> int:
        return self._served if self._updater is None else self._updater.accepted

    def apply(self, batch: list[tuple[int, Change]], where: str) -> tuple[int, Counter[str]]:
        version, outcome = self._writer().submit(batch, where)
        self._wake.set()
        return version, outcome

    def wait_for(self, version: int, timeout_s: float) -> bool:
        """Whether `version` is served, waiting up to `timeout_s` for it."""
        with self._changed:
            return self._changed.wait_for(lambda: self._served >= version, timeout=max(timeout_s, 0.0))

    def _writer(self) -> IndexUpdater:
        with self._opening:
            if self._updater is None:
                self._updater = IndexUpdater(self._index, self._encoder)
            return self._updater

    def _fold_loop(self) -> None:
        while not self._stop.is_set():
            self._wake.wait()
            if self._stop.is_set():
                return
            self._wake.clear()
            try:
                report = self._writer().snapshot(in_child=True, encoder_url=self._encoder_url)
                if report is None:
                    continue
                pipeline = self._open_pipeline()
                pipeline.warm()
                self._backend.replace(pipeline)
                self.last_error = ""
                # a fold killed with an earlier server may have outlived its start's clean-up by moments
                recover_index(self._index, clean=True)
            except Exception as exc:  # the batches stay logged: try again, keep serving the old snapshot
                self.last_error = f"{type(exc).__name__}: {exc}"[:300]
                logger.exception(
                    "folding changes into the index failed; retrying in %.0f s", RETRY_AFTER_FAILURE_S
                )
                self._stop.wait(RETRY_AFTER_FAILURE_S)
                self._wake.set()
                continue
            with self._changed:
                self._served = report.version
                self._changed.notify_all()
            logger.info("serving knowledge-base version %d (%s)", report.version, report.seconds)

    def close(self) -> None:
        self._stop.set()
        self._wake.set()
        self._thread.join(timeout=60)
        if self._updater is not None:
            self._updater.close()
