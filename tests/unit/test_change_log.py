"""The change log keeps every acknowledged batch: a torn last record (a kill during an append) is cut off, damage
before the end is refused, replay is idempotent, and compaction keeps only what no snapshot holds (with the batch
ids and idempotency keys of what it keeps); remembered keys are bounded in number."""

from __future__ import annotations

import numpy as np
import pytest

from skbqa.changes.format import AddEdge, DeleteNode, UpsertNode
from skbqa.changes.idempotency import KeyedAnswer, RememberedKeys
from skbqa.changes.log import ChangeLog
from skbqa.changes.state import KbState
from skbqa.common.errors import IndexStoreError
from skbqa.skb.bundle import load_bundle
from skbqa.stores.graph.csr import CsrGraph
from skbqa.stores.nodes import NodeTable
from tests.helpers import write_bundle


def _state(tmp_path) -> KbState:
    skb = load_bundle(write_bundle(tmp_path / "bundle"))
    graph = CsrGraph.build(skb.num_nodes, skb.schema.edge_names, skb.edge_src, skb.edge_dst, skb.edge_type)
    return KbState.from_index(NodeTable.from_skb(skb), graph)


def test_a_torn_last_record_is_cut_and_earlier_ones_kept(tmp_path) -> None:
    log = ChangeLog(tmp_path)
    log.lock()
    log.append(1, [DeleteNode(5)])
    log.append(2, [DeleteNode(6)])
    log.close()
    with log.path.open("ab") as handle:
        handle.write(b'{"version": 3, "crc32": "00000000", "chan')  # killed mid-append: never acknowledged
    assert [v for v, _ in ChangeLog(tmp_path).batches()] == [1, 2]
    again = ChangeLog(tmp_path)
    again.lock()
    again.append(3, [DeleteNode(7)])
    again.close()
    assert [(v, c) for v, c in ChangeLog(tmp_path).batches(after=1)] == [
        (2, [DeleteNode(6)]),
        (3, [DeleteNode(7)]),
    ]


def test_damage_before_the_end_is_refused(tmp_path) -> None:
    log = ChangeLog(tmp_path)
    log.lock()
    log.append(1, [DeleteNode(5)])
    log.append(2, [DeleteNode(6)])
    log.close()
    data = bytearray(log.path.read_bytes())
    data[data.index(b"5")] = ord("8")  # a flipped digit inside the first record: its checksum no longer fits
    log.path.write_bytes(bytes(data))
    with pytest.raises(IndexStoreError, match=r"log.jsonl:1: damaged change log record"):
        list(ChangeLog(tmp_path).batches())


def test_a_second_writer_is_refused_at_once(tmp_path) -> None:
    first = ChangeLog(tmp_path)
    first.lock()
    try:
        with pytest.raises(IndexStoreError, match="another process is changing"):
            ChangeLog(tmp_path).lock()
    finally:
        first.close()


def test_compaction_keeps_only_batches_after_the_snapshot(tmp_path) -> None:
    log = ChangeLog(tmp_path)
    log.lock()
    for version in (1, 2, 3):
        log.append(version, [DeleteNode(version)])
    assert log.drop_through(2) == 2
    log.append(4, [DeleteNode(4)])
    log.close()
    assert [v for v, _ in ChangeLog(tmp_path).batches()] == [3, 4]


def test_compaction_keeps_the_batch_ids_and_keys_of_what_it_keeps(tmp_path) -> None:
    log = ChangeLog(tmp_path)
    log.lock()
    answers = {v: KeyedAnswer(v, f"digest-{v}", (("nodes already absent", 1),)) for v in (1, 2, 3)}
    for version, answer in answers.items():
        log.append(version, [DeleteNode(version)], f"batch-{version}", (f"key-{version}", answer))
    assert log.drop_through(1) == 1
    log.close()
    batches, keys = ChangeLog(tmp_path).remembered()
    assert batches == {"batch-2": 2, "batch-3": 3}
    assert keys == [("key-2", answers[2]), ("key-3", answers[3])]


def test_remembered_keys_are_bounded_and_forgotten_with_their_batches() -> None:
    keys = RememberedKeys(limit=2)
    for version in (1, 2, 3):
        keys.add(f"key-{version}", KeyedAnswer(version, "d", ()))
    assert len(keys) == 2 and keys.get("key-1") is None and keys.get("key-3") is not None  # oldest out first
    keys.drop_through(2)
    assert keys.get("key-2") is None and keys.get("key-3") is not None


def test_replaying_a_batch_twice_gives_the_same_knowledge_base(tmp_path) -> None:
    state = _state(tmp_path)
    some, other = sorted(state.nodes)[:2]
    node_type = state.schema.node_types[state.nodes[some].type].name
    edge = next(e for e in state.schema.edge_types if e.source == node_type)
    target = next(i for i, r in state.nodes.items() if state.schema.node_types[r.type].name == edge.target)
    batch = [
        (1, UpsertNode(some, node_type, "renamed", "new text", {"k": 1})),
        (2, DeleteNode(other)),
        (3, AddEdge(some, edge.name, target)),
        (4, UpsertNode(999_999, node_type, "brand new", "", {})),
    ]
    state.apply(batch, "log")
    once = state.to_skb()
    outcome = state.apply(batch, "log")
    twice = state.to_skb()
    assert set(outcome) <= {"nodes unchanged", "nodes already absent", "edges already present"}
    assert np.array_equal(once.node_ids, twice.node_ids) and once.names == twice.names

    def edges(skb) -> list[tuple[int, int, int]]:
        return sorted(zip(skb.edge_src.tolist(), skb.edge_dst.tolist(), skb.edge_type.tolist(), strict=True))

    assert edges(once) == edges(twice)
