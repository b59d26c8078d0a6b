"""The fault matrix: one row per fault test, computed from what every call of that test actually got.

A row counts the calls the test sent and sorts each into exactly one outcome:

- ``answered``: a final answer whose ranking (node ids) equals the reference (the embedded engine's, or the one
  the test names; a row whose fault leaves no reference, like an LLM answering garbage, says so and counts any
  non-empty ranking);
- ``clear_status``: a non-OK status that tells the client what happened (UNAVAILABLE, INTERNAL, ...), by code;
- ``lost``: everything else — no answer in time (the client's deadline: DEADLINE_EXCEEDED is counted as lost,
  never as a clear status, because a hang ends the same way), an UNKNOWN/CANCELLED status, a stream that ended
  without a final answer, or a wrong ranking.

``duplicates_delivered`` counts final answers beyond the first that reached a client on one call (AskStream shows
every event, so a second final would be seen); ``duplicates_dropped`` is what the service side counted and
dropped (the gateway's and the stages' ``skbqa_messages_total{outcome="duplicate"}``), when the test measured it.

Rows are kept in `ROWS`; when ``$SKBQA_FAULT_MATRIX_OUT`` names a file (bench/results/fault-matrix.json) each
row is merged into it, replacing an earlier row of the same fault, so running the three fault modules one after
another builds the whole matrix (bench/fault_matrix.py does that and prints it as a table).
"""

from __future__ import annotations

import json
import os
import platform
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

OUT_ENV = "SKBQA_FAULT_MATRIX_OUT"
# Statuses that say what happened. DEADLINE_EXCEEDED is deliberately absent: a lost request ends that way too.
CLEAR_STATUSES = frozenset(
    {"UNAVAILABLE", "INTERNAL", "RESOURCE_EXHAUSTED", "INVALID_ARGUMENT", "FAILED_PRECONDITION", "ABORTED"}
)

ROWS: list[dict[str, Any]] = []


@dataclass
class Call:
    """What one client call got: the final rankings it received (one list per final event), the partial events,
    and its status when it ended non-OK."""

    index: int
    request_id: str = ""  # chosen by the client, so a lost call can be traced through the topics
    finals: list[list[int]] = field(default_factory=list)
    partials: int = 0
    status: str | None = None  # grpc.StatusCode name; None = ended OK
    detail: str = ""  # the status's message (the gateway says whether the bus had taken the request)
    notes: list[dict[str, Any]] = field(default_factory=list)  # each final's notes_json, parsed
    degraded: list[bool] = field(default_factory=list)
    began: float = 0.0  # time.monotonic() at the call's start and end
    ended: float = 0.0


@dataclass
class Tally:
    sent: int
    answered: int
    clear_status: dict[str, int]
    lost: int
    lost_reasons: dict[str, int]
    duplicates_delivered: int

    @property
    def accounted(self) -> bool:
        return self.answered + sum(self.clear_status.values()) + self.lost == self.sent


def tally(calls: Sequence[Call], expected: Mapping[int, Sequence[int] | None]) -> Tally:
    """Sort each call into answered / clear status / lost; `expected[call.index]` is its reference ranking, or None
    when there is none to compare with (then any non-empty ranking counts as answered; the row must say so)."""
    answered, lost = 0, 0
    clear: Counter[str] = Counter()
    reasons: Counter[str] = Counter()
    duplicates = 0
    for call in calls:
        duplicates += max(0, len(call.finals) - 1)
        if call.status is not None:
            if call.status in CLEAR_STATUSES:
                clear[call.status] += 1
            else:
                lost += 1
                reasons["deadline (no answer in time)" if call.status == "DEADLINE_EXCEEDED" else call.status] += 1
        elif not call.finals:
            lost += 1
            reasons["stream ended without a final answer"] += 1
        elif expected[call.index] is None and not call.finals[0]:
            lost += 1
            reasons["empty answer"] += 1
        elif expected[call.index] is not None and list(call.finals[0]) != list(expected[call.index] or []):
            lost += 1
            reasons["wrong ranking"] += 1
        else:
            answered += 1
    return Tally(len(calls), answered, dict(clear), lost, dict(reasons), duplicates)


def record(
    fault: str,
    outcome: str,
    result: Tally,
    *,
    seconds: float,
    duplicates_dropped: int | None = None,
    module: str = "",
    **evidence: Any,
) -> dict[str, Any]:
    """Add the row (and merge it into $SKBQA_FAULT_MATRIX_OUT when set); returns it."""
    row: dict[str, Any] = {
        "fault": fault,
        "outcome": outcome,
        "sent": result.sent,
        "answered": result.answered,
        "clear_status": result.clear_status,
        "lost": result.lost,
        "lost_reasons": result.lost_reasons,
        "duplicates_delivered": result.duplicates_delivered,
        "duplicates_dropped": duplicates_dropped,
        "seconds": round(seconds, 1),
        "test": module,
        "evidence": evidence,
    }
    ROWS.append(row)
    out = os.environ.get(OUT_ENV)
    if out:
        _merge(Path(out), row)
    return row


def _merge(path: Path, row: dict[str, Any]) -> None:
    document: dict[str, Any] = {}
    if path.is_file():
        try:
            document = json.loads(path.read_text())
        except json.JSONDecodeError:
            document = {}
    rows = [r for r in document.get("rows", []) if r.get("fault") != row["fault"]] + [row]
    document = {
        "about": "fault x outcome x requests (sent / answered correctly / clear status / lost); "
        "written by the fault tests (tests/integration/test_faults_*.py) with " + OUT_ENV + " set",
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "updated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "rows": rows,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(document, indent=2) + "\n")
    tmp.replace(path)


def markdown(rows: Iterable[Mapping[str, Any]]) -> str:
    """The matrix as a Markdown table (docs/faults.md)."""
    lines = [
        "| fault | outcome | sent | answered | clear status | lost | duplicates delivered / dropped | s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        clear = ", ".join(f"{n} {code}" for code, n in sorted(r["clear_status"].items())) or "0"
        lost = str(r["lost"]) + (
            " (" + ", ".join(f"{n} {why}" for why, n in r["lost_reasons"].items()) + ")" if r["lost"] else ""
        )
        dropped = "—" if r.get("duplicates_dropped") is None else str(r["duplicates_dropped"])
        lines.append(
            f"| {r['fault']} | {r['outcome']} | {r['sent']} | {r['answered']} | {clear} | {lost} "
            f"| {r['duplicates_delivered']} / {dropped} | {r['seconds']} |"
        )
    return "\n".join(lines)
