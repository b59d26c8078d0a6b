"""The admin side of `KafkaBus`: topic creation and consumer-group lag, over one admin client.

`lag` compares each partition's end offset with the group's committed offset (the log start when the group
never committed). Tansu 0.6 misreports the end offset (ListOffsets "latest"): on memory storage it returns the
base offset of the partition's last record batch + 1, so a final batch of n records hides n - 1 of them, and on
s3 storage it can lag the log by several batches. A Fetch response's high watermark is right on both, so `lag`
fetches once per partition (no group) from the reported end - 1 and takes the larger of the two; on a broker
that reports correctly this reads one record and changes nothing.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import Any, TypeVar

from skbqa.bus.kafka_base import KafkaClientBase, _kafka
from skbqa.common.errors import BackendUnavailableError

T = TypeVar("T")

logger = logging.getLogger(__name__)

_PROBE_TIMEOUT_S = 3.0  # bound on the end-offset correction fetch in `lag`


class KafkaAdminSide(KafkaClientBase):
    """`ensure_topics` and `lag`, over an admin client connected on first use and held exclusively."""

    _replication_factor: int
    _admin_lock: threading.Lock  # also serialises admin requests (one connection, one caller)
    _probe_lock: threading.Lock
    _admin: Any
    _probe: Any  # a group-less consumer for the end-offset correction in `lag`

    def ensure_topics(self, topics: Sequence[str], partitions: int = 4) -> None:
        wire_topics = [self._wire(topic) for topic in dict.fromkeys(topics)]
        spec = {"num_partitions": partitions, "replication_factor": self._replication_factor}

        self._admin_retrying("create topics", lambda admin: self._create_missing(admin, wire_topics, spec))

    def _create_missing(self, admin: Any, wire_topics: list[str], spec: dict[str, Any]) -> None:
        kafka = _kafka()
        existing = set(admin.list_topics())
        for wire_topic in wire_topics:
            if wire_topic in existing:
                continue
            # Already exists = created concurrently by another process: that is the goal anyway.
            with suppress(kafka.errors.TopicAlreadyExistsError):
                admin.create_topics({wire_topic: spec}, wait_for_metadata=True)

    def provision_topics(
        self, topics: Sequence[str], partitions: int, *, configs: dict[str, str] | None = None
    ) -> dict[str, int]:
        """What a deployment's topic Job does: create the missing topics with `partitions`, this bus's replication
        factor and `configs` (e.g. min.insync.replicas), grow existing ones that have fewer partitions, and
        return each topic's partition count. A topic never shrinks (Kafka cannot); a broker that cannot add
        partitions is a BackendUnavailableError naming the topic."""
        kafka = _kafka()
        wire_topics = [self._wire(topic) for topic in dict.fromkeys(topics)]
        spec: dict[str, Any] = {"num_partitions": partitions, "replication_factor": self._replication_factor}
        if configs:
            spec["configs"] = dict(configs)

        def provision(admin: Any) -> dict[str, int]:
            self._create_missing(admin, wire_topics, spec)
            counts = self._partition_counts(admin, wire_topics)
            short = {topic: partitions for topic, count in counts.items() if count < partitions}
            if short:
                try:
                    admin.create_partitions(
                        {t: kafka.admin.NewPartitions(total_count=n) for t, n in short.items()}
                    )
                except kafka.errors.IncompatibleBrokerVersion:
                    names = ", ".join(f"{t} ({counts[t]})" for t in sorted(short))
                    raise BackendUnavailableError(
                        f"topics {names} have fewer than {partitions} partitions and the broker cannot add "
                        "partitions (no CreatePartitions): recreate them, or lower the partition count"
                    ) from None
                counts = self._partition_counts(admin, wire_topics)
            return counts

        counts = self._admin_retrying("provision topics", provision)
        return {topic[len(self.topic_prefix) :]: count for topic, count in counts.items()}

    def _partition_counts(self, admin: Any, wire_topics: list[str]) -> dict[str, int]:
        counts = dict.fromkeys(wire_topics, 0)
        for partition in self._partitions(admin, wire_topics):
            counts[partition.topic] += 1
        return counts

    def lag(self, group: str, topics: Sequence[str]) -> dict[str, int]:
        kafka = _kafka()
        wire = {self._wire(topic): topic for topic in dict.fromkeys(topics)}
        result = dict.fromkeys(wire.values(), 0)
        wire_group = self.topic_prefix + group

        def offsets(admin: Any) -> tuple[list[Any], dict[Any, Any], dict[Any, Any], dict[Any, Any]]:
            partitions = self._partitions(admin, list(wire))
            if not partitions:
                return partitions, {}, {}, {}
            # Committed offsets first: a commit racing with this call can only make the lag look larger.
            committed = admin.list_group_offsets({wire_group: partitions}).get(wire_group, {})
            starts = admin.list_partition_offsets(dict.fromkeys(partitions, kafka.admin.OffsetSpec.EARLIEST))
            ends = admin.list_partition_offsets(dict.fromkeys(partitions, kafka.admin.OffsetSpec.LATEST))
            return partitions, committed, starts, ends

        partitions, committed, starts, ends = self._admin_retrying(f"lag of group {group!r}", offsets)
        if not partitions:
            return result
        with self._errors(f"lag of group {group!r}"):
            true_ends = self._true_end_offsets({tp: found.offset for tp, found in ends.items()})
        for tp in partitions:
            done = committed[tp].offset if tp in committed and committed[tp].offset >= 0 else -1
            if done < 0:  # never committed: the whole retained log is pending
                done = starts[tp].offset if tp in starts else 0
            result[wire[tp.topic]] += max(0, true_ends.get(tp, 0) - done)
        return result

    @contextmanager
    def _admin_session(self, action: str) -> Iterator[Any]:
        """The admin client, connected on first use, held exclusively (one connection, one request at a time)."""
        self._check_open()
        with self._admin_lock, self._errors(action):
            if self._admin is None:
                self._admin = _kafka().KafkaAdminClient(
                    bootstrap_servers=self._servers,
                    **self._security,
                    client_id=self.client_id,
                    request_timeout_ms=max(self._connect_timeout_ms, 1000),
                    bootstrap_timeout_ms=self._connect_timeout_ms,
                )
            yield self._admin

    def _admin_retrying(self, action: str, body: Callable[[Any], T]) -> T:
        """`body(admin)`, retried on retriable client errors until the connect timeout has passed: right after
        a broker restart the admin's connection is in reconnect back-off and the first requests fail with
        NodeNotReady although the broker is back. Anything else, or the deadline, ends as one
        `BackendUnavailableError`."""
        kafka = _kafka()
        deadline = time.monotonic() + self._connect_timeout_ms / 1000
        pause = 0.05
        while True:
            try:
                with self._admin_session(action) as admin:
                    return body(admin)
            except BackendUnavailableError as exc:
                cause = exc.__cause__
                retriable = isinstance(cause, kafka.errors.KafkaError) and getattr(cause, "retriable", False)
                if not retriable or time.monotonic() + pause > deadline:
                    raise
            time.sleep(pause)
            pause = min(pause * 2, 0.5)

    def _partitions(self, admin: Any, wire_topics: list[str]) -> list[Any]:
        kafka = _kafka()
        result = []
        for described in admin.describe_topics(wire_topics):
            # error 3 = unknown topic: it has no backlog, so it simply contributes nothing
            for partition in described.get("partitions") or []:
                result.append(kafka.TopicPartition(described["name"], partition["partition_index"]))
        return result

    def _true_end_offsets(self, reported: dict[Any, int]) -> dict[Any, int]:
        """Correct Tansu's end offsets (see the module doc) with one fetch per partition from the reported end - 1:
        the fetch response's high watermark, or the last record's offset + 1 when a broker leaves it unset."""
        ends = dict(reported)
        if not reported:
            return ends
        with self._probe_lock:
            probe = self._probe_client()
            probe.unsubscribe()  # a fresh assignment forgets the previous call's high watermarks
            probe.assign(list(reported))
            for tp, end in reported.items():
                probe.seek(tp, max(0, end - 1))
            pending = set(reported)
            deadline = time.monotonic() + _PROBE_TIMEOUT_S
            while pending and time.monotonic() < deadline:
                fetched = probe.poll(timeout_ms=200)
                for tp in list(pending):
                    records = fetched.get(tp) or []
                    if records:
                        ends[tp] = max(ends[tp], records[-1].offset + 1)
                    highwater = probe.highwater(tp)
                    if highwater is not None:
                        ends[tp] = max(ends[tp], highwater)
                        pending.discard(tp)
                    elif records:
                        pending.discard(tp)
            if pending:
                logger.warning(
                    "lag: could not read the end of %d partitions; end offsets may be low", len(pending)
                )
        return ends

    def _probe_client(self) -> Any:
        if self._probe is None:
            self._probe = _kafka().KafkaConsumer(
                bootstrap_servers=self._servers,
                **self._security,
                client_id=f"{self.client_id}-lag",
                group_id=None,
                enable_auto_commit=False,
                fetch_max_wait_ms=50,
                max_poll_records=1_000_000,
                bootstrap_timeout_ms=self._connect_timeout_ms,
            )
        return self._probe
