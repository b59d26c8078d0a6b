"""The consumer side of `KafkaBus`: consumer-group members (`KafkaBusConsumer`) that workers poll and commit.

``enable_auto_commit=False``; `commit` sends, per partition, the highest offset given + 1, and never moves a
partition backwards. A commit refused because the group rebalanced is logged and dropped: the new owner reads
from the last committed offset (at-least-once), and stages are idempotent by request id. With
``from_beginning=False`` `consumer()` waits until the member has joined and its positions are resolved, so a
message published after `consumer()` returned is never skipped (Kafka resolves "latest" only at assignment).

Group timing: Tansu completes a join in about half of `session_timeout_ms`, so the bus defaults to
``session_timeout_ms=6000, heartbeat_interval_ms=1000`` (~3 s joins; a dead member's partitions move after at
most 6 s). A member that `close()`s leaves the group at once (LeaveGroup).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from typing import Any

from skbqa.bus import topics as topic_names
from skbqa.bus.base import Message, next_offsets
from skbqa.bus.kafka_base import KafkaClientBase, _kafka, _one_line
from skbqa.common.errors import BackendUnavailableError, InvalidInputError

logger = logging.getLogger(__name__)


class KafkaConsumerSide(KafkaClientBase):
    """`consumer`: a new group member per call, tracked so that closing the bus closes it."""

    _session_timeout_ms: int
    _heartbeat_interval_ms: int
    _join_timeout_s: float
    _fetch_max_wait_ms: int
    _max_poll_interval_ms: int
    _consumers: list[KafkaBusConsumer]

    def consumer(self, topics: Sequence[str], group: str, *, from_beginning: bool = True) -> KafkaBusConsumer:
        if isinstance(topics, str) or not topics:
            raise InvalidInputError("consumer() takes a non-empty sequence of topic names")
        kafka = _kafka()
        wire_topics = [self._wire(topic) for topic in dict.fromkeys(topics)]
        self._check_open()
        with self._errors(f"join group {group!r}"):
            client = kafka.KafkaConsumer(
                *wire_topics,
                bootstrap_servers=self._servers,
                **self._security,
                client_id=self.client_id,
                group_id=self.topic_prefix + group,
                enable_auto_commit=False,
                auto_offset_reset="earliest" if from_beginning else "latest",
                session_timeout_ms=self._session_timeout_ms,
                heartbeat_interval_ms=self._heartbeat_interval_ms,
                max_poll_interval_ms=self._max_poll_interval_ms,
                fetch_max_wait_ms=self._fetch_max_wait_ms,
                bootstrap_timeout_ms=self._connect_timeout_ms,
            )
        member = KafkaBusConsumer(self, client, group)
        if not from_beginning:
            member._join(self._join_timeout_s)
        with self._lock:
            self._consumers.append(member)
        return member

    def _forget(self, member: KafkaBusConsumer) -> None:
        with self._lock:
            if member in self._consumers:
                self._consumers.remove(member)


class KafkaBusConsumer:
    """A consumer-group member on Kafka (create it with `KafkaBus.consumer`); one thread at a time."""

    def __init__(self, bus: KafkaConsumerSide, client: Any, group: str) -> None:
        self.group = group
        self._bus = bus
        self._client = client
        self._buffered: list[Message] = []  # read while joining (from_beginning=False), handed out first
        self._committed: dict[tuple[str, int], int] = {}
        self._closed = False

    def poll(self, timeout_s: float, max_records: int = 64) -> list[Message]:
        if max_records < 1:
            raise InvalidInputError(f"max_records must be >= 1, not {max_records}")
        self._check_open()
        if self._buffered:
            batch, self._buffered = self._buffered[:max_records], self._buffered[max_records:]
            return batch
        with self._bus._errors(f"poll for group {self.group!r}"):
            records = self._client.poll(timeout_ms=max(0, int(timeout_s * 1000)), max_records=max_records)
        messages = self._messages(records)
        for message in messages:
            # The group's committed offset only grows, so reading below our own last commit means the log was
            # reset (a memory:// broker restarted): forget that commit, or later commits would be skipped.
            where = (message.topic, message.partition)
            if message.offset < self._committed.get(where, -1):
                del self._committed[where]
        return messages

    def commit(self, messages: Sequence[Message]) -> None:
        self._check_open()
        kafka = _kafka()
        offsets = {}
        for (topic, partition), offset in next_offsets(messages).items():
            if offset > self._committed.get((topic, partition), -1):
                wire = kafka.TopicPartition(self._bus._wire(topic), partition)
                offsets[wire] = kafka.OffsetAndMetadata(offset, "", -1)
        if not offsets:
            return
        rebalanced = (
            kafka.errors.CommitFailedError,
            kafka.errors.RebalanceInProgressError,
            kafka.errors.IllegalGenerationError,
            kafka.errors.UnknownMemberIdError,
        )
        with self._bus._errors(f"commit for group {self.group!r}"):
            try:
                self._client.commit(offsets, timeout_ms=int(self._bus._publish_timeout_s * 1000))
            except rebalanced as exc:
                # The partitions moved to another member, which re-reads from the last commit: at-least-once.
                logger.warning("commit for group %r dropped after a rebalance: %s", self.group, _one_line(exc))
                return
        for tp, meta in offsets.items():
            key = (topic_names.without_prefix(tp.topic, self._bus.topic_prefix), tp.partition)
            self._committed[key] = meta.offset

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._bus._forget(self)
        try:
            self._client.close(autocommit=False, timeout_ms=int(self._bus._publish_timeout_s * 1000))
        except Exception as exc:  # the member is gone either way; the group evicts it after the session timeout
            logger.warning("closing a consumer of group %r failed: %s", self.group, _one_line(exc))

    def commit_positions(self) -> None:
        """Commit the current position of every assigned partition (not part of the `Consumer` port).

        A member that joined at the log end (`from_beginning=False`) calls this once joined: a later rejoin
        (after a broker restart, a rebalance) then resumes where it was instead of at a newer log end, which
        would skip whatever was published while it was away."""
        self._check_open()
        with self._bus._errors(f"commit positions for group {self.group!r}"):
            self._client.commit()

    def assignment(self) -> set[tuple[str, int]]:
        """The (topic, partition) pairs this member owns now (not part of the `Consumer` port)."""
        prefix = self._bus.topic_prefix
        return {(topic_names.without_prefix(tp.topic, prefix), tp.partition) for tp in self._client.assignment()}

    def _check_open(self) -> None:
        if self._closed:
            raise BackendUnavailableError(f"consumer of group {self.group!r} is closed")

    def _messages(self, records: Mapping[Any, Sequence[Any]]) -> list[Message]:
        prefix = self._bus.topic_prefix
        result = []
        for tp, batch in records.items():
            topic = topic_names.without_prefix(tp.topic, prefix)
            for record in batch:
                result.append(
                    Message(
                        topic=topic,
                        key=record.key.decode("utf-8") if record.key is not None else "",
                        value=record.value if record.value is not None else b"",
                        headers={name: raw.decode("utf-8", "replace") for name, raw in record.headers or []},
                        partition=record.partition,
                        offset=record.offset,
                        timestamp_ms=max(0, record.timestamp or 0),
                    )
                )
        return result

    def _join(self, timeout_s: float) -> None:
        """Poll until the member is STABLE in its group and every assigned position is resolved."""
        stable = _kafka().structs.MemberState.STABLE
        deadline = time.monotonic() + timeout_s
        with self._bus._errors(f"join group {self.group!r}"):
            while time.monotonic() < deadline:
                self._buffered.extend(self._messages(self._client.poll(timeout_ms=100)))
                if self._client.group_metadata().state == stable:
                    for tp in self._client.assignment():
                        self._client.position(tp, timeout_ms=max(1, int((deadline - time.monotonic()) * 1000)))
                    return
        self.close()
        raise BackendUnavailableError(
            f"Kafka at {self._bus.bootstrap}: group {self.group!r} not joined within {timeout_s:.0f} s",
            bootstrap=self._bus.bootstrap,
        )
