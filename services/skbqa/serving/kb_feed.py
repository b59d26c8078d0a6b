"""The knowledge-base version feed: small JSON records on `skbqa.versions`, read by every process as a broadcast.

Who says what:
- the updater: `{"kind": "updater", "accepted": A, "published": P}` — the newest acknowledged batch and the
  newest version folded into the index directory (which every process of the local stack opens); with
  `--snapshots`, also `"snapshot": {"url", "id", "kb_version"}`, where it shipped that version for replicas with
  directories of their own (changes/shipping.py; a record without it means the shared directory);
- each stage replica: `{"kind": "serving", "instance": ID, "role": R, "version": V, "follows": bool}` — the
  version it answers at, and whether it can follow changes at all (a replica whose graph is a copy in NebulaGraph
  cannot; one reranking on Ray Serve can, stages/rerank/ray_serve, and so can one with Milvus vectors, whose
  collections the updater loads per version, stores/vectors/milvus_versions).

Each record is sent when its value changes and again every `HEARTBEAT_S`, so a process that joins late, or
missed a record while its consumer was joining, learns the state within one heartbeat, and a replica that died
drops out of the gateway's view after `LIVE_FOR_S`. Every reader consumes in a consumer group of its own from
the log end (nothing is committed: old records say nothing a heartbeat will not say again).
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from skbqa.bus import topics
from skbqa.bus.base import Bus, Consumer
from skbqa.common.errors import BackendUnavailableError

logger = logging.getLogger(__name__)

HEARTBEAT_S = 2.0
# A broker that every service of a deployment joins at once may not complete one join within its timeout; the
# feed joins again (in a group of its own each time) before the process gives up.
JOIN_ATTEMPTS = 3
LIVE_FOR_S = 3 * HEARTBEAT_S + 1.0


@dataclass
class Replica:
    role: str
    version: int
    follows: bool
    seen: float  # time.monotonic()


class VersionFeed:
    def __init__(
        self,
        bus: Bus,
        *,
        report: Callable[[], dict[str, Any]] | None = None,
        on_record: Callable[[dict[str, Any]], None] | None = None,
        poll_timeout_s: float = 0.05,
    ) -> None:
        """`report`: this process's own record, sent on `announce()` and every heartbeat (None: it only reads).
        `on_record`: called on the feed's thread with every record read."""
        self._bus = bus
        self._report = report
        self._on_record = on_record
        self._poll_timeout_s = poll_timeout_s
        self.accepted = 0
        self.published = 0
        self.updater_seen: float | None = None
        self.replicas: dict[str, Replica] = {}
        self._changed = threading.Condition()
        self._stop = threading.Event()
        self._announce = threading.Event()
        bus.ensure_topics(topics.SINGLE_PARTITION, partitions=1)
        self._consumer: Consumer = _join_feed(bus)
        self._threads = [threading.Thread(target=self._read, name="skbqa-versions", daemon=True)]
        if report is not None:
            self._threads.append(threading.Thread(target=self._heartbeat, name="skbqa-versions-out", daemon=True))
        for thread in self._threads:
            thread.start()

    # ------------------------------------------------------------------------------------------------ reading

    def live_replicas(self) -> dict[str, Replica]:
        now = time.monotonic()
        with self._changed:
            return {key: r for key, r in self.replicas.items() if now - r.seen <= LIVE_FOR_S}

    def updater_live(self) -> bool:
        return self.updater_seen is not None and time.monotonic() - self.updater_seen <= LIVE_FOR_S

    def min_serving(self) -> int | None:
        """The version every live stage replica serves (None: none has reported)."""
        versions = [r.version for r in self.live_replicas().values()]
        return min(versions) if versions else None

    def wait(self, condition: Callable[[], bool], timeout_s: float) -> bool:
        """Whether `condition` holds, re-checked on every record read, waiting up to `timeout_s`."""
        deadline = time.monotonic() + max(timeout_s, 0.0)
        with self._changed:
            while not condition():
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                # also re-checked now and then: a replica can drop out (no record) and so lift the minimum
                self._changed.wait(min(left, 0.5))
            return True

    def note(self, record: dict[str, Any]) -> None:
        """Take one record into the view (also how a process learns from its own replies without a round trip)."""
        with self._changed:
            if record.get("kind") == "updater":
                self.accepted = max(self.accepted, int(record.get("accepted", 0)))
                self.published = max(self.published, int(record.get("published", 0)))
                self.updater_seen = time.monotonic()
            elif record.get("kind") == "serving":
                self.replicas[str(record["instance"])] = Replica(
                    str(record.get("role", "")),
                    int(record.get("version", 0)),
                    bool(record.get("follows", True)),
                    time.monotonic(),
                )
            self._changed.notify_all()

    def _read(self) -> None:
        while not self._stop.is_set():
            try:
                messages = self._consumer.poll(self._poll_timeout_s, max_records=256)
            except Exception as exc:  # the broker is away: heartbeats resume the view once it is back
                logger.warning("version feed: %s", str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
                self._stop.wait(0.5)
                continue
            for message in messages:
                try:
                    record = json.loads(message.value)
                    self.note(record)
                except (ValueError, KeyError, TypeError):
                    logger.warning("version feed: an unreadable record was skipped")
                    continue
                if self._on_record is not None:
                    self._on_record(record)

    # ------------------------------------------------------------------------------------------------ writing

    def announce(self) -> None:
        """Send this process's record now (its value changed)."""
        self._announce.set()

    def _heartbeat(self) -> None:
        assert self._report is not None
        while not self._stop.is_set():
            record = self._report()
            try:
                self._bus.publish(topics.VERSIONS, str(record.get("kind", "")), json.dumps(record).encode())
                self.note(record)  # a reader of its own records need not wait for the round trip
            except Exception as exc:  # the next heartbeat tries again
                logger.warning("version feed publish: %s", str(exc).splitlines()[0] if str(exc) else exc)
            self._announce.wait(HEARTBEAT_S)
            self._announce.clear()

    def close(self) -> None:
        self._stop.set()
        self._announce.set()
        for thread in self._threads:
            thread.join(timeout=5)
        self._consumer.close()


def _join_feed(bus: Bus) -> Consumer:
    """A member of a group of its own on skbqa.versions, reading from the log's end (`JOIN_ATTEMPTS` tries)."""
    for attempt in range(1, JOIN_ATTEMPTS + 1):
        try:
            return bus.consumer(
                [topics.VERSIONS], group=f"skbqa-versions-{uuid.uuid4().hex[:12]}", from_beginning=False
            )
        except BackendUnavailableError as exc:
            if attempt == JOIN_ATTEMPTS:
                raise
            logger.warning("versions feed: %s; joining again (%d of %d)", exc, attempt + 1, JOIN_ATTEMPTS)
    raise AssertionError("unreachable")
