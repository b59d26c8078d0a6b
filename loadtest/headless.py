"""Headless Locust run of loadtest/locustfile.py with a figures summary: requests/s, p50/p95/p99, failures.

    python loadtest/headless.py --host 127.0.0.1:50051 --users 4 --spawn-rate 4 --run-time 20s \
        [--csv-dir loadtest/results] [--json loadtest/results/summary.json] [--allow-failures]

Users, spawn rate, run time and host default to LOCUST_USERS, LOCUST_SPAWN_RATE, LOCUST_RUN_TIME and LOCUST_HOST
(the variables Locust itself reads); every SKBQA_LOADTEST_* variable passes through to the locustfile.
Locust runs as a subprocess (it patches the process with gevent); its final JSON statistics are read back (the
CSV files, written once a second, are kept too). Exit status:
0 when requests were made and none failed, 1 otherwise (2 for bad usage).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
LOCUSTFILE = HERE / "locustfile.py"
QUANTILES = {"p50": 0.50, "p95": 0.95, "p99": 0.99}


def percentile(response_times: dict[int, int], count: int, fraction: float) -> int:
    """Locust's own percentile over its rounded response-time histogram (stats.calculate_response_time_percentile)."""
    wanted = int(count * fraction)
    seen = 0
    for value in sorted(response_times, reverse=True):
        seen += response_times[value]
        if count - seen <= wanted:
            return value
    return 0


def _figures(
    response_times: dict[int, int], requests: int, failures: int, seconds: float, total_ms: float, max_ms: float
) -> dict[str, Any]:
    timed = sum(response_times.values())
    return {
        "requests": requests,
        "failures": failures,
        "rps": round(requests / seconds, 2) if seconds > 0 else 0.0,
        "avg_ms": round(total_ms / timed, 1) if timed else 0.0,
        **{key: percentile(response_times, timed, fraction) for key, fraction in QUANTILES.items()},
        "max_ms": round(max_ms, 1),
    }


def read_stats(stats_json: Path) -> dict[str, dict[str, Any]]:
    """Locust's final `--json-file` statistics as {name: figures}, plus the totals as "Aggregated"."""
    entries = json.loads(stats_json.read_text())
    stats = {}
    merged: dict[int, int] = {}
    start, end = float("inf"), 0.0
    for entry in sorted(entries, key=lambda e: e["name"]):
        times = {int(k): int(v) for k, v in entry["response_times"].items()}
        for value, count in times.items():
            merged[value] = merged.get(value, 0) + count
        start, end = min(start, entry["start_time"]), max(end, entry["last_request_timestamp"] or 0.0)
        stats[entry["name"]] = _figures(
            times,
            entry["num_requests"],
            entry["num_failures"],
            (entry["last_request_timestamp"] or entry["start_time"]) - entry["start_time"],
            entry["total_response_time"],
            entry["max_response_time"] or 0.0,
        )
    stats["Aggregated"] = _figures(
        merged,
        sum(e["num_requests"] for e in entries),
        sum(e["num_failures"] for e in entries),
        end - start if entries else 0.0,
        sum(e["total_response_time"] for e in entries),
        max((e["max_response_time"] or 0.0 for e in entries), default=0.0),
    )
    return stats


def read_failures(failures_csv: Path) -> list[dict[str, str]]:
    if not failures_csv.is_file():
        return []
    with failures_csv.open(newline="") as handle:
        return list(csv.DictReader(handle))


def format_table(stats: dict[str, dict[str, Any]]) -> str:
    header = f"{'name':<12} {'requests':>9} {'failures':>9} {'req/s':>8} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8}"
    lines = [header, "-" * len(header)]
    for name, s in stats.items():
        lines.append(
            f"{name:<12} {s['requests']:>9} {s['failures']:>9} {s['rps']:>8.2f} "
            f"{s['p50']:>8.0f} {s['p95']:>8.0f} {s['p99']:>8.0f}"
        )
    return "\n".join(lines)


def run(args: argparse.Namespace) -> dict[str, Any]:
    csv_dir = Path(args.csv_dir) if args.csv_dir else Path(tempfile.mkdtemp(prefix="skbqa-locust-"))
    csv_dir.mkdir(parents=True, exist_ok=True)
    prefix = csv_dir / "skbqa"
    command = [
        sys.executable,
        "-m",
        "locust",
        "--locustfile",
        str(LOCUSTFILE),
        "--headless",
        "--only-summary",
        "--host",
        args.host,
        "--users",
        str(args.users),
        "--spawn-rate",
        str(args.spawn_rate),
        "--run-time",
        args.run_time,
        "--stop-timeout",
        str(args.stop_timeout),
        "--csv",
        str(prefix),
        "--json-file",
        str(prefix),  # Locust appends ".json"
        "--loglevel",
        "WARNING",
    ]
    completed = subprocess.run(command, capture_output=True, text=True, timeout=args.timeout, check=False)
    stats_json = prefix.with_suffix(".json")
    if not stats_json.is_file():
        raise SystemExit(f"locust wrote no statistics (exit {completed.returncode}):\n{completed.stderr[-3000:]}")
    stats = read_stats(stats_json)
    total = stats.get("Aggregated", {"requests": 0, "failures": 0})
    return {
        "host": args.host,
        "users": args.users,
        "spawn_rate": args.spawn_rate,
        "run_time": args.run_time,
        "locust_exit_code": completed.returncode,
        "requests": total["requests"],
        "failures": total["failures"],
        "stats": stats,
        "failure_samples": read_failures(prefix.with_name(prefix.name + "_failures.csv"))[:10],
        "csv_prefix": str(prefix),
        "log_tail": completed.stderr[-2000:],
    }


def main(argv: list[str] | None = None) -> int:
    env = os.environ
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default=env.get("LOCUST_HOST"), help="gateway HOST:PORT (LOCUST_HOST)")
    parser.add_argument("--users", type=int, default=int(env.get("LOCUST_USERS") or 4), help="LOCUST_USERS, 4")
    parser.add_argument(
        "--spawn-rate", type=float, default=float(env.get("LOCUST_SPAWN_RATE") or 4), help="LOCUST_SPAWN_RATE, 4"
    )
    parser.add_argument("--run-time", default=env.get("LOCUST_RUN_TIME") or "20s", help="LOCUST_RUN_TIME, 20s")
    parser.add_argument("--stop-timeout", type=int, default=10, help="seconds in-flight calls get to finish")
    parser.add_argument("--csv-dir", default=None, help="keep Locust's CSV files here (default: a temp dir)")
    parser.add_argument("--json", default=None, help="also write the summary as JSON")
    parser.add_argument("--timeout", type=float, default=600.0, help="kill Locust after this many seconds")
    parser.add_argument("--allow-failures", action="store_true", help="exit 0 even when requests failed")
    args = parser.parse_args(argv)
    if not args.host:
        parser.error("--host (or LOCUST_HOST) is required")
    summary = run(args)
    print(format_table(summary["stats"]))
    for sample in summary["failure_samples"]:
        print(f"failure: {sample.get('Name')}: {sample.get('Error')} (x{sample.get('Occurrences')})")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(summary, indent=2) + "\n")
    ok = summary["requests"] > 0 and (summary["failures"] == 0 or args.allow_failures)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
