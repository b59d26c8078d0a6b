"""The distributed updater: a batch record redelivered (a crash between logging it and committing its offset)
is recognised by its id and not applied again, across a restart of the updater too; the answer for the gateway
names the batch's version; a folded version is announced on skbqa.versions."""

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


def _record(batch_id: str, *changes: object, offset: int = 0) -> Message:
    return Message(topics.CHANGES, batch_id, encode_batch(batch_id, "gw-1", list(changes)), {}, offset=offset)  # type: ignore[arg-type]


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
