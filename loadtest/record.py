"""Record Locust figures for docs/loadtest.md: start a target, run bounded headless runs at several user counts,
stop the target, and save every run's figures (requests/s, p50/p95/p99, failures, per RPC) as one JSON file.

    python loadtest/record.py embedded --index .skbqa/biomed-sample --users 4 8 --run-time 20s 30s \
        --out bench/results/locust-embedded.json
    python loadtest/record.py stack --index .skbqa/biomed-sample --users 4 8 --run-time 30s 30s \
        --out bench/results/locust-stack.json

`embedded` runs `skbqa serve --index DIR` (every stage in one process); `stack` runs `skbqa stack up` (broker,
Triton, one process per service, Ray Serve) and `stack down` afterwards. Each run is loadtest/headless.py as a
subprocess. The machine is shared: wrap the command in `flock /tmp/skbqa-heavy.lock …` so runs do not overlap.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
HEADLESS = ROOT / "loadtest" / "headless.py"
SKBQA = [sys.executable, "-m", "skbqa"]
SERVING = re.compile(r"serving on ([\d.]+):(\d+)")
START_TIMEOUT_S = 300.0


@contextmanager
def embedded(index: Path) -> Iterator[str]:
    """`skbqa serve --index DIR` on a free loopback port; yields HOST:PORT."""
    # the log goes to a file, not a pipe: nobody drains a pipe during the runs, and a full one blocks the server
    log = Path(tempfile.mkstemp(prefix="skbqa-serve-", suffix=".log")[1])
    with log.open("w") as sink:
        process = subprocess.Popen(
            [*SKBQA, "serve", "--index", str(index), "--host", "127.0.0.1", "--port", "0"],
            stdout=sink,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
        )
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline and process.poll() is None:
            if match := SERVING.search(log.read_text()):
                yield f"{match.group(1)}:{match.group(2)}"
                return
            time.sleep(0.5)
        raise RuntimeError(f"skbqa serve did not report its address; see {log}")
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextmanager
def stack(index: Path, port: int) -> Iterator[str]:
    """`skbqa stack up` in a private state directory, `stack down` on the way out; yields the gateway address."""
    state = Path(tempfile.mkdtemp(prefix="skbqa-stack-"))
    common = ["--dir", str(state)]
    try:
        subprocess.run(
            [*SKBQA, "stack", "up", "--index", str(index), "--port", str(port), *common],
            cwd=ROOT,
            check=True,
            timeout=START_TIMEOUT_S,
        )
        yield f"127.0.0.1:{port}"
    finally:
        subprocess.run([*SKBQA, "stack", "down", *common], cwd=ROOT, check=False, timeout=120)


def headless(host: str, users: int, run_time: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="skbqa-locust-") as tmp:
        summary_path = Path(tmp) / "summary.json"
        load_before = os.getloadavg()[0]
        completed = subprocess.run(
            [
                sys.executable,
                str(HEADLESS),
                "--host",
                host,
                "--users",
                str(users),
                "--spawn-rate",
                str(users),
                "--run-time",
                run_time,
                "--json",
                str(summary_path),
                "--allow-failures",  # record failures as figures instead of losing the run
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
        )
        print(completed.stdout, completed.stderr[-2000:], sep="\n", flush=True)
        if not summary_path.is_file():
            raise SystemExit(f"headless.py wrote no summary (exit {completed.returncode})")
        summary = json.loads(summary_path.read_text())
    return {
        "users": users,
        "spawn_rate": users,
        "run_time": run_time,
        "requests": summary["requests"],
        "failures": summary["failures"],
        "rps": summary["stats"]["Aggregated"]["rps"],
        **{q: summary["stats"]["Aggregated"][q] for q in ("p50", "p95", "p99")},
        "per_rpc": {name: s for name, s in summary["stats"].items() if name != "Aggregated"},
        "failure_samples": summary["failure_samples"],
        "load_average": [round(load_before, 2), round(os.getloadavg()[0], 2)],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("target", choices=("embedded", "stack"))
    parser.add_argument("--index", type=Path, default=ROOT / ".skbqa" / "biomed-sample")
    parser.add_argument("--users", type=int, nargs="+", default=[4, 8])
    parser.add_argument("--run-time", nargs="+", default=["20s", "30s"], help="one per --users, or one for all")
    parser.add_argument("--port", type=int, default=50571, help="stack: gateway port")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    times = args.run_time * len(args.users) if len(args.run_time) == 1 else args.run_time
    if len(times) != len(args.users):
        parser.error("--run-time takes one value, or one per --users value")
    target = embedded(args.index) if args.target == "embedded" else stack(args.index, args.port)
    runs = []
    with target as host:
        for users, run_time in zip(args.users, times, strict=True):
            runs.append(headless(host, users, run_time))
    record = {
        "target": args.target,
        "recorded": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "index": str(args.index),
        "settings": "default strategy, k=20, weights ask=6,stream=3,explain=1, no think time, loadtest/questions.txt",
        "runs": runs,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 1 if any(run["failures"] or not run["requests"] for run in runs) else 0


if __name__ == "__main__":
    sys.exit(main())
