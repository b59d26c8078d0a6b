"""Start, record and stop the stack's processes. Each runs in its own session (process group), logs to a file,
and is recorded in `STATE` with its pid, so `down` (in another invocation) signals only those groups."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from skbqa.common.errors import BackendUnavailableError

STATE = "stack.json"


@dataclass
class ProcessRecord:
    name: str
    pid: int
    argv: list[str]
    log: str
    ports: dict[str, int] = field(default_factory=dict)
    env: dict[str, str] = field(
        default_factory=dict
    )  # set on top of the stack's environment (a restart reuses it)


def launch(
    name: str,
    argv: Sequence[str],
    log_dir: Path,
    *,
    env: Mapping[str, str] | None = None,
    ports: Mapping[str, int] | None = None,
) -> tuple[subprocess.Popen[bytes], ProcessRecord]:
    log_dir.mkdir(parents=True, exist_ok=True)
    log = log_dir / f"{name}.log"
    with log.open("ab") as out:
        process = subprocess.Popen(
            list(argv),
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env={**os.environ, **(env or {})},
            start_new_session=True,  # its own process group: `down` signals the group, children included
        )
    return process, ProcessRecord(name, process.pid, list(argv), str(log), dict(ports or {}), dict(env or {}))


def wait_until(
    check: Callable[[], bool],
    *,
    timeout_s: float,
    what: str,
    process: subprocess.Popen[bytes] | None = None,
    log: str = "",
) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise BackendUnavailableError(f"{what} exited with status {process.returncode}; see {log}")
        try:
            if check():
                return
        except Exception:  # not up yet
            pass
        time.sleep(0.2)
    raise BackendUnavailableError(f"{what} not ready after {timeout_s:.0f} s; see {log}")


def grpc_serving(port: int, service: str = "") -> bool:
    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        reply = health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(service=service), timeout=1.0
        )
        return bool(reply.status == health_pb2.HealthCheckResponse.SERVING)


def tcp_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def write_state(directory: Path, records: Sequence[ProcessRecord], extra: Mapping[str, object]) -> Path:
    path = directory / STATE
    # Written aside and renamed over: a writer killed mid-write (the supervisor's kill -9) must not leave a
    # truncated file, which `stack status` and `stack down` could not read — and `down` would stop nothing.
    tmp = path.with_name(f".{STATE}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps({"processes": [asdict(r) for r in records], **extra}, indent=2))
    tmp.replace(path)
    return path


def read_state(directory: Path) -> dict[str, Any]:
    path = directory / STATE
    if not path.is_file():
        return {}
    return dict(json.loads(path.read_text()))


def alive(pid: int) -> bool:
    """Whether the process runs (a child that has exited is reaped first, so a zombie does not count)."""
    _reap(pid)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A child of another process (the supervisor watches what `stack up` started, perhaps in a process that is
    # still running) stays a zombie until that parent reaps it: it has exited all the same, so restart it.
    return not _zombie(pid)


def _zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:  # no /proc (not Linux), or the process has just gone: kill(0) above has decided
        return False
    return stat[stat.rindex(")") + 2 :].startswith("Z")


def stop_records(records: Sequence[ProcessRecord], *, grace_s: float = 10.0) -> list[str]:
    """SIGTERM each recorded process group (last started first), then SIGKILL what is left after `grace_s`."""
    stopped = []
    for record in reversed(records):
        try:
            os.killpg(record.pid, signal.SIGTERM)
        except ProcessLookupError:
            continue
        stopped.append(record.name)
    deadline = time.monotonic() + grace_s
    for record in records:
        while alive(record.pid) and time.monotonic() < deadline:
            _reap(record.pid)
            time.sleep(0.1)
        if alive(record.pid):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(record.pid, signal.SIGKILL)
        _reap(record.pid)
    return stopped


def _reap(pid: int) -> None:
    """Collect a child that exited (only our own children can be reaped; others are not ours to wait for)."""
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
