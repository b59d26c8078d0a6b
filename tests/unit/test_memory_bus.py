"""`MemoryBus` behaves like Kafka: partitions by key, consumer groups, commit semantics, redelivery, lag."""

from __future__ import annotations

import threading
import time
from collections import Counter

import pytest

from skbqa.bus import topics
from skbqa.bus.base import Bus, Consumer, Message, next_offsets
from skbqa.bus.kafka import bus_from_url
from skbqa.bus.memory import MemoryBus, MemoryConsumer, partition_for
from skbqa.common.errors import BackendUnavailableError, InvalidInputError


def drain(consumer: MemoryConsumer, expected: int | None = None, timeout_s: float = 0.05) -> list[Message]:
    """Everything the consumer can read now (or until `expected` messages arrived)."""
    got: list[Message] = []
    while True:
        batch = consumer.poll(timeout_s)
        got += batch
        if not batch or (expected is not None and len(got) >= expected):
            return got


def publish_many(bus: MemoryBus, topic: str, n: int, prefix: str = "r") -> list[str]:
    keys = [f"{prefix}{i}" for i in range(n)]
    for key in keys:
        bus.publish(topic, key, key.encode())
    return keys


@pytest.fixture
def bus() -> MemoryBus:
    return MemoryBus()


def test_implements_the_ports(bus: MemoryBus) -> None:
    assert isinstance(bus, Bus)
    assert isinstance(bus.consumer(["t"], "g"), Consumer)


def test_round_trip_keeps_key_value_headers_and_stamps_offsets(bus: MemoryBus) -> None:
    before = time.time_ns() // 1_000_000
    bus.publish("t", "req-1", b"\x00payload", {"trace": "abc", "attempt": "1"})
    [message] = drain(bus.consumer(["t"], "g"))
    assert (message.topic, message.key, message.value) == ("t", "req-1", b"\x00payload")
    assert message.headers == {"trace": "abc", "attempt": "1"}
    assert message.partition == partition_for("req-1", 4)
    assert message.offset == 0
    assert before <= message.timestamp_ms <= time.time_ns() // 1_000_000


def test_same_key_same_partition_in_order_and_keys_spread(bus: MemoryBus) -> None:
    for i in range(5):
        bus.publish("t", "same", str(i).encode())
    publish_many(bus, "t", 40)
    got = drain(bus.consumer(["t"], "g"))
    same = [m for m in got if m.key == "same"]
    assert len({m.partition for m in same}) == 1
    assert [m.value for m in same] == [b"0", b"1", b"2", b"3", b"4"]
    assert [m.offset for m in same] == sorted(m.offset for m in same)
    assert len({m.partition for m in got}) == 4  # 41 keys over 4 partitions use all of them


def test_ensure_topics_sets_partitions_and_leaves_existing_topics(bus: MemoryBus) -> None:
    bus.ensure_topics(["two"], partitions=2)
    bus.ensure_topics(["two"], partitions=8)  # exists: unchanged, as Kafka would
    publish_many(bus, "two", 30)
    assert bus.partitions("two") == 2
    assert {m.partition for m in drain(bus.consumer(["two"], "g"))} == {0, 1}
    with pytest.raises(InvalidInputError):
        bus.ensure_topics(["x"], partitions=0)


def test_every_group_gets_every_message_once(bus: MemoryBus) -> None:
    keys = publish_many(bus, "t", 20)
    first, second = bus.consumer(["t"], "parser"), bus.consumer(["t"], "audit")
    for consumer in (first, second):
        got = drain(consumer)
        assert sorted(m.key for m in got) == sorted(keys)
        consumer.commit(got)
        assert drain(consumer) == []


def test_two_members_share_partitions_and_each_message_goes_to_one(bus: MemoryBus) -> None:
    a, b = bus.consumer(["t"], "g"), bus.consumer(["t"], "g")
    assert a.assignment() and b.assignment()
    assert not a.assignment() & b.assignment()
    assert a.assignment() | b.assignment() == {("t", p) for p in range(4)}
    keys = publish_many(bus, "t", 40)
    got_a, got_b = drain(a), drain(b)
    assert got_a and got_b
    assert Counter(m.key for m in got_a + got_b) == Counter(keys)
    assert {(m.topic, m.partition) for m in got_a} <= a.assignment()


def test_more_members_than_partitions_leaves_some_idle(bus: MemoryBus) -> None:
    bus.ensure_topics(["t"], partitions=2)
    members = [bus.consumer(["t"], "g") for _ in range(3)]
    assert sorted(len(m.assignment()) for m in members) == [0, 1, 1]


def test_uncommitted_messages_of_a_closed_member_are_redelivered(bus: MemoryBus) -> None:
    a, b = bus.consumer(["t"], "g"), bus.consumer(["t"], "g")
    keys = publish_many(bus, "t", 40)
    got_a, got_b = drain(a), drain(b)
    a.commit(got_a[:3])  # a finished only three
    b.commit(got_b)
    a.close()
    again = drain(b)
    assert b.assignment() == {("t", p) for p in range(4)}
    done = {m.key for m in got_a[:3]} | {m.key for m in got_b}
    assert sorted(m.key for m in again) == sorted(set(keys) - done)  # the rest of a's, nothing else: no loss
    with pytest.raises(BackendUnavailableError):
        a.poll(0)


def test_a_new_member_resumes_from_the_committed_offset(bus: MemoryBus) -> None:
    publish_many(bus, "t", 10, prefix="old")
    first = bus.consumer(["t"], "g")
    got = drain(first)
    first.commit(got)
    first.close()
    publish_many(bus, "t", 5, prefix="new")
    second = bus.consumer(["t"], "g")
    assert sorted(m.key for m in drain(second)) == sorted(f"new{i}" for i in range(5))


def test_commit_never_moves_backwards_and_marks_everything_before(bus: MemoryBus) -> None:
    bus.ensure_topics(["t"], partitions=1)
    publish_many(bus, "t", 6)
    consumer = bus.consumer(["t"], "g")
    got = drain(consumer)
    consumer.commit([got[4]])  # up to offset 4 inclusive
    consumer.commit([got[1]])  # stale: must not rewind
    assert bus.lag("g", ["t"]) == {"t": 1}
    consumer.close()
    assert [m.offset for m in drain(bus.consumer(["t"], "g"))] == [5]


def test_next_offsets_takes_the_highest_per_partition_plus_one() -> None:
    messages = [Message("t", "k", b"", {}, partition=p, offset=o) for p, o in ((0, 3), (0, 7), (1, 2), (0, 5))]
    messages.append(Message("t", "k", b"", {}))  # offset -1: never read from a log
    assert next_offsets(messages) == {("t", 0): 8, ("t", 1): 3}


def test_lag_per_topic(bus: MemoryBus) -> None:
    publish_many(bus, "a", 7)
    publish_many(bus, "b", 3)
    assert bus.lag("g", ["a", "b", "missing"]) == {"a": 7, "b": 3, "missing": 0}
    consumer = bus.consumer(["a", "b"], "g")
    got = drain(consumer)
    assert bus.lag("g", ["a", "b"]) == {"a": 7, "b": 3}  # read but not committed: still lag
    consumer.commit([m for m in got if m.topic == "a"])
    assert bus.lag("g", ["a", "b"]) == {"a": 0, "b": 3}
    assert bus.lag("other", ["a"]) == {"a": 7}


def test_from_beginning_false_reads_only_newer_messages(bus: MemoryBus) -> None:
    publish_many(bus, "t", 5, prefix="old")
    latest = bus.consumer(["t"], "gateway", from_beginning=False)
    publish_many(bus, "t", 3, prefix="new")
    assert sorted(m.key for m in drain(latest)) == ["new0", "new1", "new2"]


def test_poll_waits_for_a_message_and_respects_the_timeout(bus: MemoryBus) -> None:
    consumer = bus.consumer(["t"], "g")
    started = time.monotonic()
    assert consumer.poll(0.1) == []
    assert 0.09 <= time.monotonic() - started < 1.0
    timer = threading.Timer(0.1, lambda: bus.publish("t", "late", b"x"))
    timer.start()
    started = time.monotonic()
    got = consumer.poll(5.0)
    assert [m.key for m in got] == ["late"]
    assert time.monotonic() - started < 2.0  # woken by the publish, not by the timeout
    timer.join()


def test_max_records_bounds_a_poll(bus: MemoryBus) -> None:
    publish_many(bus, "t", 50)
    consumer = bus.consumer(["t"], "g")
    assert len(consumer.poll(0, max_records=7)) == 7
    assert len(drain(consumer)) == 43
    with pytest.raises(InvalidInputError):
        consumer.poll(0, max_records=0)


def test_concurrent_publishers_lose_nothing_and_offsets_are_dense(bus: MemoryBus) -> None:
    threads = [threading.Thread(target=publish_many, args=(bus, "t", 200, f"w{w}-")) for w in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    got = drain(bus.consumer(["t"], "g"), timeout_s=0.01)
    assert len(got) == len({m.key for m in got}) == 1600
    for partition in range(4):
        offsets = [m.offset for m in got if m.partition == partition]
        assert sorted(offsets) == list(range(len(offsets)))
    assert bus.end_offsets("t") == [len([m for m in got if m.partition == p]) for p in range(4)]


def test_concurrent_members_process_every_message_once(bus: MemoryBus) -> None:
    bus.ensure_topics(["t"], partitions=4)
    members = [bus.consumer(["t"], "g") for _ in range(3)]
    seen: list[str] = []
    lock = threading.Lock()
    stop = threading.Event()

    def work(consumer: MemoryConsumer) -> None:
        while not stop.is_set():
            batch = consumer.poll(0.05, max_records=5)
            with lock:
                seen.extend(m.key for m in batch)
            consumer.commit(batch)

    threads = [threading.Thread(target=work, args=(m,)) for m in members]
    for thread in threads:
        thread.start()
    keys = publish_many(bus, "t", 300)
    deadline = time.monotonic() + 10
    while len(seen) < 300 and time.monotonic() < deadline:
        time.sleep(0.01)
    stop.set()
    for thread in threads:
        thread.join()
    assert Counter(seen) == Counter(keys)
    assert bus.lag("g", ["t"]) == {"t": 0}


def test_retention_drops_the_oldest_and_readers_skip_to_the_start() -> None:
    bus = MemoryBus(retention=3)
    bus.ensure_topics(["t"], partitions=1)
    publish_many(bus, "t", 5)
    assert [m.offset for m in drain(bus.consumer(["t"], "g"))] == [2, 3, 4]
    assert bus.lag("fresh", ["t"]) == {"t": 3}


def test_closed_bus_refuses_work_and_wakes_pollers(bus: MemoryBus) -> None:
    consumer = bus.consumer(["t"], "g")
    errors: list[BaseException] = []

    def wait() -> None:
        try:
            consumer.poll(10)
        except BackendUnavailableError as exc:
            errors.append(exc)

    thread = threading.Thread(target=wait)
    thread.start()
    time.sleep(0.05)
    bus.close()
    thread.join(timeout=2)
    assert not thread.is_alive() and len(errors) == 1
    with pytest.raises(BackendUnavailableError):
        bus.publish("t", "k", b"v")
    with pytest.raises(BackendUnavailableError):
        bus.consumer(["t"], "g")
    bus.close()  # idempotent


def test_bad_arguments_are_rejected(bus: MemoryBus) -> None:
    with pytest.raises(InvalidInputError):
        bus.publish("t", "k", "not bytes")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        bus.consumer("t", "g")  # a bare string would subscribe to "t" as characters
    with pytest.raises(InvalidInputError):
        bus.consumer([], "g")


def test_bus_from_url_memory_is_a_named_process_singleton() -> None:
    default = bus_from_url("memory://")
    assert isinstance(default, MemoryBus)
    assert bus_from_url("memory://") is default
    other = bus_from_url("memory://isolated-test")
    assert other is not default
    other.close()
    assert bus_from_url("memory://isolated-test") is not other  # a closed singleton is replaced
    for bad in ("redis://x", "kafka://", "kafka://127.0.0.1:9092?nonsense=1", "kafka://h:1?linger_ms=soon"):
        with pytest.raises(InvalidInputError):
            bus_from_url(bad)


def test_topic_names_and_prefix(monkeypatch: pytest.MonkeyPatch) -> None:
    assert topics.ALL == (
        "skbqa.query",
        "skbqa.parsed",
        "skbqa.symbols",
        "skbqa.grounded",
        "skbqa.ranked",
        "skbqa.answer",
        "skbqa.dead-letter",
    )
    monkeypatch.delenv(topics.PREFIX_ENV, raising=False)
    assert topics.prefix_from_env() == ""
    monkeypatch.setenv(topics.PREFIX_ENV, "ci-42.")
    assert topics.prefix_from_env() == "ci-42."
    assert topics.with_prefix(topics.QUERY, "ci-42.") == "ci-42.skbqa.query"
    assert topics.without_prefix("ci-42.skbqa.query", "ci-42.") == topics.QUERY
    monkeypatch.setenv(topics.PREFIX_ENV, "bad prefix/")
    with pytest.raises(InvalidInputError):
        topics.prefix_from_env()
    with pytest.raises(InvalidInputError):
        topics.with_prefix("", "p.")


def test_a_rebalance_redelivers_only_what_moved(bus: MemoryBus) -> None:
    a = bus.consumer(["t"], "g")
    keys = publish_many(bus, "t", 40)
    read_by_a = drain(a)  # all four partitions, nothing committed
    assert len(read_by_a) == len(keys)
    b = bus.consumer(["t"], "g")  # takes two partitions from a
    publish_many(bus, "t", 8, prefix="later")
    again_a, got_b = drain(a), drain(b)
    assert all(m.key.startswith("later") for m in again_a)  # a's retained partitions: no redelivery
    moved = {m.key for m in read_by_a if (m.topic, m.partition) in b.assignment()}
    assert {m.key for m in got_b} - {f"later{i}" for i in range(8)} == moved  # b re-reads what moved


def test_a_busy_partition_does_not_starve_the_others(bus: MemoryBus) -> None:
    busy = next(f"k{i}" for i in range(100) if partition_for(f"k{i}", 4) == 0)  # read first when sorted
    quiet = next(f"k{i}" for i in range(100) if partition_for(f"k{i}", 4) == 3)
    for _ in range(100):
        bus.publish("t", busy, b"x")
    bus.publish("t", quiet, b"y")
    consumer = bus.consumer(["t"], "g")
    first_polls = [m.key for _ in range(3) for m in consumer.poll(0, max_records=10)]
    assert quiet in first_polls
