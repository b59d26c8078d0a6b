"""The fault matrix (docs/faults.md): run the three fault modules with SKBQA_FAULT_MATRIX_OUT set, then print the
recorded rows as a Markdown table.

    python bench/fault_matrix.py            # run the tests (~10 min on 2 cores), write bench/results/fault-matrix.json
    python bench/fault_matrix.py --print    # only print the table of an existing file

The tests start real servers (tansu on s3 storage served by moto, Triton, the services); on a shared machine wrap the run in
``flock /tmp/skbqa-heavy.lock`` so that heavy runs do not overlap. Each module's wall time is added to the file.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.integration.fault_matrix import OUT_ENV, markdown  # noqa: E402

MODULES = [
    "tests/integration/test_faults_local.py",
    "tests/integration/test_faults_broker.py",
    "tests/integration/test_faults_stack.py",
]
DEFAULT_OUT = ROOT / "bench" / "results" / "fault-matrix.json"
BASETEMP = Path(os.environ.get("TMPDIR", "/tmp")) / "skbqa-fault-matrix"


def run(out: Path) -> int:
    out.unlink(missing_ok=True)  # a fresh matrix: rows of an earlier run must not survive a failed test
    BASETEMP.mkdir(parents=True, exist_ok=True)  # pytest creates --basetemp itself, but not its parent
    walls: dict[str, float] = {}
    failed = 0
    for module in MODULES:
        began = time.monotonic()
        code = subprocess.call(
            # a base temp of its own: the stacks' logs stay there, and other pytest runs cannot rotate it away
            [
                sys.executable,
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:cacheprovider",
                f"--basetemp={BASETEMP / Path(module).stem}",
                "-m",
                "",  # the stack modules are marked slow; run every test of each module
                module,
            ],
            cwd=ROOT,
            env={**os.environ, OUT_ENV: str(out)},
        )
        walls[module] = round(time.monotonic() - began, 1)
        failed += code != 0
    document = json.loads(out.read_text()) if out.is_file() else {"rows": []}
    document["module_wall_seconds"] = walls
    out.write_text(json.dumps(document, indent=2) + "\n")
    return failed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--print", action="store_true", help="print the table of --out without running the tests")
    args = parser.parse_args()
    failed = 0 if args.print else run(args.out)
    document = json.loads(args.out.read_text())
    print(markdown(document["rows"]))
    if "module_wall_seconds" in document:
        print("\nwall time per module (s):", json.dumps(document["module_wall_seconds"]))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
