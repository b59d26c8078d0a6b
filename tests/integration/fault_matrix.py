"""Collects the fault tests' outcomes (fault, outcome, requests sent / answered / with a clear status / lost) and
writes them as one table: $SKBQA_FAULT_MATRIX (default /tmp/skbqa-fault-matrix.json)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

ROWS: list[dict[str, Any]] = []


def record(fault: str, outcome: str, sent: int, answered: int, clear_status: int = 0, **extra: Any) -> None:
    lost = sent - answered - clear_status
    ROWS.append(
        {"fault": fault, "outcome": outcome, "sent": sent, "answered": answered, "clear_status": clear_status,
         "lost": lost, **extra}
    )  # fmt: skip
    path = Path(os.environ.get("SKBQA_FAULT_MATRIX", "/tmp/skbqa-fault-matrix.json"))
    existing = json.loads(path.read_text()) if path.is_file() else []
    existing = [row for row in existing if row["fault"] != fault] + [ROWS[-1]]
    path.write_text(json.dumps(existing, indent=2))
