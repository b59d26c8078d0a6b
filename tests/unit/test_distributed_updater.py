"""The distributed updater: a batch record redelivered (a crash between logging it and committing its offset)
is recognised by its id and not applied again, across a restart of the updater too; the answer for the gateway
names the batch's version; a folded version is announced on skbqa.versions. A client's resend under its
idempotency key (a new record) gets the first answer and applies nothing, after a restart too, and through the
gateway's ApplyChanges the key is scoped by the caller's token."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from skbqa.bus import topics
from skbqa.bus.base import Message
from skbqa.bus.memory import MemoryBus
from skbqa.changes.format import AddEdge, DeleteNode, UpsertNode
from skbqa.changes.log import ChangeLog
from skbqa.changes.record import encode_batch
from skbqa.changes.updater import IndexUpdater
from skbqa.ingest.builder import ingest
from skbqa.serving.stages.core import AnswerEnvelope
from skbqa.serving.updater_service import ChangeApplier, UpdaterService
from skbqa.v1 import api_pb2
from tests.helpers import HashingEncoder, write_bundle

NEW = UpsertNode(id=99, type="author", name="Grace Hopper", text="Admiral and computer scientist.")


@pytest.fixture
def index(tmp_path: Path) -> Path:
    target = tmp_path / "index"
    ingest(write_bundle(tmp_path / "bundle"), target, HashingEncoder(), progress=False)
    return target


def _record(batch_id: str, *changes: object, offset: int = 0, key: str = "") -> Message:
    value = encode_batch(batch_id, "gw-1", list(changes), key)  # type: ignore[arg-type]
    return Message(topics.CHANGES, batch_id, value, {}, offset=offset)


def _ack(envelope: AnswerEnvelope) -> api_pb2.ApplyChangesResponse:
    assert envelope.kind == AnswerEnvelope.FINAL, envelope.status_message
    assert envelope.gateway_id == "gw-1"
    return api_pb2.ApplyChangesResponse.FromString(envelope.answer)


def test_a_redelivered_batch_is_not_applied_twice_even_after_a_restart(index: Path) -> None:
    bus = MemoryBus()
    updater = IndexUpdater(index, HashingEncoder())
    applier = ChangeApplier(updater, bus)
    first = _ack(applier.handle(_record("b1", NEW)))
    assert first.version == 1 and dict(first.outcome) == {"nodes added": 1}
    # a deletion after it: replaying b1 as a fresh batch would bring the node back
    assert _ack(applier.handle(_record("b2", DeleteNode(99), offset=1))).version == 2
    again = _ack(applier.handle(_record("b1", NEW)))
    assert again.version == 1 and dict(again.outcome) == {}
    assert updater.accepted == 2 and 99 not in updater.state.nodes
    updater.close()

    # kill -9 after b2 was logged but before its offset was committed: the restarted updater gets both again
    restarted = IndexUpdater(index, HashingEncoder())
    applier = ChangeApplier(restarted, bus)
    assert _ack(applier.handle(_record("b1", NEW))).version == 1
    assert _ack(applier.handle(_record("b2", DeleteNode(99), offset=1))).version == 2
    assert restarted.accepted == 2 and 99 not in restarted.state.nodes
    assert [v for v, _ in ChangeLog(index).batches()] == [1, 2]
    assert _ack(applier.handle(_record("b3", NEW, offset=2))).version == 3
    restarted.close()


def test_a_batch_that_does_not_fit_is_refused_whole_with_the_embedded_servers_words(index: Path) -> None:
    updater = IndexUpdater(index, HashingEncoder())
    try:
        envelope = ChangeApplier(updater, MemoryBus()).handle(_record("b1", NEW, AddEdge(99, "written_by", 12345)))
        assert envelope.kind == AnswerEnvelope.ERROR and envelope.status_code == 3  # INVALID_ARGUMENT
        assert envelope.status_message.startswith("changes:2: edge dst 12345"), envelope.status_message
        assert updater.accepted == 0 and 99 not in updater.state.nodes
    finally:
        updater.close()


def test_the_service_logs_answers_folds_and_announces_the_version(index: Path) -> None:
    bus = MemoryBus()
    bus.ensure_topics(topics.SINGLE_PARTITION, partitions=1)
    versions = bus.consumer([topics.VERSIONS], group="test-versions")
    answers = bus.consumer([topics.ANSWER], group="test-answers")
    service = UpdaterService(IndexUpdater(index, HashingEncoder()), bus)
    try:
        value = encode_batch("b1", "gw-1", [NEW])
        bus.publish(topics.CHANGES, "b1", value)
        bus.publish(topics.CHANGES, "b1", value)  # a producer retry: the same batch twice on the topic
        replies: list[AnswerEnvelope] = []
        deadline = time.monotonic() + 60
        published = 0
        while (len(replies) < 2 or published < 1) and time.monotonic() < deadline:
            replies += [AnswerEnvelope.FromString(m.value) for m in answers.poll(0.1)]
            for message in versions.poll(0.1):
                record = json.loads(message.value)
                published = max(published, int(record.get("published", 0)))
        assert [_ack(r).version for r in replies] == [1, 1]
        assert published == 1 and service.updater.snapshot_version == 1
        assert [v for v, _ in ChangeLog(index).batches()] == [1]
    finally:
        service.close()


def test_a_resend_under_an_idempotency_key_gets_the_first_answer_even_after_a_restart(index: Path) -> None:
    updater = IndexUpdater(index, HashingEncoder())
    applier = ChangeApplier(updater, MemoryBus())
    first = _ack(applier.handle(_record("r1", NEW, key="scope-a/k1")))
    assert (first.version, first.changes, dict(first.outcome)) == (1, 1, {"nodes added": 1})
    assert _ack(applier.handle(_record("r2", DeleteNode(99), offset=1, key="scope-a/k2"))).version == 2
    # the client's resend is a new record (another batch id, maybe through another gateway), under the same key
    assert _ack(applier.handle(_record("r3", NEW, offset=2, key="scope-a/k1"))) == first
    assert updater.accepted == 2 and 99 not in updater.state.nodes  # not applied again: the node stays deleted
    other = UpsertNode(id=98, type="author", name="Someone Else", text="Another batch.")
    refused = applier.handle(_record("r4", other, offset=3, key="scope-a/k1"))
    assert refused.kind == AnswerEnvelope.ERROR and refused.status_code == 9  # FAILED_PRECONDITION
    assert refused.status_message == "idempotency key already used for another batch"
    assert updater.accepted == 2 and 98 not in updater.state.nodes
    # another scope's key of the same text is another key: applied
    assert _ack(applier.handle(_record("r5", NEW, offset=4, key="scope-b/k1"))).version == 3
    updater.close()

    restarted = IndexUpdater(index, HashingEncoder())  # the keys come back from the change log
    applier = ChangeApplier(restarted, MemoryBus())
    assert _ack(applier.handle(_record("r6", NEW, offset=5, key="scope-a/k1"))) == first
    again = applier.handle(_record("r7", other, offset=6, key="scope-a/k1"))
    assert again.kind == AnswerEnvelope.ERROR and again.status_code == 9
    assert restarted.accepted == 3 and [v for v, _ in ChangeLog(index).batches()] == [1, 2, 3]
    restarted.close()


@pytest.fixture
def gateway(index: Path):
    """The gateway's ApplyChanges over real gRPC with two admin tokens, and the updater, on one in-memory bus."""
    import grpc

    from skbqa.serving.gateway.api import SkbqaServicer
    from skbqa.serving.gateway.bus_backend import BusBackend
    from skbqa.serving.gateway.distributed_updates import DistributedUpdates
    from skbqa.serving.gateway.updates import UpdatePolicy
    from skbqa.serving.grpc_server import start_server
    from skbqa.serving.kb_feed import VersionFeed
    from skbqa.v1 import api_pb2_grpc

    bus = MemoryBus()
    feed = VersionFeed(bus)  # first: it reads the versions topic from its end
    backend = BusBackend(bus, stall_s=0)
    live = DistributedUpdates(backend, feed, start_version=0, timeout_s=30)
    tokens = [b"admin-a-0123456789", b"admin-b-0123456789"]
    servicer = SkbqaServicer(
        backend,
        strategies=["af"],
        default_strategy="af",
        status=api_pb2.IndexStatusResponse(),
        live=live,
        update_policy=UpdatePolicy(tokens_on=True, admin_tokens=tokens),
    )
    server = start_server([(api_pb2_grpc.add_SkbqaServicer_to_server, servicer, "skbqa.v1.Skbqa")], tokens=tokens)
    server.set_serving(True)
    services = [UpdaterService(IndexUpdater(index, HashingEncoder()), bus)]
    assert backend.wait_ready(10) and feed.wait(feed.updater_live, 10)

    def restart_updater() -> None:
        services[0].close()
        services[0] = UpdaterService(IndexUpdater(index, HashingEncoder()), bus)

    channel = grpc.insecure_channel(f"127.0.0.1:{server.port}")
    try:
        yield api_pb2_grpc.SkbqaStub(channel), restart_updater, services
    finally:
        channel.close()
        server.stop(0)
        services[0].close()
        feed.close()
        backend.close()


def _send(stub, token: str, *changes: api_pb2.Change, key: str | None = None) -> api_pb2.ApplyChangesResponse:
    metadata = [("authorization", f"Bearer {token}")] + ([("idempotency-key", key)] if key is not None else [])
    return stub.ApplyChanges(iter(changes), timeout=30, metadata=metadata)


def test_the_gateway_scopes_keys_by_token_and_the_updater_answers_resends_across_its_restart(gateway) -> None:
    import grpc

    from skbqa.serving.gateway import idempotency

    stub, restart_updater, services = gateway
    node = api_pb2.NodeRecord(id=99, type="author", name="Grace Hopper", text="Admiral and computer scientist.")
    add = api_pb2.Change(upsert_node=node)
    delete = api_pb2.Change(delete_node=99)
    first = _send(stub, "admin-a-0123456789", add, key="batch-0001")
    assert (first.version, dict(first.outcome)) == (1, {"nodes added": 1})
    assert _send(stub, "admin-a-0123456789", delete, key="batch-0002").version == 2
    assert _send(stub, "admin-a-0123456789", add, key="batch-0001") == first  # the lost acknowledgement, again
    assert services[0].updater.accepted == 2 and 99 not in services[0].updater.state.nodes
    with pytest.raises(grpc.RpcError) as reused:
        _send(stub, "admin-a-0123456789", delete, key="batch-0001")
    assert reused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert reused.value.details() == "idempotency key already used for another batch"
    # b's key of the same text is b's own: its batch is applied, and a's answer is not handed to it
    of_b = _send(stub, "admin-b-0123456789", add, key="batch-0001")
    assert (of_b.version, dict(of_b.outcome)) == (3, {"nodes added": 1})
    for bad in ("", "x" * 129):
        with pytest.raises(grpc.RpcError) as refused:
            _send(stub, "admin-a-0123456789", add, key=bad)
        assert (
            refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            and "idempotency-key" in refused.value.details()
        )
    assert services[0].updater.accepted == 3

    restart_updater()  # and, as in a new gateway process, the token's scope computed afresh
    idempotency._token_scope.cache_clear()
    assert _send(stub, "admin-a-0123456789", add, key="batch-0001") == first
    assert _send(stub, "admin-b-0123456789", add, key="batch-0001") == of_b
    assert services[0].updater.accepted == 3


class _Call:
    """A call's context as `gateway.idempotency` reads it: its metadata, and the token it was admitted with."""

    def __init__(self, key: str, token: bytes | None = None, peer: str = "ipv4:10.0.0.1:5000") -> None:
        self._metadata = (("idempotency-key", key),)
        self.peer_address = peer
        if token is not None:
            self.bearer_token = token

    def invocation_metadata(self) -> tuple[tuple[str, str], ...]:
        return self._metadata


def test_a_key_is_scoped_by_the_admitted_token_or_shared_without_tokens() -> None:
    from skbqa.serving.gateway import idempotency

    def key_id(call: _Call) -> str:
        return idempotency.key_id(call)  # type: ignore[arg-type]

    # no tokens: one scope, whoever connects from wherever (a resend may come over a new connection)
    assert key_id(_Call("k1")) == key_id(_Call("k1", peer="ipv4:10.0.0.2:6000")) != key_id(_Call("k2"))
    of_a = key_id(_Call("k1", b"token-a"))
    assert of_a not in (key_id(_Call("k1", b"token-b")), key_id(_Call("k1")))
    idempotency._token_scope.cache_clear()  # as in another process (another gateway, or after a restart)
    assert key_id(_Call("k1", b"token-a")) == of_a
    with pytest.raises(idempotency.BadIdempotencyKey):
        key_id(_Call("caf\u00e9"))
