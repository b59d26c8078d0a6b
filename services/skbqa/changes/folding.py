"""The fold loop: a background thread that folds every accepted batch of an `IndexUpdater` into a new snapshot
(all batches pending at the time in one fold) and hands the report to its owner, who makes the snapshot visible.

Shared by the embedded server (`serving.live_index`: it opens, warms and swaps in the new pipeline) and the
distributed updater (`serving.updater_service`: it tells every replica the new version). A failed fold, or a
failure of what the owner does with it, keeps the batches logged and is retried after a pause, so a transient
problem (the encoder away, a full disk) never loses a change and never stops serving.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from skbqa.changes.snapshot import SnapshotReport
from skbqa.changes.updater import IndexUpdater

logger = logging.getLogger(__name__)

RETRY_AFTER_FAILURE_S = 5.0


class FoldLoop:
    def __init__(
        self,
        writer: Callable[[], IndexUpdater],
        on_folded: Callable[[SnapshotReport], None],
        *,
        in_child: bool = True,
        encoder_url: str | None = None,
        name: str = "skbqa-fold",
    ) -> None:
        """`writer`: the updater (opened on first use by whoever owns it). `on_folded`: called on this thread
        with each new snapshot's report, after the snapshot is renamed over the index. `in_child`: fold in a
        child process at low priority (a serving process keeps its cores for questions)."""
        self._writer = writer
        self._on_folded = on_folded
        self._in_child = in_child
        self._encoder_url = encoder_url
        self._wake = threading.Event()
        self._stop = threading.Event()
        self.last_error = ""
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def wake(self) -> None:
        """Fold what is pending now (a fold in progress is followed by another one)."""
        self._wake.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.wait()
            if self._stop.is_set():
                return
            self._wake.clear()
            try:
                report = self._writer().snapshot(in_child=self._in_child, encoder_url=self._encoder_url)
                if report is None:
                    continue
                self._on_folded(report)
                self.last_error = ""
            except Exception as exc:  # the batches stay logged: try again, keep serving the old snapshot
                self.last_error = f"{type(exc).__name__}: {exc}"[:300]
                logger.exception(
                    "folding changes into the index failed; retrying in %.0f s", RETRY_AFTER_FAILURE_S
                )
                self._stop.wait(RETRY_AFTER_FAILURE_S)
                self._wake.set()
                continue
            logger.info("knowledge-base version %d folded (%s)", report.version, report.seconds)

    def close(self, timeout_s: float = 60.0) -> None:
        self._stop.set()
        self._wake.set()
        self._thread.join(timeout=timeout_s)
