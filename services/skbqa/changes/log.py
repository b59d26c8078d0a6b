"""The change log of an index: every acknowledged batch, appended and fsync'd before it is acknowledged, replayed
on open until a snapshot holds it.

`DIR/changes/log.jsonl` holds one line per batch, `{"version": V, "crc32": C, "changes": [...]}`; versions count
batches from the ingest (version 0). A batch that came from the change topic (the distributed form) also has its
`"batch"` id, so a redelivery of the record after a crash is recognised and not applied again; a batch a client
sent with an idempotency key has its `"key"` (`{"id", "digest", "outcome"}`, `changes.idempotency`), so a resend
is answered as the batch was, after a restart too. The file is shared by every snapshot of the index by a hard
link, so a new snapshot renamed over DIR keeps the very file appenders hold open, and a kill at any moment leaves
it reachable from whichever snapshot DIR names. A torn last line (a kill during an append, before the
acknowledgement) is cut off when the log is next opened for writing. `DIR/changes/lock` (linked likewise)
serialises writers across processes.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from skbqa.changes.format import Change, change_to_json, parse_change
from skbqa.changes.idempotency import KeyedAnswer
from skbqa.common.errors import IndexStoreError
from skbqa.stores.writer_lock import LOCK_FILE, LOG_DIR, WriterLock

logger = logging.getLogger(__name__)

LOG_FILE = "log.jsonl"


def _crc(changes: list[dict[str, Any]]) -> str:
    canonical = json.dumps(changes, separators=(",", ":"), ensure_ascii=False, sort_keys=True)
    return f"{zlib.crc32(canonical.encode()) & 0xFFFFFFFF:08x}"


class ChangeLog:
    def __init__(self, index_dir: Path) -> None:
        self.directory = Path(index_dir) / LOG_DIR
        self.path = self.directory / LOG_FILE
        self._handle: IO[bytes] | None = None
        self._lock = WriterLock(index_dir)

    # ------------------------------------------------------------------------------------------------ reading

    def batches(self, after: int = 0) -> Iterator[tuple[int, list[Change]]]:
        """(version, changes) of every whole batch with a version above `after`, in order."""
        for version, raw in self._records():
            if version > after:
                where = f"{self.path.name} version {version}"
                yield version, [parse_change(obj, where, i) for i, obj in enumerate(raw, start=1)]

    def last_version(self) -> int:
        return max((version for version, _ in self._records()), default=0)

    def remembered(self) -> tuple[dict[str, int], list[tuple[str, KeyedAnswer]]]:
        """In one pass: the version each logged batch with an id got, and the answer each batch sent with an
        idempotency key got, in log order (batches dropped by compaction are in neither)."""
        batches: dict[str, int] = {}
        keys: list[tuple[str, KeyedAnswer]] = []
        if not self.path.is_file():
            return batches, keys
        with self.path.open("rb") as handle:
            for raw in handle:
                with contextlib.suppress(ValueError, KeyError, TypeError, AttributeError):
                    record = json.loads(raw)
                    if record.get("batch"):
                        batches[str(record["batch"])] = int(record["version"])
                    if record.get("key"):
                        keys.append(KeyedAnswer.from_json(int(record["version"]), record["key"]))
        return batches, keys

    def _records(self) -> Iterator[tuple[int, list[dict[str, Any]]]]:
        for version, changes, _ in self._lines():
            yield version, changes

    def _lines(self) -> Iterator[tuple[int, list[dict[str, Any]], bytes]]:
        """Every whole record as (version, changes, its line as written)."""
        if not self.path.is_file():
            return
        with self.path.open("rb") as handle:
            for lineno, raw in enumerate(handle, start=1):
                record = self._decode(raw)
                if record is None:
                    if raw.endswith(b"\n"):  # damage before the end is not a torn append: refuse to guess
                        raise IndexStoreError(f"{self.path}:{lineno}: damaged change log record")
                    return  # a torn last line: never acknowledged
                yield record[0], record[1], raw

    @staticmethod
    def _decode(raw: bytes) -> tuple[int, list[dict[str, Any]]] | None:
        try:
            record = json.loads(raw)
            version, changes = int(record["version"]), record["changes"]
            if record["crc32"] != _crc(changes):
                return None
            return version, changes
        except (ValueError, KeyError, TypeError):
            return None

    # ------------------------------------------------------------------------------------------------ writing

    def lock(self) -> None:
        """Take the index's writer lock, held until `close`; IndexStoreError at once when another process holds
        it or the index cannot be written."""
        if self._lock.held:
            return
        self._lock.take(
            f"another process is changing {self.directory.parent} (a server serving it?): "
            "send the changes there with skbqa update --server HOST:PORT"
        )
        self._cut_torn_tail()

    def append(
        self,
        version: int,
        changes: list[Change],
        batch_id: str = "",
        key: tuple[str, KeyedAnswer] | None = None,
    ) -> None:
        """Write one batch and fsync it: when this returns, the batch survives a crash of this machine. `key`:
        the idempotency key id the batch was sent with and the answer it gets (the batch's version)."""
        if not self._lock.held:
            raise RuntimeError("take the log's lock before appending")
        body = [change_to_json(c) for c in changes]
        record: dict[str, Any] = {"version": version, "crc32": _crc(body), "changes": body}
        if batch_id:
            record["batch"] = batch_id
        if key is not None:
            record["key"] = key[1].to_json(key[0])
        line = json.dumps(record, ensure_ascii=False)
        if self._handle is None:
            self._handle = self.path.open("ab")
            _fsync_dir(self.directory)  # the file's own name is durable too
        self._handle.write(line.encode() + b"\n")
        self._handle.flush()
        os.fsync(self._handle.fileno())

    def drop_through(self, version: int) -> int:
        """Rewrite the log without the batches up to `version` (a snapshot holds them); returns how many went.
        The batches kept are kept as written, with their batch ids and idempotency keys."""
        records = list(self._lines())
        kept = [raw for v, _, raw in records if v > version]
        dropped = len(records) - len(kept)
        if not dropped:
            return 0
        temporary = self.path.with_suffix(".tmp")
        with temporary.open("wb") as handle:
            for raw in kept:
                handle.write(raw if raw.endswith(b"\n") else raw + b"\n")
            handle.flush()
            os.fsync(handle.fileno())
        if self._handle is not None:
            self._handle.close()
            self._handle = None
        os.replace(temporary, self.path)
        _fsync_dir(self.directory)
        return dropped

    def link_into(self, snapshot_dir: Path) -> None:
        """Give a new snapshot the same log and lock files (hard links: one file, two names)."""
        target = Path(snapshot_dir) / LOG_DIR
        target.mkdir(parents=True, exist_ok=True)
        for name in (LOG_FILE, LOCK_FILE):
            if (self.directory / name).exists():
                os.link(self.directory / name, target / name)

    def _cut_torn_tail(self) -> None:
        if not self.path.is_file():
            return
        good = 0
        with self.path.open("rb") as handle:
            for raw in handle:
                if self._decode(raw) is None and not raw.endswith(b"\n"):
                    break
                good += len(raw)
        if good < self.path.stat().st_size:
            logger.warning("%s: cutting a torn last record (%d bytes)", self.path, self.path.stat().st_size - good)
            with self.path.open("r+b") as handle:
                handle.truncate(good)
                os.fsync(handle.fileno())

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None
        self._lock.release()


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
