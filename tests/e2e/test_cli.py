"""The command line end to end on a generated bundle, with the real ONNX encoder, as a user runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def skbqa(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "skbqa.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=cwd,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )


@pytest.fixture(scope="module")
def synth_index(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("e2e")
    bundle, index = root / "bundle", root / "index"
    done = skbqa("synth", str(bundle), "--nodes", "400", "--seed", "7", "--questions", "30")
    assert done.returncode == 0, done.stderr
    done = skbqa("ingest", str(bundle), "--index", str(index), "--no-progress")
    assert done.returncode == 0, done.stderr
    assert "indexed 400 nodes" in done.stdout
    return bundle, index


def test_ask_prints_ranked_answers_and_json(synth_index: tuple[Path, Path]) -> None:
    bundle, index = synth_index
    first = json.loads((bundle / "qa.jsonl").read_text().splitlines()[0])
    question = first["question"]
    done = skbqa("ask", "--index", str(index), question, "--k", "5", "--json")
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["strategy"] == "af" and len(answer["items"]) == 5  # af is the default strategy
    assert answer["notes"]["parsed"]["target_type"] == first["target_type"]
    assert {"node_id", "name", "type", "score", "why", "scores"} <= set(answer["items"][0])
    text = skbqa("ask", "--index", str(index), question, "--strategy", "bm25", "--k", "3", "--explain")
    assert text.returncode == 0 and " 1. " in text.stdout and "why:" in text.stdout and "scores:" in text.stdout


def test_eval_writes_the_contract_json_and_compares_strategies(
    synth_index: tuple[Path, Path], tmp_path: Path
) -> None:
    bundle, index = synth_index
    out = tmp_path / "report.json"
    done = skbqa(
        "eval",
        "--index",
        str(index),
        "--qa",
        str(bundle / "qa.jsonl"),
        "--strategy",
        "bm25,vss,hybrid",
        "--limit",
        "12",
        "--json",
        str(out),
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text())
    assert report["n"] == 12 and report["baseline"] == "bm25"
    assert set(report["metrics"]) == {"hit@1", "hit@5", "hit@20", "recall@20", "mrr"}
    assert {"p50", "p95", "encode", "vss", "bm25"} <= set(report["latency_ms"]) | set(
        report["strategies"]["hybrid"]["latency_ms"]
    )
    assert report["ratios"]["bm25"]["mrr"] in (1.0, None)
    assert set(report["strategies"]) == {"bm25", "vss", "hybrid"}
    assert report["strategies"]["vss"]["by_target_type"]
    assert "ratios vs bm25" in done.stdout
    # Generated questions have words from their answers' text: lexical retrieval must find some of them.
    assert report["strategies"]["bm25"]["metrics"]["hit@20"] > 0


def test_ask_explain_shows_the_parse_and_the_evidence(synth_index: tuple[Path, Path]) -> None:
    bundle, index = synth_index
    first = json.loads((bundle / "qa.jsonl").read_text().splitlines()[0])
    done = skbqa("ask", "--index", str(index), first["question"], "--k", "3", "--explain", "--option", "l_max=10")
    assert done.returncode == 0, done.stderr
    assert "parsed: answer y:" in done.stdout and "grounding:" in done.stdout and "timings (ms):" in done.stdout
    assert "satisfies (" in done.stdout and "strand: grounded" in done.stdout


def test_eval_runs_an_ablation_in_one_process(synth_index: tuple[Path, Path], tmp_path: Path) -> None:
    bundle, index = synth_index
    out = tmp_path / "ablation.json"
    specs = "bm25,af[steps=1+7],af[steps=1-5],af[steps=1-6],af[steps=1-7],af[steps=1-8,reranker=local]"
    done = skbqa(
        "eval", "--index", str(index), "--qa", str(bundle / "qa.jsonl"), "--strategy", specs, "--limit", "10",
        "--json", str(out),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text())
    assert list(report["strategies"]) == [
        s for s in specs.replace("],", "]|").replace("bm25,", "bm25|").split("|")
    ]
    full = report["strategies"]["af[steps=1-7]"]["metrics"]
    assert full["hit@20"] >= report["strategies"]["af[steps=1+7]"]["metrics"]["hit@20"]
    assert full["hit@1"] > report["strategies"]["bm25"]["metrics"]["hit@1"]


def test_eval_writes_per_question_records_and_a_family_breakdown(
    synth_index: tuple[Path, Path], tmp_path: Path
) -> None:
    bundle, index = synth_index
    lines = (bundle / "qa.jsonl").read_text().splitlines()[:6]
    qa = tmp_path / "qa.jsonl"
    with qa.open("w") as out:
        for i, line in enumerate(lines):
            item = json.loads(line)
            item["meta"] = {"family": "even" if i % 2 == 0 else "odd"}
            out.write(json.dumps(item) + "\n")
    report_path, records_path = tmp_path / "report.json", tmp_path / "per-question.jsonl"
    done = skbqa(
        "eval", "--index", str(index), "--qa", str(qa), "--strategy", "bm25,af", "--json", str(report_path),
        "--per-question", str(records_path),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads(report_path.read_text())
    assert {f: m["n"] for f, m in report["strategies"]["af"]["by_family"].items()} == {"even": 3, "odd": 3}
    assert "af by family:" in done.stdout
    records = [json.loads(line) for line in records_path.read_text().splitlines()]
    assert [(r["strategy"], r["family"]) for r in records[:2]] == [("bm25", "even"), ("bm25", "odd")]
    assert len(records) == 12
    for record in records:
        ranked = [t["id"] for t in record["top"]]
        rank = record["first_correct_rank"]
        assert rank is None or rank > 5 or ranked[rank - 1] in record["answers"]
    af_records = [r for r in records if r["strategy"] == "af"]
    assert all(r["parsed"] is not None and "target" in r["parsed"] for r in af_records)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["ask", "--index", "{index}", "   "], "the question is empty"),
        (["ask", "--index", "{index}", "what?", "--option", "alpha=3"], "alpha must be within"),
        (["ask", "--index", "{index}", "what?", "--option", "alpha"], "is not KEY=VALUE"),
        (["ask", "--index", "{index}", "what?", "--option", "reranker=listwise"], "is not configured"),
        (["ask", "--index", "{missing}", "anything"], "is not an skbqa index"),
        (["eval", "--index", "{index}", "--qa", "{missing}"], "QA file not found"),
        (["eval", "--index", "{index}", "--qa", "{qa}", "--strategy", "magic"], "unknown strategy"),
        (["ingest", "{missing}", "--index", "{missing}"], "bundle directory not found"),
        (["synth", "{missing}", "--nodes", "3"], "nodes"),
    ],
)
def test_bad_input_exits_non_zero_with_one_line(
    synth_index: tuple[Path, Path], tmp_path: Path, args: list[str], message: str
) -> None:
    bundle, index = synth_index
    values = {"index": str(index), "missing": str(tmp_path / "missing"), "qa": str(bundle / "qa.jsonl")}
    done = skbqa(*[a.format(**values) for a in args])
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("skbqa: error:") and message in lines[0], done.stderr
    assert "Traceback" not in done.stderr


def test_demo_answers_the_bundle_questions_and_reuses_a_current_index(
    synth_index: tuple[Path, Path], tmp_path: Path
) -> None:
    bundle, _ = synth_index
    index = tmp_path / "demo-index"
    first = skbqa("demo", "--bundle", str(bundle), "--index", str(index), "--questions", "2")
    assert first.returncode == 0, first.stderr
    assert "ingesting" in first.stdout and first.stdout.count("Q: ") == 2
    assert "ratios against bm25" in first.stdout and "why" not in first.stderr
    second = skbqa("demo", "--bundle", str(bundle), "--index", str(index), "--questions", "1")
    assert second.returncode == 0 and "is up to date" in second.stdout


def test_readme_has_exactly_two_setup_commands_and_they_are_make_targets() -> None:
    readme = (REPO / "README.md").read_text()
    block = readme.split("<!-- setup -->")[1].split("<!-- /setup -->")[0]
    commands = [line.strip() for line in block.splitlines() if line.strip() and not line.startswith("```")]
    assert commands == ["make demo", "make test"]
    makefile = (REPO / "Makefile").read_text()
    assert "\ndemo:" in makefile and "\ntest:" in makefile
    assert "make test" in (REPO / ".ci" / "run").read_text()
