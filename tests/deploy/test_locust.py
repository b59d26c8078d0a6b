"""Bounded headless Locust runs of loadtest/locustfile.py against the embedded server (`skbqa serve`), with the
default question corpus loadtest/questions.txt.

Locust runs as a subprocess through loadtest/headless.py: importing it into pytest (which has imported `ssl`)
crashes with a RecursionError, because Locust patches the process with gevent.
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# find_spec, not importorskip: importing locust here is exactly what crashes (see above)
if importlib.util.find_spec("locust") is None:
    pytest.skip("locust is not installed (pip install 'skbqa[loadtest]')", allow_module_level=True)
pytest.importorskip("grpc")

from loadtest.record import embedded

from tests.conftest import SAMPLE_BUNDLE

ROOT = Path(__file__).resolve().parents[2]
HEADLESS = ROOT / "loadtest" / "headless.py"
QUESTIONS = ROOT / "loadtest" / "questions.txt"


@pytest.fixture(scope="module")
def embedded_server(biomed_sample_engine) -> Iterator[str]:
    """`skbqa serve --index DIR --host 127.0.0.1 --port 0` over the ingested sample (loadtest/record.py's own
    start-up and shutdown, the ones the recorded figures used); yields HOST:PORT."""
    with embedded(biomed_sample_engine.stores.directory) as address:
        yield address


def run_headless(host: str, out: Path, run_time: str, users: int = 4) -> tuple[int, dict, str]:
    env = {
        **os.environ,
        # users, spawn rate, run time and target come from the environment, as in the chart's loadgen pods
        "LOCUST_HOST": host,
        "LOCUST_USERS": str(users),
        "LOCUST_SPAWN_RATE": str(users),
        "LOCUST_RUN_TIME": run_time,
        "SKBQA_LOADTEST_DEADLINE": "20",
    }
    # the locustfile's default corpus (loadtest/questions.txt), as the chart's load generator and docs use it
    env.pop("SKBQA_LOADTEST_QUESTIONS", None)
    summary_path = out / "summary.json"
    completed = subprocess.run(
        [sys.executable, str(HEADLESS), "--csv-dir", str(out), "--json", str(summary_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        cwd=ROOT,
        check=False,
    )
    summary = json.loads(summary_path.read_text()) if summary_path.is_file() else {}
    return completed.returncode, summary, completed.stdout + completed.stderr


def test_bounded_run_against_the_embedded_server_has_no_errors(embedded_server: str, tmp_path: Path) -> None:
    code, summary, output = run_headless(embedded_server, tmp_path, "20s")
    print(output)
    assert summary, output
    stats = summary["stats"]
    assert code == 0, output
    assert summary["failures"] == 0, summary["failure_samples"]
    assert summary["requests"] > 0
    # every weighted RPC was exercised under its own name, with real response times
    for name in ("Ask", "AskStream", "Explain"):
        assert stats[name]["requests"] > 0, name
        assert 0 < stats[name]["p50"] <= stats[name]["p95"] <= stats[name]["p99"], name
    assert stats["Ask"]["requests"] > stats["Explain"]["requests"]  # weights 6 : 1
    assert stats["Aggregated"]["rps"] > 0
    assert (tmp_path / "skbqa_stats.csv").is_file()


def test_default_question_file_is_the_sample_bundles_questions() -> None:
    """The runs above ask loadtest/questions.txt: it must hold the questions of the index they serve."""
    asked = [
        line.strip() for line in QUESTIONS.read_text().splitlines() if line.strip() and not line.startswith("#")
    ]
    with (SAMPLE_BUNDLE / "qa.jsonl").open() as handle:
        bundle = {json.loads(line)["question"] for line in handle if line.strip()}
    assert asked and len(set(asked)) == len(asked)
    assert set(asked) <= bundle


def test_a_run_with_errors_fails(tmp_path: Path) -> None:
    """Nothing listens on the port: every call fails, and the run must say so (exit 1, failures counted)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    code, summary, output = run_headless(f"127.0.0.1:{port}", tmp_path, "3s", users=2)
    assert code == 1, output
    assert summary["requests"] > 0 and summary["failures"] == summary["requests"]
    samples = summary["failure_samples"]
    assert any("UNAVAILABLE" in (s.get("Error") or "") for s in samples), samples
