"""`skbqa stack up --snapshots` on a real local stack (tansu, a process per stage, the updater, the stack's own S3
server): every process but the updater runs on an index directory of its own, pulled from the store; a batch sent
through the gateway becomes visible on every stage, which fetched the version from the store (its own directory
still holds version 0, the copy beside it the new one); `stack status` names the store; `stack down` stops the S3
server. And ack → visible against the same stack without `--snapshots`, in the same run (docs/updates.md)."""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

pytest.importorskip("kafka")
pytest.importorskip("boto3")

from skbqa.changes.snapshot import kb_version
from skbqa.cli.stack import run_stack
from skbqa.client import SkbqaClient
from skbqa.devstack.processes import alive
from skbqa.devstack.stack import LocalStack, StackOptions
from skbqa.devstack.stack_snapshots import S3_PROCESS
from skbqa.ingest.snapshot_fetch import OWNER_LOCK
from skbqa.stores.index import read_manifest
from tests.integration.live_changes import NEW_ID, NEW_NAME, apply_when_ready, disease

pytestmark = [pytest.mark.distributed, pytest.mark.kafka, pytest.mark.slow, pytest.mark.timeout(900)]

STAGES = ("parser", "symbols", "grounding", "ranking", "reranker")
RESULTS = Path(__file__).resolve().parents[2] / "bench" / "results" / "stack_snapshots.json"
BATCHES = 6


@contextmanager
def stack_over_a_copy(
    index: Path, directory: Path, *, snapshots: str | None, ray: bool = False
) -> Iterator[LocalStack]:
    copy = directory / "index"
    shutil.copytree(index, copy)
    options = StackOptions(
        index=copy, directory=directory / "stack", gateway_port=0, triton=False, ray=ray, snapshots=snapshots
    )
    running = LocalStack(options)
    running.up()
    try:
        yield running
    finally:
        running.down()


def _ack_to_visible(client: SkbqaClient, first_id: int) -> list[float]:
    seconds = []
    for i in range(BATCHES):
        name = f"vextrilous malady {first_id + i}"
        applied = apply_when_ready(client, [disease(first_id + i, name)])
        acked = time.perf_counter()
        answer = client.ask(name, strategy="bm25", k=3, min_version=applied.version)
        seconds.append(time.perf_counter() - acked)
        assert answer.kb_version >= applied.version and answer.items[0].node_id == first_id + i
    return seconds


def _shipped_versions(data: Path) -> set[str]:
    """The version ids under kb/versions/ in the own S3 server's directory (each object a file whose first line
    is a JSON header naming its key: devstack/s3_files.py)."""
    keys = []
    for path in data.glob("*/*.obj"):
        with open(path, "rb") as handle:
            keys.append(json.loads(handle.readline())["key"])
    return {key.split("/")[2] for key in keys if key.startswith("kb/versions/")}


def test_stack_up_with_snapshots_ships_and_every_stage_fetches(biomed_sample_engine, tmp_path, capsys) -> None:
    with stack_over_a_copy(biomed_sample_engine.stores.directory, tmp_path / "shipped", snapshots="own") as stack:
        updater_index = stack.options.index
        own = {
            r.name: Path(r.argv[r.argv.index("--index") + 1])
            for r in stack.records
            if "--role" in r.argv and not r.name.startswith("updater")
        }
        assert set(own) == {"gateway-0", *(f"{stage}-0" for stage in STAGES)}
        for name, directory in own.items():  # pulled from the store: a directory of its own, not the updater's
            assert directory == stack.directory / "replicas" / name / "index" and directory != updater_index
        with SkbqaClient.connect(stack.ports["gateways"], deadline_s=60) as client:
            assert client.index_status().kb_version == 0
            applied = apply_when_ready(client, [disease(NEW_ID, NEW_NAME), {"op": "delete_node", "id": 13}])
            answer = client.ask(NEW_NAME, strategy="bm25", k=5, min_version=applied.version)
            assert answer.kb_version == applied.version == 1 and answer.items[0].node_id == NEW_ID
            assert client.index_status().kb_version == 1
            shipped_seconds = _ack_to_visible(client, NEW_ID + 100)
        assert kb_version(read_manifest(updater_index)) == 1 + BATCHES
        for name, directory in own.items():
            if name.startswith("gateway"):
                continue
            assert kb_version(read_manifest(directory)) == 0, name  # its own directory never changed
            copies = sorted(
                p.name for p in (directory.parent / "index.versions").iterdir() if p.name != OWNER_LOCK
            )
            assert copies and copies[-1].startswith(f"v{1 + BATCHES}-"), (name, copies)  # fetched beside it
        # the store kept the newest 3 of the 8 versions shipped (retention's default), the served one among them
        shipped = _shipped_versions(stack.directory / "snapshots-data")
        assert len(shipped) == 3 and copies[-1].split("-", 1)[1] in shipped, shipped

        args = argparse.Namespace(action="status", dir=stack.directory, name=None)
        assert run_stack(args) == 0
        status = capsys.readouterr().out
        assert (
            "snapshots: shipped to s3://skbqa-snapshots/kb (the stack's own S3 server at http://127.0.0.1:"
            in status
        )
        assert status.count(S3_PROCESS) == 1
        s3_pid = next(r.pid for r in stack.records if r.name == S3_PROCESS)
    assert not alive(s3_pid)  # `down` stopped the S3 server the stack started

    shared = stack_over_a_copy(biomed_sample_engine.stores.directory, tmp_path / "shared", snapshots=None)
    with shared as stack, SkbqaClient.connect(stack.ports["gateways"], deadline_s=60) as client:
        shared_seconds = _ack_to_visible(client, NEW_ID + 100)
    figures = {
        "shared_s": [round(s, 3) for s in shared_seconds],
        "shipped_s": [round(s, 3) for s in shipped_seconds],
        "shared_p50_s": round(statistics.median(shared_seconds), 3),
        "shipped_p50_s": round(statistics.median(shipped_seconds), 3),
    }
    figures["ratio_p50"] = round(figures["shipped_p50_s"] / figures["shared_p50_s"], 2)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(figures))
    print(f"stack ack → visible p50: shared {figures['shared_p50_s']} s, shipped {figures['shipped_p50_s']} s "
          f"({figures['ratio_p50']}×)")  # fmt: skip
