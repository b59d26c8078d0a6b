"""Live updates through the public API of the embedded server: ApplyChanges (an admin scope), read-your-writes
with Ask.min_version, a whole batch refused for one bad change, and acknowledged changes surviving kill -9."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import grpc
import pytest

from skbqa.client import AsyncSkbqaClient, SkbqaClient
from skbqa.client.errors import ServerError
from skbqa.serving.run import start_embedded
from skbqa.serving.settings import ServiceSettings
from skbqa.v1 import api_pb2, api_pb2_grpc

NEW_ID = 10_000_001
NEW_NAME = "zorblaxic fever syndrome"


def _new_disease(node_id: int = NEW_ID, name: str = NEW_NAME) -> dict:
    text = f"{name} is a rare inherited disorder with recurrent fevers and joint pain."
    return {
        "op": "upsert_node",
        "node": {"id": node_id, "type": "disease", "name": name, "attrs": {}, "text": text},
    }


@pytest.fixture
def index_copy(biomed_sample_engine, tmp_path: Path) -> Path:
    target = tmp_path / "index"
    shutil.copytree(biomed_sample_engine.stores.directory, target)
    return target


@pytest.fixture
def tokens(tmp_path: Path) -> tuple[Path, Path]:
    (tmp_path / "tokens").write_text("asker-token-0123456789\n")
    (tmp_path / "admins").write_text("admin-token-0123456789\n")
    return tmp_path / "tokens", tmp_path / "admins"


@pytest.fixture
def server(index_copy: Path, tokens: tuple[Path, Path]):
    settings = ServiceSettings(index=index_copy, port=0, tokens_file=tokens[0], admin_tokens_file=tokens[1])
    running, stop = start_embedded(settings)
    yield running
    stop()


def _client(port: int, token: str) -> SkbqaClient:
    return SkbqaClient.connect(f"127.0.0.1:{port}", token=token, deadline_s=60)


def test_changes_need_an_admin_token_and_are_read_by_min_version(server) -> None:
    with (
        _client(server.port, "asker-token-0123456789") as asker,
        _client(server.port, "admin-token-0123456789") as admin,
    ):
        assert asker.ask(NEW_NAME, strategy="bm25", k=5).kb_version == 0
        with pytest.raises(ServerError) as refused:
            asker.apply_changes([_new_disease()])
        assert refused.value.code == "PERMISSION_DENIED"
        started = time.perf_counter()
        applied = admin.apply_changes([_new_disease()])
        assert applied.version == 1 and applied.outcome == {"nodes added": 1}
        for strategy in ("bm25", "vss", "af"):
            answer = asker.ask(NEW_NAME, strategy=strategy, k=5, min_version=applied.version)
            assert answer.kb_version >= 1
            assert answer.items[0].node_id == NEW_ID, strategy
        visible_s = time.perf_counter() - started
        status = asker.index_status()
        assert status.kb_version == status.accepted_version == 1 and status.nodes >= 0
        assert visible_s < 60
    asyncio.run(_async_round(server.port))


async def _async_round(port: int) -> None:
    """The asyncio client does the same: a rename is visible at the version its acknowledgement names."""
    renamed = _new_disease(NEW_ID, "glimmerwort palsy")
    async with AsyncSkbqaClient.connect(
        f"127.0.0.1:{port}", token="admin-token-0123456789", deadline_s=60
    ) as admin:
        applied = await admin.apply_changes([renamed])
        assert applied.version == 2 and applied.outcome == {"nodes changed": 1}
        answer = await admin.ask("glimmerwort palsy", strategy="bm25", k=3, min_version=2)
        assert answer.kb_version == 2 and answer.items[0].node_id == NEW_ID


def test_a_batch_with_one_bad_change_is_refused_whole(server) -> None:
    with _client(server.port, "admin-token-0123456789") as admin:
        bad = [
            _new_disease(),
            {"op": "add_edge", "src": NEW_ID, "type": "disease_has_phenotype", "dst": 987654321},
        ]
        with pytest.raises(ServerError) as refused:
            admin.apply_changes(bad)
        assert refused.value.code == "INVALID_ARGUMENT"
        assert "changes:2" in refused.value.reason and "987654321 is not a node" in refused.value.reason
        assert admin.index_status().accepted_version == 0  # nothing of it was applied
        with pytest.raises(ServerError) as never:
            admin.ask(NEW_NAME, min_version=5)
        assert never.value.code == "INVALID_ARGUMENT" and "never acknowledged" in never.value.reason


def test_without_a_token_apply_changes_is_unauthenticated(server) -> None:
    with grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel, pytest.raises(grpc.RpcError) as refused:
        api_pb2_grpc.SkbqaStub(channel).ApplyChanges(iter([api_pb2.Change(delete_node=1)]), timeout=10)
    assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED


def _serve(index: Path, port: int) -> subprocess.Popen[bytes]:
    from skbqa.devstack.processes import grpc_serving

    process = subprocess.Popen(
        [sys.executable, "-m", "skbqa", "serve", "--index", str(index), "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ},
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if grpc_serving(port):
                return process
        except grpc.RpcError:
            pass
        time.sleep(0.3)
    process.kill()
    raise AssertionError("skbqa serve did not become ready")


def _wait_for_a_fold(index: Path) -> None:
    """Until a fold's work directory is beside the index (the fold has started writing its snapshot)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if any(p.name.startswith(f".{index.name}.ingest-") for p in index.parent.iterdir()):
            return
        time.sleep(0.02)
    raise AssertionError("no fold started")


@pytest.mark.slow  # three server starts and two kills (~85 s): CI runs it with the slow suites
def test_acknowledged_changes_survive_kill_minus_9(index_copy: Path) -> None:
    from skbqa.devstack.ports import free_port

    port = free_port()
    process = _serve(index_copy, port)
    try:
        with SkbqaClient.connect(f"127.0.0.1:{port}", deadline_s=60) as client:
            first = client.apply_changes([_new_disease()])
            _wait_for_a_fold(index_copy)
            os.kill(process.pid, signal.SIGKILL)  # in the middle of folding the first batch
            process.wait(timeout=30)
        process = _serve(index_copy, port)
        with SkbqaClient.connect(f"127.0.0.1:{port}", deadline_s=60) as client:
            second = client.apply_changes([_new_disease(NEW_ID + 1, "quexalian lung fibrosis")])
        os.kill(process.pid, signal.SIGKILL)  # at once: the second batch is logged, not yet folded in
        process.wait(timeout=30)
        process = _serve(index_copy, port)
        with SkbqaClient.connect(f"127.0.0.1:{port}", deadline_s=60) as client:
            assert client.index_status().accepted_version == second.version == first.version + 1
            answer = client.ask("quexalian lung fibrosis", strategy="bm25", k=3, min_version=second.version)
            assert answer.items[0].node_id == NEW_ID + 1
            assert client.ask(NEW_NAME, strategy="bm25", k=3, min_version=first.version).items[0].node_id == NEW_ID
        assert not [p for p in index_copy.parent.iterdir() if p.name.startswith(f".{index_copy.name}.")]
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=30)


def test_a_start_removes_what_a_killed_servers_fold_left(index_copy: Path) -> None:
    """A fold killed with its server leaves its work directory; the next start removes it even when no change
    is pending (no writer is opened then), and never one whose owner still runs."""
    from skbqa.stores.index import owner_tag

    finished = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    running = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    host = owner_tag().split("@", 1)[1]
    dead = index_copy.parent / f".{index_copy.name}.ingest-{finished.stdout.strip()}@{host}-k1ll3d"
    alive = index_copy.parent / f".{index_copy.name}.ingest-{running.pid}@{host}-st1llup"
    for work in (dead, alive):
        work.mkdir()
        (work / "partial.npy").write_bytes(b"\0" * 16)
    try:
        _, stop = start_embedded(ServiceSettings(index=index_copy, port=0))
        stop()
        assert not dead.exists()
        assert alive.exists()
    finally:
        running.kill()
        running.wait(timeout=30)
