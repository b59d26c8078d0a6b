"""The supervisor restarts a process that has exited even while that process's parent has not reaped it.

`LocalStack(StackOptions(supervise=True)).up()` called in a long-lived process (a test, a notebook, a bench
script) leaves the stack's processes children of that process: one killed is a zombie until its parent waits for
it, and `kill(pid, 0)` still succeeds on a zombie, so the supervisor (another process) took it for alive and never
restarted it. Found while building the supervised fault matrix (tests/integration/supervised_faults.py).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from skbqa.devstack.processes import ProcessRecord, alive, read_state, write_state
from skbqa.devstack.supervisor import Supervisor

# A parent that starts `sleep`, kills it, waits until the kernel shows it as a zombie (SIGKILL is delivered
# asynchronously: right after kill() the child may still be running), prints its pid and then waits on stdin
# without reaping it.
PARENT = """
import os, signal, subprocess, sys, time
child = subprocess.Popen(["sleep", "60"], start_new_session=True)
os.killpg(child.pid, signal.SIGKILL)
deadline = time.monotonic() + 10
while time.monotonic() < deadline:
    with open(f"/proc/{child.pid}/stat") as stat:
        if stat.read().rsplit(")", 1)[1].split()[0] == "Z":
            break
    time.sleep(0.01)
print(child.pid, flush=True)
sys.stdin.read()
"""


def test_a_killed_process_its_parent_has_not_reaped_is_restarted(tmp_path: Path) -> None:
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    restarted: int | None = None
    try:
        assert parent.stdout is not None
        zombie = int(parent.stdout.readline())
        assert Path(f"/proc/{zombie}").exists()  # still in the process table: a zombie of `parent`
        assert not alive(zombie)
        record = ProcessRecord("sleeper-0", zombie, ["sleep", "60"], str(tmp_path / "logs" / "sleeper-0.log"))
        write_state(tmp_path, [record], {})
        assert Supervisor(tmp_path).check() == ["sleeper-0"]
        state = read_state(tmp_path)
        restarted = int(state["processes"][0]["pid"])
        assert restarted != zombie and alive(restarted)
        assert state["restarts"] == {"sleeper-0": 1}
    finally:
        if restarted is not None:
            os.killpg(restarted, signal.SIGKILL)
            os.waitpid(restarted, 0)
        parent.communicate("", timeout=10)
