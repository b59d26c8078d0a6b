"""STaRK's native files through the CLI: ingest a processed SKB directory, eval one split of its QA csv."""

from __future__ import annotations

import json
from pathlib import Path

from tests.e2e.test_cli import skbqa
from tests.unit.test_stark_loader import write_qa, write_skb


def test_ingest_stark_directory_and_eval_a_split(tmp_path: Path) -> None:
    skb_dir = write_skb(tmp_path / "prime" / "processed")
    rows = [
        {"id": 10, "query": "Which drug is Aspirin?", "answer_ids": "[2]"},
        {"id": 11, "query": "What disease is asthma, a lung disease?", "answer_ids": "[1]"},
        {"id": 12, "query": "Which gene is PHYHIP?", "answer_ids": "[0]"},
    ]
    csv_path = write_qa(tmp_path / "prime", rows, splits={"test": [10, 11], "train": [12]})
    index = tmp_path / "index"
    done = skbqa("ingest", str(skb_dir), "--index", str(index), "--no-progress")
    assert done.returncode == 0, done.stderr
    assert "indexed 5 nodes and 5 edges" in done.stdout
    out = tmp_path / "report.json"
    done = skbqa(
        "eval",
        "--index",
        str(index),
        "--qa",
        str(csv_path),
        "--split",
        "test",
        "--strategy",
        "bm25",
        "--json",
        str(out),
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text())
    assert report["n"] == 2
    assert report["metrics"]["hit@1"] == 100.0  # each question names its answer, and bm25 finds it first
    bad = skbqa("eval", "--index", str(index), "--qa", str(csv_path), "--split", "nope")
    assert bad.returncode == 2 and bad.stderr.startswith("skbqa: error:")
