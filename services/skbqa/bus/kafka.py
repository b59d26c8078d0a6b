"""`KafkaBus`: the `Bus` port on Kafka (or any Kafka-protocol broker, e.g. Tansu) through kafka-python.

kafka-python is optional (``pip install skbqa[kafka]``): it is imported when a `KafkaBus` is built, never at
module import. Constructing a bus does no I/O; the producer and the admin client connect on first use, and
every consumer connects when it is created.

Producer: one per bus, shared by all threads (kafka-python's producer is thread-safe). ``acks="all"``, a small
linger so that concurrent publishers share batches, and `publish` waits on the record's future, so a message is
durable when `publish` returns. The producer is *not* idempotent (``enable_idempotence=False``, against
kafka-python's default): Tansu 0.6 on s3 storage answers concurrent idempotent producers with
OutOfOrderSequenceNumber and then fails InitProducerId, leaving the producer unusable. So a producer retry (or
`publish`'s own second attempt) can write a record twice; that is harmless because every consumer is idempotent by
request id (stage workers skip a request they already published, the gateway keeps a call's first final answer). The key is the request id; the default partitioner hashes it (murmur2), so one request's
messages stay in one partition, in order.

Consumers: ``enable_auto_commit=False``; `commit` sends, per partition, the highest offset given + 1, and never
moves a partition backwards. A commit refused because the group rebalanced (the partition moved to another
member) is logged and dropped: the new owner reads from the last committed offset, i.e. at-least-once, and
stages are idempotent by request id. ``auto_offset_reset`` is earliest/latest from `from_beginning`. With
``from_beginning=False`` `consumer()` waits until the member has joined the group and its positions are
resolved, so a message published after `consumer()` returned is never skipped (Kafka resolves "latest" only
at assignment time, which is otherwise inside the first `poll`).

Group timing: Tansu completes a join in about half of `session_timeout_ms` (STACK.md), so the defaults are
``session_timeout_ms=6000, heartbeat_interval_ms=1000`` (~3 s joins, and a dead member's partitions move after
at most 6 s); tests use 2000/500. A member that `close()`s leaves the group at once (LeaveGroup), so its
partitions move after one join round.

`lag` compares each partition's end offset with the group's committed offset (the log start when the group
never committed). Tansu 0.6 misreports the end offset (ListOffsets "latest", both on memory:// and s3://
storage): it returns the base offset of the partition's last record batch + 1, so a final batch of n records
hides n - 1 of them. `lag` therefore reads the last batch (one fetch from that offset, no group) and takes
the last record's offset + 1; on a broker that reports correctly this reads one record and changes nothing.

Every broker failure (unreachable, timeout, protocol error) surfaces as `BackendUnavailableError` with a
one-line message; `poll` does not raise while the broker is merely down (kafka-python keeps reconnecting and
returns no records). Topic and group names get the `topic_prefix` (default: env ``SKBQA_TOPIC_PREFIX``) on the
wire; returned messages carry the unprefixed topic.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from typing import Any, TypeVar
from urllib.parse import parse_qsl, urlsplit

from skbqa.bus import topics as topic_names
from skbqa.bus.base import Bus, Message, next_offsets
from skbqa.bus.kafka_security import security_options
from skbqa.bus.memory import MemoryBus
from skbqa.common.errors import BackendUnavailableError, InvalidInputError

T = TypeVar("T")

logger = logging.getLogger(__name__)

_MESSAGE_LIMIT = 200  # characters of a client error kept in our one-line message
# how long the broker holds an empty fetch; on tansu also a hop's latency floor (docs/kafka.md)
DEFAULT_FETCH_MAX_WAIT_MS = 20
_PROBE_TIMEOUT_S = 3.0  # bound on the end-offset correction fetch in `lag`


def _kafka() -> Any:
    try:
        import kafka
    except ImportError:
        raise BackendUnavailableError(
            "the Kafka bus needs kafka-python: pip install 'skbqa[kafka]' (kafka-python==3.0.12)"
        ) from None
    return kafka


def _one_line(exc: BaseException) -> str:
    """The first line of a client error, shortened, with its class name once (kafka-python often repeats it)."""
    name = type(exc).__name__
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    if len(text) > _MESSAGE_LIMIT:
        text = text[: _MESSAGE_LIMIT - 3] + "..."
    if not text:
        return name
    return text if name in text else f"{name}: {text}"


class KafkaBus:
    def __init__(
        self,
        bootstrap: str,
        *,
        client_id: str = "skbqa",
        session_timeout_ms: int = 6000,
        heartbeat_interval_ms: int = 1000,
        topic_prefix: str | None = None,
        replication_factor: int = 1,
        connect_timeout_s: float = 10.0,
        publish_timeout_s: float = 10.0,
        join_timeout_s: float | None = None,
        linger_ms: int = 1,
        fetch_max_wait_ms: int = DEFAULT_FETCH_MAX_WAIT_MS,
        max_poll_interval_ms: int = 300_000,
        security: Mapping[str, Any] | None = None,
    ) -> None:
        """`bootstrap`: "host:port[,host:port...]". `connect_timeout_s` bounds every first contact with the
        broker, `publish_timeout_s` a publish (and a commit), `join_timeout_s` (default 5 × session timeout)
        the group join that `consumer(..., from_beginning=False)` waits for. `fetch_max_wait_ms` is how long
        the broker holds an empty fetch. Tansu 0.6 does not answer a held fetch when a record arrives, so this
        is also a hop's latency floor: measured publish→received p50 23 ms at 100, 5.3 ms at 20, 4.6 ms at 10,
        at an idle cost of ~2 % of a core per consumer at 20 (docs/kafka.md). `security`: kafka-python's TLS/SASL
        options for every client; by default read from SKBQA_KAFKA_* variables (bus/kafka_security.py)."""
        servers = [server.strip() for server in bootstrap.split(",") if server.strip()]
        if not servers:
            raise InvalidInputError("KafkaBus needs a bootstrap address such as 127.0.0.1:9092")
        if heartbeat_interval_ms * 3 > session_timeout_ms:
            raise InvalidInputError("heartbeat_interval_ms must be at most a third of session_timeout_ms")
        self.bootstrap = ",".join(servers)
        self.topic_prefix = topic_names.prefix_from_env() if topic_prefix is None else topic_prefix
        topic_names.check_prefix(self.topic_prefix)
        self.client_id = client_id
        self._servers = servers
        self._session_timeout_ms = session_timeout_ms
        self._heartbeat_interval_ms = heartbeat_interval_ms
        self._replication_factor = replication_factor
        self._connect_timeout_ms = int(connect_timeout_s * 1000)
        self._publish_timeout_s = publish_timeout_s
        self._join_timeout_s = join_timeout_s if join_timeout_s is not None else 5 * session_timeout_ms / 1000
        self._linger_ms = linger_ms
        self._fetch_max_wait_ms = fetch_max_wait_ms
        self._max_poll_interval_ms = max_poll_interval_ms
        self._security = dict(security_options() if security is None else security)
        # One lock per lazily built client, so a slow connect or a `lag` probe never blocks a publish.
        self._lock = threading.Lock()  # _closed and _consumers
        self._producer_lock = threading.Lock()
        self._admin_lock = threading.Lock()  # also serialises admin requests (one connection, one caller)
        self._probe_lock = threading.Lock()
        self._producer: Any = None
        self._admin: Any = None
        self._probe: Any = None  # a group-less consumer for the end-offset correction in `lag`
        self._consumers: list[KafkaBusConsumer] = []
        self._closed = False

    # -- Bus -----------------------------------------------------------------------------------------------

    def publish(self, topic: str, key: str, value: bytes, headers: Mapping[str, str] | None = None) -> None:
        if not isinstance(value, bytes | bytearray | memoryview):
            raise InvalidInputError(f"message value must be bytes, not {type(value).__name__}")
        wire_topic = self._wire(topic)
        record_headers = [(name, text.encode("utf-8")) for name, text in (headers or {}).items()]
        errors = _kafka().errors
        # Whatever broke the producer (a broker restart mid-request, a stale connection; and, should idempotence
        # ever be turned back on, a broker that lost its producer state answering UnknownProducerId or an
        # endless sequence reset), a failed publish replaces the producer and tries once more (a broker that is
        # really down fails the second attempt within its own timeouts). A duplicate from the retry is harmless:
        # consumers are idempotent by request id.
        retryable = (errors.UnknownProducerIdError, errors.OutOfOrderSequenceNumberError, errors.KafkaTimeoutError)
        for attempt in (1, 2):
            producer = self._get_producer()
            try:
                with self._errors(f"publish to {wire_topic}"):
                    future = producer.send(
                        wire_topic, value=bytes(value), key=key.encode("utf-8"), headers=record_headers
                    )
                    # Waiting on this record's own future (not flush()) keeps other threads' publishes independent.
                    future.get(timeout=self._publish_timeout_s + 1)
                return
            except BackendUnavailableError as exc:
                self._drop_producer(producer)  # whatever failed, the next publish starts from a clean producer
                if attempt == 2 or not isinstance(exc.__cause__, retryable):
                    raise

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

    def ensure_topics(self, topics: Sequence[str], partitions: int = 4) -> None:
        kafka = _kafka()
        wire_topics = [self._wire(topic) for topic in dict.fromkeys(topics)]
        spec = {"num_partitions": partitions, "replication_factor": self._replication_factor}

        def create(admin: Any) -> None:
            existing = set(admin.list_topics())
            for wire_topic in wire_topics:
                if wire_topic in existing:
                    continue
                # Already exists = created concurrently by another process: that is the goal anyway.
                with suppress(kafka.errors.TopicAlreadyExistsError):
                    admin.create_topics({wire_topic: spec}, wait_for_metadata=True)

        self._admin_retrying("create topics", create)

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

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            consumers, self._consumers = self._consumers, []
        for member in consumers:
            member.close()
        with self._producer_lock:
            producer, self._producer = self._producer, None
        if producer is not None:
            _quietly(lambda: producer.close(timeout=self._publish_timeout_s))
        with self._admin_lock:
            admin, self._admin = self._admin, None
        if admin is not None:
            _quietly(admin.close)
        with self._probe_lock:
            probe, self._probe = self._probe, None
        if probe is not None:
            _quietly(probe.close)

    # -- internals --------------------------------------------------------------------------------------------

    def _wire(self, topic: str) -> str:
        return topic_names.with_prefix(topic, self.topic_prefix)

    def _check_open(self) -> None:
        if self._closed:
            raise BackendUnavailableError("the Kafka bus is closed")

    @contextmanager
    def _errors(self, action: str) -> Iterator[None]:
        """Turn every client failure into one `BackendUnavailableError` naming the broker and the action."""
        kafka = _kafka()
        try:
            yield
        except BackendUnavailableError:
            raise
        except (kafka.errors.KafkaError, OSError) as exc:
            raise BackendUnavailableError(
                f"Kafka at {self.bootstrap}: {action} failed ({_one_line(exc)})", bootstrap=self.bootstrap
            ) from exc

    def _get_producer(self) -> Any:
        self._check_open()
        with self._producer_lock:
            if self._producer is None:
                publish_ms = int(self._publish_timeout_s * 1000)
                with self._errors("connect producer"):
                    self._producer = _kafka().KafkaProducer(
                        bootstrap_servers=self._servers,
                        **self._security,
                        client_id=self.client_id,
                        acks="all",
                        # Off: tansu (0.6) answers concurrent idempotent producers on s3 storage with
                        # OutOfOrderSequenceNumber and then fails InitProducerId, leaving the producer unusable.
                        # skbqa does not need it: a duplicate from a producer retry is dropped by request id.
                        enable_idempotence=False,
                        linger_ms=self._linger_ms,
                        max_block_ms=publish_ms,
                        request_timeout_ms=publish_ms,
                        # kafka-python requires delivery >= linger + request timeout
                        delivery_timeout_ms=publish_ms + self._linger_ms,
                        bootstrap_timeout_ms=self._connect_timeout_ms,
                    )
            return self._producer

    def _forget(self, member: KafkaBusConsumer) -> None:
        with self._lock:
            if member in self._consumers:
                self._consumers.remove(member)

    def _drop_producer(self, producer: Any) -> None:
        with self._producer_lock:
            if self._producer is producer:
                self._producer = None
        _quietly(lambda: producer.close(timeout=0))

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
        """Correct Tansu's end offsets (see the module doc): read from the reported end - 1, which is the last
        batch's base offset on Tansu and the last record on a correct broker, and take the last offset + 1."""
        probe_at = {tp: end - 1 for tp, end in reported.items() if end > 0}
        if not probe_at:
            return reported
        ends = dict(reported)
        with self._probe_lock:
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
            probe = self._probe
            probe.assign(list(probe_at))
            for tp, offset in probe_at.items():
                probe.seek(tp, offset)
            pending = set(probe_at)
            deadline = time.monotonic() + _PROBE_TIMEOUT_S
            while pending and time.monotonic() < deadline:
                for tp, records in probe.poll(timeout_ms=200).items():
                    if records:
                        ends[tp] = max(ends[tp], records[-1].offset + 1)
                        pending.discard(tp)
            if pending:
                logger.warning(
                    "lag: could not read the last batch of %d partitions; end offsets may be low", len(pending)
                )
        return ends


class KafkaBusConsumer:
    """A consumer-group member on Kafka (create it with `KafkaBus.consumer`); one thread at a time."""

    def __init__(self, bus: KafkaBus, client: Any, group: str) -> None:
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


def _quietly(close: Any) -> None:
    try:
        close()
    except Exception as exc:  # closing must not mask the caller's own error path
        logger.warning("closing a Kafka client failed: %s", _one_line(exc))


def bus_from_url(url: str) -> Bus:
    """ "memory://[name]" → the process-wide `MemoryBus` of that name (a new one if the last was closed);
    "kafka://host:port[,host:port]?option=value" → a new `KafkaBus`. Options: client_id, topic_prefix,
    session_timeout_ms, heartbeat_interval_ms, replication_factor, connect_timeout_s, publish_timeout_s,
    linger_ms, fetch_max_wait_ms."""
    parts = urlsplit(url)
    if parts.scheme == "memory":
        return _memory_bus(parts.netloc + parts.path)
    if parts.scheme == "kafka":
        if not parts.netloc:
            raise InvalidInputError(f"bus URL {url!r} has no broker address (kafka://127.0.0.1:9092)")
        return KafkaBus(parts.netloc, **_kafka_options(url, parts.query))
    raise InvalidInputError(f"unknown bus URL {url!r}: use memory:// or kafka://host:port")


_MEMORY_BUSES: dict[str, MemoryBus] = {}
_MEMORY_LOCK = threading.Lock()
_URL_OPTIONS: dict[str, type] = {
    "client_id": str,
    "topic_prefix": str,
    "session_timeout_ms": int,
    "heartbeat_interval_ms": int,
    "replication_factor": int,
    "connect_timeout_s": float,
    "publish_timeout_s": float,
    "linger_ms": int,
    "fetch_max_wait_ms": int,
}


def _memory_bus(name: str) -> MemoryBus:
    with _MEMORY_LOCK:
        bus = _MEMORY_BUSES.get(name)
        if bus is None or bus._closed:
            bus = _MEMORY_BUSES[name] = MemoryBus()
        return bus


def _kafka_options(url: str, query: str) -> dict[str, Any]:
    options: dict[str, Any] = {}
    for name, raw in parse_qsl(query, keep_blank_values=True):
        kind = _URL_OPTIONS.get(name)
        if kind is None:
            raise InvalidInputError(f"bus URL {url!r}: unknown option {name!r} (known: {', '.join(_URL_OPTIONS)})")
        try:
            options[name] = kind(raw)
        except ValueError:
            raise InvalidInputError(f"bus URL {url!r}: {name}={raw!r} is not a {kind.__name__}") from None
    return options
