"""The supervised matrix's row for a kill -9 of the supervisor itself (docs/faults.md).

Nothing restarts the supervisor: it is the stack's process manager, and a manager of the manager would only move
the question one level up (under Kubernetes the kubelet plays its part, and systemd the kubelet's). So the row
checks the behaviour the stack promises instead:

- its children keep serving: every process started by the stack, or restarted by the supervisor, runs in a
  session of its own, so the supervisor's death signals none of them — same pids, all healthy, calls answered;
- `skbqa stack status` still works and shows the supervisor `exited`;
- a process that dies meanwhile stays down (nobody watches it): Prometheus, when the stack has it, is killed to
  show it — the one process whose absence no call notices;
- `skbqa stack restart supervisor` (the operator's step) starts it again, and its first pass restarts what died
  meanwhile;
- `skbqa stack down` works without it (the bench stops one stack with its supervisor killed, and checks that no
  process of the recorded groups is left: `SupervisedStack.down`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from tests.integration.supervised_stack import SupervisedStack, wait_for

SUPERVISOR = "supervisor"
WATCH_S = 8.0  # how long the children are watched with nobody supervising them
BYSTANDER = "prometheus"  # killed while the supervisor is down, when the stack runs it


def supervisor_killed(
    stack: SupervisedStack, answered_normally: Callable[[], bool], within_s: float
) -> dict[str, Any]:
    """Kill -9 the supervisor and check what the module docstring lists; the row's evidence."""
    evidence: dict[str, Any] = {"restarts_before": stack.restarts(SUPERVISOR)}
    children = {r["name"]: int(r["pid"]) for r in stack.state()["processes"] if r["name"] != SUPERVISOR}
    killed_at = time.monotonic()

    def since() -> float:
        return round(time.monotonic() - killed_at, 1)

    evidence["killed_pid"] = stack.kill(SUPERVISOR)
    evidence["status_says_exited"] = wait_for(lambda: stack.status()[SUPERVISOR][0] == "exited", 30)
    normal = wait_for(answered_normally, within_s, every_s=0.5)
    evidence["answering_normally_after_s"] = since() if normal else None
    bystander = BYSTANDER if BYSTANDER in children else None
    if bystander:
        evidence["bystander_killed_pid"] = stack.kill(bystander)
    time.sleep(max(0.0, WATCH_S - (time.monotonic() - killed_at)))
    others = {name: pid for name, pid in children.items() if name != bystander}
    evidence["children_kept_their_pids"] = all(int(stack.record(n)["pid"]) == pid for n, pid in others.items())
    evidence["children_healthy"] = all(stack.healthy(name) for name in others)
    if bystander:  # nobody restarted it: the supervisor was the only one watching
        evidence["bystander_stayed_down"] = int(stack.record(bystander)["pid"]) == children[bystander]
    done = stack.restart(SUPERVISOR)
    evidence["stack_restart_supervisor"] = (done.stdout + done.stderr).strip()[-300:]
    back = wait_for(lambda: stack.status()[SUPERVISOR][0] == "running", 30)
    evidence["restarted_after_s"] = since() if back else None  # by the operator's `stack restart supervisor`
    evidence["new_pid"] = int(stack.record(SUPERVISOR)["pid"]) if back else None
    if bystander:
        caught_up = wait_for(lambda: int(stack.record(bystander)["pid"]) != children[bystander], 30)
        caught_up = caught_up and wait_for(lambda: stack.healthy(bystander), 60)
        evidence["bystander_restarted_after_s"] = since() if caught_up else None
    normal = wait_for(answered_normally, within_s, every_s=0.5)
    evidence["recovered_after_s"] = since() if back and normal else None
    return evidence


def supervisor_outcome(evidence: dict[str, Any]) -> str:
    """The outcome column of the supervisor's row."""
    kept = evidence.get("children_kept_their_pids") and evidence.get("children_healthy")
    parts = ["children kept serving (same pids, healthy)" if kept else "children NOT all serving"]
    if "bystander_stayed_down" in evidence:
        parts.append(
            f"{BYSTANDER} killed meanwhile "
            + ("stayed down" if evidence["bystander_stayed_down"] else "was restarted by someone")
            + (
                f", restarted by the new supervisor ({evidence['bystander_restarted_after_s']} s after the kill)"
                if evidence.get("bystander_restarted_after_s") is not None
                else ", NOT restarted by the new supervisor"
            )
        )
    if evidence.get("restarted_after_s") is None:
        parts.append("`stack restart supervisor` did NOT bring it back")
    else:
        parts.append(f"back by `stack restart supervisor` after {evidence['restarted_after_s']} s")
    return "; ".join(parts)
