"""The writer lock of an index directory: one process at a time may change what the directory holds, whether it
appends changes to its log (`changes.log`) or replaces it with a fresh ingest (`ingest.builder`).

The lock is an advisory `flock` on `DIR/changes/lock`, released when its holder closes it or dies (kill -9 too),
so a crashed writer never leaves the index locked. A snapshot written by a fold links the same file into the new
directory (`ChangeLog.link_into`), so writers of the old and the new name still exclude each other.
"""

from __future__ import annotations

import fcntl
from pathlib import Path
from typing import IO

from skbqa.common.errors import IndexStoreError

LOG_DIR = "changes"
LOCK_FILE = "lock"


class WriterLock:
    def __init__(self, index_dir: Path) -> None:
        self.index_dir = Path(index_dir)
        self.path = self.index_dir / LOG_DIR / LOCK_FILE
        self._handle: IO[bytes] | None = None

    @property
    def held(self) -> bool:
        return self._handle is not None

    def take(self, busy: str) -> None:
        """Take the lock, held until `release`; IndexStoreError at once, saying `busy`, when another process holds
        it, or saying why when the index cannot be written."""
        if self._handle is not None:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            handle = self.path.open("ab")
        except OSError as exc:
            raise IndexStoreError(f"{self.index_dir} takes no changes: {exc.strerror}") from None
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            raise IndexStoreError(busy) from None
        self._handle = handle

    def release(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None
