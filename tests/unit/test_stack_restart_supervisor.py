"""`skbqa stack restart supervisor`: the operator's way back after a kill -9 of the supervisor, which nothing else
restarts (docs/faults.md, the supervised matrix's supervisor row). A stand-in command keeps the test to one cheap
process: what is checked is the bookkeeping — started again from its record, counted, the state file whole."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from skbqa.devstack.processes import ProcessRecord, alive, read_state, write_state
from skbqa.devstack.supervisor import stack_restart

SLEEPER = [sys.executable, "-c", "import time; time.sleep(60)"]


def test_a_killed_supervisor_is_started_again_from_its_record(tmp_path: Path) -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()  # a pid that has exited, as after a kill -9
    other = ProcessRecord("parser-0", gone.pid, SLEEPER, str(tmp_path / "parser-0.log"))
    record = ProcessRecord("supervisor", gone.pid, SLEEPER, str(tmp_path / "supervisor.log"))
    write_state(tmp_path, [other, record], {"ports": {}})
    assert stack_restart(tmp_path, "supervisor") == ["supervisor"]  # the supervisor only, not the exited parser
    state = read_state(tmp_path)
    pids = {r["name"]: int(r["pid"]) for r in state["processes"]}
    try:
        assert pids["parser-0"] == gone.pid
        assert pids["supervisor"] != gone.pid and alive(pids["supervisor"])
        assert state["restarts"] == {"supervisor": 1}
        assert not list(tmp_path.glob(".stack.json.*"))  # written aside and renamed: nothing left behind
    finally:
        os.killpg(pids["supervisor"], signal.SIGKILL)
        alive(pids["supervisor"])  # reaps it
