"""Live updates in the distributed form, on a real local stack (tansu broker, one process per stage, the updater):
a batch sent through the gateway with the client SDK is acknowledged with a version; an answer asked with that
`min_version` reads it (a deleted node is no longer answered, a new one is found by name) and names the version;
every stage replica reports it (health feed, `skbqa_kb_version`); and the time from acknowledgement to visible is
measured over single-change batches (docs/updates.md quotes it)."""

from __future__ import annotations

import json
import shutil
import statistics
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from skbqa.client import SkbqaClient
from skbqa.client.errors import ServerError
from skbqa.devstack.stack import LocalStack, StackOptions
from tests.integration.live_changes import NEW_ID, NEW_NAME, apply_when_ready, disease

pytestmark = [pytest.mark.distributed, pytest.mark.kafka, pytest.mark.slow, pytest.mark.timeout(900)]

STAGES = ("parser", "symbols", "grounding", "ranking", "reranker")
RESULTS = Path(__file__).resolve().parents[2] / "bench" / "results" / "distributed_updates.json"


@contextmanager
def stack_over_a_copy(index: Path, directory: Path, *, ray: bool) -> Iterator[LocalStack]:
    """A local stack (no Triton) over a copy of `index`: the stack changes its index, not the session's."""
    copy = directory / "index"
    shutil.copytree(index, copy)
    running = LocalStack(
        StackOptions(index=copy, directory=directory / "stack", gateway_port=0, triton=False, ray=ray)
    )
    running.up()
    try:
        yield running
    finally:
        running.down()


@pytest.fixture(scope="module")
def stack(biomed_sample_engine, tmp_path_factory):
    directory: Path = tmp_path_factory.mktemp("updates-stack")
    with stack_over_a_copy(biomed_sample_engine.stores.directory, directory, ray=False) as running:
        yield running


@pytest.fixture(scope="module")
def client(stack):
    with SkbqaClient.connect(f"127.0.0.1:{stack.ports['gateway']}", deadline_s=60) as connected:
        yield connected


def _kb_versions(stack: LocalStack) -> dict[str, float]:
    """skbqa_kb_version of every stage process, as its /metrics serves it."""
    found = {}
    for name, ports in stack.ports["services"].items():
        if name.startswith(("gateway", "updater")):
            continue
        with urllib.request.urlopen(f"http://127.0.0.1:{ports['metrics']}/metrics", timeout=10) as reply:
            for line in reply.read().decode().splitlines():
                if line.startswith("skbqa_kb_version{"):
                    found[name] = float(line.rsplit(" ", 1)[1])
    return found


def test_a_batch_through_the_gateway_is_read_at_its_version_by_every_stage(stack, client) -> None:
    victim = client.ask("ribosomal small subunit assembly", strategy="bm25", k=5).items[0]
    assert victim.node_id == 13
    assert all(item.node_id != NEW_ID for item in client.ask(NEW_NAME, strategy="bm25", k=5).items)

    applied = apply_when_ready(client, [disease(NEW_ID, NEW_NAME), {"op": "delete_node", "id": 13}])
    assert applied.version == 1 and applied.outcome == {"nodes added": 1, "nodes deleted": 1}

    for strategy in ("bm25", "vss", "af"):
        answer = client.ask(NEW_NAME, strategy=strategy, k=5, min_version=applied.version)
        assert answer.kb_version == applied.version, strategy
        assert answer.items[0].node_id == NEW_ID, strategy
    gone = client.ask("ribosomal small subunit assembly", strategy="bm25", k=20, min_version=applied.version)
    assert gone.kb_version == applied.version and all(item.node_id != 13 for item in gone.items)

    versions = _kb_versions(stack)
    assert set(versions) == {f"{stage}-0" for stage in STAGES} and set(versions.values()) == {1.0}, versions
    status = client.index_status()
    assert status.kb_version == status.accepted_version == 1


def test_a_bad_batch_is_refused_whole_and_min_version_beyond_the_acknowledged_is_invalid(client) -> None:
    before = client.index_status().accepted_version
    with pytest.raises(ServerError) as refused:
        client.apply_changes(
            [disease(NEW_ID + 1, "x"), {"op": "add_edge", "src": NEW_ID + 1, "type": "nope", "dst": 1}]
        )
    assert refused.value.code == "INVALID_ARGUMENT" and "changes:2:" in str(refused.value)
    assert client.index_status().accepted_version == before
    with pytest.raises(ServerError) as never:
        client.ask(NEW_NAME, min_version=before + 50, deadline_s=8)
    assert never.value.code == "INVALID_ARGUMENT"


def test_time_from_acknowledgement_to_visible(stack, client) -> None:
    seconds, acks = [], []
    for i in range(10):
        name = f"quorvantic syndrome {i}"
        sent = time.perf_counter()
        applied = apply_when_ready(client, [disease(NEW_ID + 100 + i, name)])
        acked = time.perf_counter()
        acks.append(acked - sent)
        answer = client.ask(name, strategy="bm25", k=3, min_version=applied.version)
        seconds.append(time.perf_counter() - acked)
        assert answer.kb_version >= applied.version and answer.items[0].node_id == NEW_ID + 100 + i
    p50 = statistics.median(seconds)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    figures = {
        "ack_to_visible_s": [round(s, 3) for s in seconds],
        "p50_s": round(p50, 3),
        "ack_s": [round(s, 4) for s in acks],
        "ack_p50_s": round(statistics.median(acks), 4),
    }
    RESULTS.write_text(json.dumps(figures))
    print(f"ack → visible over {len(seconds)} single-change batches: p50 {p50:.2f} s, max {max(seconds):.2f} s; "
          f"acknowledged in p50 {statistics.median(acks) * 1000:.0f} ms")  # fmt: skip
    assert p50 < 30, seconds
    assert set(_kb_versions(stack).values()) == {float(client.index_status().kb_version)}


def test_an_updater_killed_after_an_acknowledgement_loses_nothing_and_applies_nothing_twice(stack, client) -> None:
    from skbqa.changes.log import ChangeLog

    name = "plimvorous ague"
    applied = apply_when_ready(client, [disease(NEW_ID + 200, name)])
    stack.kill("updater-0")  # kill -9 while it folds the batch it has just acknowledged
    stack.start_service("updater", 0)
    answer = client.ask(name, strategy="bm25", k=3, min_version=applied.version, deadline_s=120)
    assert answer.kb_version >= applied.version and answer.items[0].node_id == NEW_ID + 200
    after = apply_when_ready(client, [{"op": "delete_node", "id": NEW_ID + 200}])
    assert after.version == applied.version + 1 and after.outcome == {"nodes deleted": 1}
    logged = [version for version, _ in ChangeLog(stack.options.index).batches()]
    assert logged == list(range(1, after.version + 1)), logged  # every batch once, in order
