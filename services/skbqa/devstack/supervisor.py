"""The local stack's supervisor: what Kubernetes does for pods, for the processes `skbqa stack up` started.

It runs as a process of its own (recorded in the state file as "supervisor", started last, stopped first) and every
second checks each recorded process: one that has exited is started again with its recorded command, ports and
environment, after a backoff that doubles per restart of that process (1 s, 2 s, 4 s … at most 30 s). A restarted
broker on memory storage starts empty, so the stack's topics are created again before the services are told
nothing. Every change to the state file is made under `state_lock`, which `stack restart` and `stack down` take
too: a process is never restarted twice, nor restarted while `down` stops it.

    python -m skbqa.devstack.supervisor --dir .skbqa/stack
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import logging
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from skbqa.common.errors import InvalidInputError
from skbqa.devstack.processes import (
    ProcessRecord,
    alive,
    launch,
    read_state,
    stop_records,
    tcp_open,
    write_state,
)
from skbqa.serving.stages.chain import SEPARATOR

logger = logging.getLogger("skbqa.supervisor")

SUPERVISOR = "supervisor"
CHECK_INTERVAL_S = 1.0
MAX_BACKOFF_S = 30.0
LOCK = "stack.lock"


@contextlib.contextmanager
def state_lock(directory: Path) -> Iterator[None]:
    """An exclusive lock on the stack's state (a file lock: held by one process at a time, released if it dies)."""
    directory.mkdir(parents=True, exist_ok=True)
    with (directory / LOCK).open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def records_of(state: dict[str, Any]) -> list[ProcessRecord]:
    return [ProcessRecord(**r) for r in state.get("processes", [])]


def save(directory: Path, state: dict[str, Any], records: list[ProcessRecord]) -> None:
    extra = {key: value for key, value in state.items() if key != "processes"}
    write_state(directory, records, extra)


def relaunch(directory: Path, state: dict[str, Any], record: ProcessRecord) -> ProcessRecord:
    """Start a recorded process again (same command, ports and environment) and count the restart. The caller
    holds the state lock and saves the state."""
    _, fresh = launch(record.name, record.argv, directory / "logs", env=record.env, ports=record.ports)
    restarts = state.setdefault("restarts", {})
    restarts[record.name] = int(restarts.get(record.name, 0)) + 1
    if record.name == "broker":
        _recreate_topics(state, record)
    return fresh


def _recreate_topics(state: dict[str, Any], broker: ProcessRecord) -> None:
    """A broker on memory storage comes back empty: create the stack's topics again (a durable one keeps them;
    creating existing topics is a no-op)."""
    port = broker.ports.get("kafka")
    if not port:
        return
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not tcp_open(port):
        time.sleep(0.2)
    from skbqa.bus.kafka import bus_from_url
    from skbqa.bus.topics import ALL as ALL_TOPICS
    from skbqa.bus.topics import SINGLE_PARTITION

    try:
        bus = bus_from_url(str(state.get("ports", {}).get("bus", f"kafka://127.0.0.1:{port}")))
        try:
            bus.ensure_topics(ALL_TOPICS)
            bus.ensure_topics(SINGLE_PARTITION, partitions=1)
        finally:
            bus.close()
    except Exception as exc:  # the next check retries the broker if it died again
        logger.warning("broker restarted, topics not created: %s", exc)


class Supervisor:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._next_try: dict[str, float] = {}
        self._children: dict[int, subprocess.Popen[bytes]] = {}
        self._stopping = False

    def check(self) -> list[str]:
        """One pass: restart every recorded process that has exited and whose backoff has passed."""
        restarted = []
        now = time.monotonic()
        with state_lock(self.directory):
            state = read_state(self.directory)
            records = records_of(state)
            for index, record in enumerate(records):
                if record.name == SUPERVISOR or alive(record.pid):
                    continue
                due = self._next_try.setdefault(record.name, now)
                if now < due:
                    continue
                logger.warning("%s (pid %d) has exited: starting it again", record.name, record.pid)
                records[index] = relaunch(self.directory, state, record)
                count = int(state["restarts"][record.name])
                self._next_try[record.name] = now + min(MAX_BACKOFF_S, 2.0 ** (count - 1))
                restarted.append(record.name)
            if restarted:
                save(self.directory, state, records)
        return restarted

    def run(self) -> None:
        signal.signal(signal.SIGTERM, self._stop)
        signal.signal(signal.SIGINT, self._stop)
        while not self._stopping:
            try:
                self.check()
            except Exception as exc:  # a supervisor that dies supervises nothing: log and go on
                logger.error("supervision pass failed: %s", exc)
            time.sleep(CHECK_INTERVAL_S)

    def _stop(self, *_: object) -> None:
        self._stopping = True


def stack_restart(directory: Path, which: str) -> list[str]:
    """Stop and start again the recorded processes named `which` ("ranking-1") or of role `which` ("ranking",
    "broker"; a stage co-located with others restarts its group's processes), with their recorded command, ports
    and environment; counted as restarts. `which="supervisor"` starts the supervisor again: nothing else does
    after a kill -9 of it (its children keep serving meanwhile, unwatched), and its first pass restarts what
    exited while it was away."""
    with state_lock(directory):
        state = read_state(directory)
        records = records_of(state)
        chosen = [
            i
            for i, r in enumerate(records)
            if (r.name != SUPERVISOR or which == SUPERVISOR)
            and (which in (r.name, r.name.rsplit("-", 1)[0]) or which in r.name.rsplit("-", 1)[0].split(SEPARATOR))
        ]
        if not chosen:
            names = ", ".join(r.name for r in records if r.name != SUPERVISOR) or "none"
            raise InvalidInputError(f"no process {which!r} in the stack; processes: {names}")
        for i in chosen:
            stop_records([records[i]])
            records[i] = relaunch(directory, state, records[i])
        save(directory, state, records)
    return [records[i].name for i in chosen]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="restart the local stack's crashed processes")
    parser.add_argument("--dir", type=Path, required=True)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    Supervisor(args.dir).run()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
