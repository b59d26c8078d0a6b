"""A stack started and watched only the way an operator would: `skbqa stack up` (which starts the supervisor), its
state file and `skbqa stack status`, kill -9 by the PID the stack reports, and `skbqa stack down`. Nothing here
restarts a process: that is the supervisor's job, and what the supervised fault matrix measures.

The stack is started through the CLI in a process that exits once it is up, so its processes are children of
nobody here: a killed one is reaped by init, as under Kubernetes, rather than left a zombie of the harness.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from skbqa.devstack.processes import alive, grpc_serving, tcp_open


def cli(action: str, directory: Path, *args: str, timeout_s: float = 120) -> subprocess.CompletedProcess[str]:
    """`skbqa stack ACTION --dir DIRECTORY ARGS...`, its output captured."""
    argv = [sys.executable, "-m", "skbqa", "stack", action, "--dir", str(directory), *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, check=False)


def wait_for(check: Callable[[], bool], within_s: float, every_s: float = 0.2) -> bool:
    """Whether `check()` turned true within `within_s` (an exception counts as not yet)."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            if check():
                return True
        except Exception:
            pass
        time.sleep(every_s)
    return False


@dataclass
class StackConfig:
    """What `stack up` is given; `name` labels the rows measured on it."""

    name: str
    replicas: dict[str, int]
    ray: bool = True
    triton: bool = True
    durable: bool = False
    prometheus: bool = False  # `--prometheus`: Prometheus scraping every service, a process the supervisor watches
    colocate: tuple[str, ...] = ()  # `--colocate GROUP` each: one process per group ("parser+symbols-0")

    def up_args(self) -> list[str]:
        args = [f"--replicas={role}={n}" for role, n in self.replicas.items()]
        return (
            args
            + ["--no-ray"] * (not self.ray)
            + ["--no-triton"] * (not self.triton)
            + ["--durable"] * self.durable
            + ["--prometheus"] * self.prometheus
            + [f"--colocate={group}" for group in self.colocate]
        )


class SupervisedStack:
    def __init__(self, directory: Path) -> None:
        self.directory = directory

    @classmethod
    def up(cls, index: Path, directory: Path, config: StackConfig, timeout_s: float = 900) -> SupervisedStack:
        directory.mkdir(parents=True, exist_ok=True)
        began = time.monotonic()
        done = cli("up", directory, "--index", str(index), "--port", "0", *config.up_args(), timeout_s=timeout_s)
        stack = cls(directory)
        if done.returncode != 0:
            stack.down()  # `up` stops what it started on failure; this only makes sure
            raise RuntimeError(f"stack up failed ({done.returncode}): {done.stderr[-2000:]}")
        stack.up_seconds = round(time.monotonic() - began, 1)
        return stack

    up_seconds: float = 0.0

    # -------------------------------------------------------------------------------------------- state

    def state(self) -> dict[str, Any]:
        return dict(json.loads((self.directory / "stack.json").read_text()))

    def record(self, name: str) -> dict[str, Any]:
        return next(r for r in self.state()["processes"] if r["name"] == name)

    def names(self) -> list[str]:
        return [r["name"] for r in self.state()["processes"]]

    def restarts(self, name: str) -> int:
        return int(self.state().get("restarts", {}).get(name, 0))

    @property
    def gateway(self) -> str:
        return f"127.0.0.1:{self.state()['ports']['gateway']}"

    @property
    def gateways(self) -> str:
        """Every gateway replica's address, as `stack up` gives them to clients (IP:PORT,IP:PORT)."""
        return str(self.state()["ports"]["gateways"])

    def gateway_names(self) -> list[str]:
        return [name for name in self.names() if name.rsplit("-", 1)[0] == "gateway"]

    def cli_status_text(self) -> str:
        return cli("status", self.directory, timeout_s=60).stdout

    def status(self) -> dict[str, tuple[str, int]]:
        """`skbqa stack status`, parsed: name → (health, restarts)."""
        out = self.cli_status_text()
        rows: dict[str, tuple[str, int]] = {}
        for line in out.splitlines():
            parts = line.split()
            if len(parts) >= 6 and parts[1] == "pid" and parts[4] == "restarts":
                rows[parts[0]] = (parts[3], int(parts[5]))
        return rows

    def healthy(self, name: str) -> bool:
        """What `stack status` calls healthy: alive, and SERVING (services) or accepting (broker, Triton)."""
        record = self.record(name)
        if not alive(int(record["pid"])):
            return False
        ports = record.get("ports", {})
        if "grpc" in ports and name != "triton":
            return grpc_serving(int(ports["grpc"]))
        port = ports.get("kafka") or ports.get("grpc") or ports.get("http")
        return tcp_open(int(port)) if port else True

    def all_healthy(self) -> bool:
        return all(self.healthy(name) for name in self.names() if name != "supervisor")

    # -------------------------------------------------------------------------------------------- faults

    def kill(self, name: str) -> int:
        """kill -9 of the process group the stack records for `name` (the process and what it started, as a pod
        dies); returns the killed pid (one already gone is no error: the point is that it is dead)."""
        pid = int(self.record(name)["pid"])
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
        return pid

    def restart(self, name: str) -> subprocess.CompletedProcess[str]:
        """`skbqa stack restart NAME` (the name before the options: argparse takes an optional positional only
        there)."""
        argv = [sys.executable, "-m", "skbqa", "stack", "restart", name, "--dir", str(self.directory)]
        return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)

    def kill_descendants(self, name: str, commands: tuple[str, ...]) -> list[int]:
        """kill -9 of the processes under `name`'s recorded pid whose command is one of `commands` (Ray's
        gcs_server and raylet under the reranker service): a backend the service started dies, the service not."""
        root = int(self.record(name)["pid"])
        children: dict[int, list[int]] = {}
        comm: dict[int, str] = {}
        for pid, parent, _group, command in _processes():
            comm[pid] = command
            children.setdefault(parent, []).append(pid)
        found, todo = [], [root]
        while todo:
            for child in children.get(todo.pop(), []):
                todo.append(child)
                if any(comm.get(child, "").startswith(c) for c in commands):
                    found.append(child)
        for pid in found:
            os.kill(pid, signal.SIGKILL)
        return found

    # -------------------------------------------------------------------------------------------- evidence

    def counter(self, name: str, metric: str, **labels: str) -> float | None:
        """A metric's sum on one service's /metrics (None when the service has none or does not answer)."""
        port = self.record(name).get("ports", {}).get("metrics")
        if not port or name == "triton":
            return None
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=3) as response:
                text = response.read().decode()
        except OSError:
            return None
        return sum(
            sample.value
            for family in text_string_to_metric_families(text)
            for sample in family.samples
            if sample.name == metric and all(sample.labels.get(k) == v for k, v in labels.items())
        )

    def duplicates_dropped(self) -> dict[str, tuple[int, float]]:
        """name → (pid, skbqa_messages_total{outcome="duplicate"}): a restarted process counts from zero, so a
        difference is taken only between readings of the same pid."""
        readings: dict[str, tuple[int, float]] = {}
        for record in self.state()["processes"]:
            value = self.counter(record["name"], "skbqa_messages_total", outcome="duplicate")
            if value is not None:
                readings[record["name"]] = (int(record["pid"]), value)
        return readings

    # -------------------------------------------------------------------------------------------- down

    def down(self) -> list[str]:
        """`skbqa stack down`; what it left running of the process groups the stack recorded (must be nothing):
        "name: pid command" per process still in one of those groups afterwards."""
        if not (self.directory / "stack.json").is_file():
            return []
        groups = {int(r["pid"]): r["name"] for r in self.state()["processes"]}
        cli("down", self.directory, timeout_s=180)
        time.sleep(1.0)  # a group's last members may still be exiting after SIGKILL
        return [f"{groups[pgid]}: {pid} {comm}" for pid, _parent, pgid, comm in _processes() if pgid in groups]


def _processes() -> list[tuple[int, int, int, str]]:
    """(pid, parent, process group, command) of every live process (zombies excluded: they have exited)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if fields[0] != "Z":
            command = stat[stat.index("(") + 1 : stat.rindex(")")]
            found.append((int(entry.name), int(fields[1]), int(fields[2]), command))
    return found


def dropped_between(before: dict[str, tuple[int, float]], after: dict[str, tuple[int, float]]) -> int:
    total = 0.0
    for name, (pid, value) in after.items():
        old = before.get(name)
        total += value - old[1] if old is not None and old[0] == pid else value
    return int(total)
