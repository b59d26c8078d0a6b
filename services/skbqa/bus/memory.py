"""`MemoryBus`: the `Bus` port in process memory, with Kafka's semantics (embedded mode and unit tests).

Model, as in Kafka:
- a topic is a fixed number of partitions (4 unless `ensure_topics` said otherwise; publishing to or consuming
  from an unknown topic creates it, like Kafka's auto-create); a message goes to partition
  ``crc32(key) % partitions`` (stable across processes; not the same partitioner as Kafka's murmur2, and it
  does not need to be: only "same key → same partition" matters);
- every partition is an append-only log with offsets 0, 1, 2, ...; it keeps at most `retention` messages
  (oldest dropped first, like Kafka's retention), a consumer positioned before the start resumes at the start;
- each group keeps one committed offset per partition; the partitions of each topic are spread over the
  group's members subscribed to it (round-robin over members sorted by join order), recomputed whenever a
  member joins or leaves;
- a member that gains a partition starts at the group's committed offset, or, if the group never committed
  there, at the log start (`from_beginning=True`) or the log end (False); a member keeps its position on the
  partitions it retains, so a rebalance only redelivers what moved;
- `close` leaves the group: the partitions go to the remaining members, which read from the committed offset,
  so messages delivered to the closed member but not committed are delivered again (at-least-once);
- a commit only moves a partition forward, and is accepted from any member (Kafka rejects commits of a member
  that lost the partition; accepting them here only avoids some duplicates and cannot lose a message, since
  a commit follows the processing).

Thread safety: one lock guards all state; `poll` waits on a condition that `publish`, rebalances and `close`
signal. Each consumer is meant for one thread, as with Kafka.
"""

from __future__ import annotations

import itertools
import threading
import time
import zlib
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from skbqa.bus.base import Message, next_offsets
from skbqa.common.errors import BackendUnavailableError, InvalidInputError

DEFAULT_PARTITIONS = 4
DEFAULT_RETENTION = 10_000  # messages per partition

TopicPartition = tuple[str, int]


def partition_for(key: str, partitions: int) -> int:
    return zlib.crc32(key.encode("utf-8")) % partitions


@dataclass
class _Log:
    """One partition: `messages[i]` has offset `start + i`."""

    messages: deque[Message] = field(default_factory=deque)
    start: int = 0

    @property
    def end(self) -> int:
        return self.start + len(self.messages)

    def read(self, offset: int, limit: int) -> list[Message]:
        first = max(offset, self.start) - self.start
        return list(itertools.islice(self.messages, first, first + limit))


@dataclass
class _Group:
    committed: dict[TopicPartition, int] = field(default_factory=dict)
    members: list[MemoryConsumer] = field(default_factory=list)  # in join order


class MemoryBus:
    def __init__(
        self, *, default_partitions: int = DEFAULT_PARTITIONS, retention: int = DEFAULT_RETENTION
    ) -> None:
        if default_partitions < 1 or retention < 1:
            raise InvalidInputError("default_partitions and retention must be >= 1")
        self._default_partitions = default_partitions
        self._retention = retention
        self._logs: dict[str, list[_Log]] = {}
        self._groups: dict[str, _Group] = {}
        self._changed = threading.Condition(threading.Lock())
        self._closed = False

    # -- Bus -----------------------------------------------------------------------------------------------

    def publish(self, topic: str, key: str, value: bytes, headers: Mapping[str, str] | None = None) -> None:
        if not isinstance(value, bytes | bytearray | memoryview):
            raise InvalidInputError(f"message value must be bytes, not {type(value).__name__}")
        with self._changed:
            self._check_open()
            logs = self._topic(topic)
            partition = partition_for(key, len(logs))
            log = logs[partition]
            log.messages.append(
                Message(
                    topic=topic,
                    key=key,
                    value=bytes(value),
                    headers=dict(headers or {}),
                    partition=partition,
                    offset=log.end,
                    timestamp_ms=time.time_ns() // 1_000_000,
                )
            )
            if len(log.messages) > self._retention:
                log.messages.popleft()
                log.start += 1
            self._changed.notify_all()

    def consumer(self, topics: Sequence[str], group: str, *, from_beginning: bool = True) -> MemoryConsumer:
        if isinstance(topics, str) or not topics:
            raise InvalidInputError("consumer() takes a non-empty sequence of topic names")
        with self._changed:
            self._check_open()
            for topic in topics:
                self._topic(topic)
            member = MemoryConsumer(self, tuple(dict.fromkeys(topics)), group, from_beginning)
            self._groups.setdefault(group, _Group()).members.append(member)
            self._rebalance(group)
            return member

    def ensure_topics(self, topics: Sequence[str], partitions: int = DEFAULT_PARTITIONS) -> None:
        if partitions < 1:
            raise InvalidInputError(f"partitions must be >= 1, not {partitions}")
        with self._changed:
            self._check_open()
            for topic in topics:
                self._topic(topic, partitions)

    def lag(self, group: str, topics: Sequence[str]) -> dict[str, int]:
        with self._changed:
            committed = self._groups[group].committed if group in self._groups else {}
            result: dict[str, int] = {}
            for topic in topics:
                logs = self._logs.get(topic, [])
                result[topic] = sum(
                    log.end - max(committed.get((topic, p), log.start), log.start) for p, log in enumerate(logs)
                )
            return result

    def reachable(self, timeout_s: float = 1.0) -> bool:
        return not self._closed

    def close(self) -> None:
        with self._changed:
            if self._closed:
                return
            self._closed = True
            for group in self._groups.values():
                for member in group.members:
                    member._closed = True
                group.members.clear()
            self._changed.notify_all()

    # -- introspection (tests, embedded diagnostics) ---------------------------------------------------------

    def partitions(self, topic: str) -> int:
        with self._changed:
            return len(self._logs.get(topic, []))

    def end_offsets(self, topic: str) -> list[int]:
        with self._changed:
            return [log.end for log in self._logs.get(topic, [])]

    # -- internals (called with the lock held) --------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise BackendUnavailableError("the in-memory bus is closed")

    def _topic(self, topic: str, partitions: int | None = None) -> list[_Log]:
        if not topic:
            raise InvalidInputError("empty topic name")
        logs = self._logs.get(topic)
        if logs is None:
            logs = [_Log() for _ in range(partitions or self._default_partitions)]
            self._logs[topic] = logs
        return logs

    def _rebalance(self, group_name: str) -> None:
        group = self._groups[group_name]
        wanted: dict[int, set[TopicPartition]] = {id(member): set() for member in group.members}
        for topic in {t for member in group.members for t in member.topics}:
            subscribers = [member for member in group.members if topic in member.topics]
            for partition in range(len(self._logs[topic])):
                wanted[id(subscribers[partition % len(subscribers)])].add((topic, partition))
        for member in group.members:
            member._assign(wanted[id(member)], group.committed, self._logs)
        self._changed.notify_all()

    def _leave(self, member: MemoryConsumer) -> None:
        with self._changed:
            if member._closed:
                return
            member._closed = True
            group = self._groups.get(member.group)
            if group is not None and member in group.members:
                group.members.remove(member)
                self._rebalance(member.group)
            self._changed.notify_all()

    def _commit(self, member: MemoryConsumer, messages: Sequence[Message]) -> None:
        with self._changed:
            if self._closed:
                raise BackendUnavailableError("the in-memory bus is closed")
            committed = self._groups.setdefault(member.group, _Group()).committed
            for where, offset in next_offsets(messages).items():
                if offset > committed.get(where, -1):
                    committed[where] = offset

    def _poll(self, member: MemoryConsumer, timeout_s: float, max_records: int) -> list[Message]:
        deadline = time.monotonic() + max(timeout_s, 0.0)
        with self._changed:
            while True:
                if member._closed:
                    raise BackendUnavailableError(f"consumer of group {member.group!r} is closed")
                batch = member._take(self._logs, max_records)
                remaining = deadline - time.monotonic()
                if batch or remaining <= 0:
                    return batch
                self._changed.wait(remaining)


class MemoryConsumer:
    """A member of a `MemoryBus` consumer group (create it with `MemoryBus.consumer`)."""

    def __init__(self, bus: MemoryBus, topics: tuple[str, ...], group: str, from_beginning: bool) -> None:
        self.topics = topics
        self.group = group
        self.from_beginning = from_beginning
        self._bus = bus
        self._positions: dict[TopicPartition, int] = {}  # the assigned partitions and the next offset to read
        self._next_start = 0  # rotates the partition read first, so a busy partition cannot starve the others
        self._closed = False

    def poll(self, timeout_s: float, max_records: int = 64) -> list[Message]:
        if max_records < 1:
            raise InvalidInputError(f"max_records must be >= 1, not {max_records}")
        return self._bus._poll(self, timeout_s, max_records)

    def commit(self, messages: Sequence[Message]) -> None:
        self._bus._commit(self, messages)

    def close(self) -> None:
        self._bus._leave(self)

    def assignment(self) -> set[TopicPartition]:
        """The (topic, partition) pairs this member owns now (not part of the `Consumer` port)."""
        with self._bus._changed:
            return set(self._positions)

    # -- called by MemoryBus with its lock held -------------------------------------------------------------

    def _assign(
        self, partitions: set[TopicPartition], committed: dict[TopicPartition, int], logs: dict[str, list[_Log]]
    ) -> None:
        kept = {where: offset for where, offset in self._positions.items() if where in partitions}
        for topic, partition in partitions - kept.keys():
            log = logs[topic][partition]
            default = log.start if self.from_beginning else log.end
            kept[(topic, partition)] = committed.get((topic, partition), default)
        self._positions = kept

    def _take(self, logs: dict[str, list[_Log]], max_records: int) -> list[Message]:
        order = sorted(self._positions)
        if not order:
            return []
        start = self._next_start % len(order)
        self._next_start += 1
        batch: list[Message] = []
        for where in order[start:] + order[:start]:
            topic, partition = where
            messages = logs[topic][partition].read(self._positions[where], max_records - len(batch))
            if messages:
                batch.extend(messages)
                self._positions[where] = messages[-1].offset + 1
            if len(batch) >= max_records:
                break
        return batch
