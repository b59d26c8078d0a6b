"""The `Bus` port: keyed, partitioned topics with consumer groups (Kafka's model), and the message type.

Two adapters implement it: `MemoryBus` (embedded mode, unit tests) and `KafkaBus` (kafka-python). Both give the
same guarantees, so stage workers are written once:

- `publish` returns only when the message is durable (Kafka: acknowledged by all in-sync replicas).
- Messages with the same key (the request id) land in the same partition, so they stay in order.
- Every consumer group receives every message; inside a group each partition belongs to one member at a time.
- Delivery is at-least-once: a worker produces its outputs first and then commits its inputs. Messages that
  were delivered but not committed when their consumer went away (crash, close, rebalance) are delivered
  again to the group, so consumers must be idempotent by request id.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable


@dataclass(frozen=True)
class Message:
    topic: str
    key: str  # request id
    value: bytes  # serialized protobuf
    headers: dict[str, str]
    partition: int = 0
    offset: int = -1
    timestamp_ms: int = 0  # broker/produce timestamp (for queue-wait metrics)


@runtime_checkable
class Consumer(Protocol):
    """One member of a consumer group; used by one thread at a time."""

    def poll(self, timeout_s: float, max_records: int = 64) -> list[Message]:
        """Up to `max_records` messages, waiting at most `timeout_s` for the first one ([] on timeout)."""
        ...

    def assignment(self) -> set[tuple[str, int]]:
        """The (topic, partition) pairs this member owns now (empty until it has joined its group)."""
        ...

    def commit(self, messages: Sequence[Message]) -> None:
        """Mark `messages` done: per partition, everything up to the highest offset given.

        Call it AFTER the outputs derived from them are published (at-least-once). A commit never moves a
        partition backwards.
        """
        ...

    def close(self) -> None:
        """Leave the group; its uncommitted messages go to the other members. Idempotent."""
        ...


@runtime_checkable
class Bus(Protocol):
    def publish(self, topic: str, key: str, value: bytes, headers: Mapping[str, str] | None = None) -> None:
        """Durable on return (acks=all + wait on the future) — the worker commits its input only after this."""
        ...

    def consumer(self, topics: Sequence[str], group: str, *, from_beginning: bool = True) -> Consumer:
        """Join `group` on `topics`. `from_beginning` decides where a partition without a committed offset
        starts: its first message (True) or the messages published after the consumer joined (False)."""
        ...

    def ensure_topics(self, topics: Sequence[str], partitions: int = 4) -> None:
        """Create the topics that do not exist yet; existing topics are left as they are."""
        ...

    def lag(self, group: str, topics: Sequence[str]) -> dict[str, int]:
        """Messages not yet committed by `group`, per topic, summed over partitions (0 for a missing topic)."""
        ...

    def close(self) -> None: ...


def unreachable(bus: Bus) -> bool:
    """Whether the bus says its broker cannot be reached now (a bus without a `reachable` check never does)."""
    reachable = getattr(bus, "reachable", None)
    return reachable is not None and not reachable()


def next_offsets(messages: Sequence[Message]) -> dict[tuple[str, int], int]:
    """The offsets to commit for `messages`: per (topic, partition), the highest offset + 1 (Kafka's convention:
    a committed offset names the next message to read)."""
    result: dict[tuple[str, int], int] = {}
    for message in messages:
        if message.offset < 0:
            continue  # not read from a log (e.g. built by hand in a test): nothing to commit
        where = (message.topic, message.partition)
        result[where] = max(result.get(where, 0), message.offset + 1)
    return result
