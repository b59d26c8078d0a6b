"""AF-Retriever ablation on a QA file (the paper's Table 5), parser quality and per-step latency, one process.

Run from the repo root on an ingested index, e.g. the full biomed SKB:
    .venv/bin/python bench/af_ablation.py --index .skbqa/biomed-int8 \\
        --qa ../shared/data/biomed-skb/qa-dev.jsonl --out bench/results/af-ablation-biomed.json

Rows (ratios vs bm25, measured in the same run): bm25, hybrid, steps 1+7 (vector strand with the predicted type),
1-5 (grounded set in discovery order), 1-6 (grounded, ranked), 1-7 (hybrid AF), 1-8 with the local reranker.
Parser figures (encoder parser): target-type accuracy against the QA file's `target_type`, and constant-linking
recall — the gold constants of a question are the gold answers' graph neighbours whose name occurs verbatim in
the question (the longest such names only); a gold constant is linked when it is the first step-4 candidate of
a parsed constant (recall@1) or among its first five (recall@5).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

import numpy as np

from skbqa.engine.embedded import EmbeddedEngine
from skbqa.eval.runner import compare, evaluate_strategy
from skbqa.skb.model import QAItem
from skbqa.skb.qa import load_qa

ROWS = [
    "bm25",
    "hybrid",
    "af[steps=1+7]",
    "af[steps=1-5]",
    "af[steps=1-6]",
    "af[steps=1-7]",
    "af[steps=1-8,reranker=local]",
]
_WORD = re.compile(r"\w+")


def _norm(text: str) -> str:
    return " " + " ".join(_WORD.findall(text.lower())) + " "


def gold_constants(engine: EmbeddedEngine, item: QAItem) -> set[int]:
    """Neighbours of the gold answers named verbatim in the question (maximal names only), as node ids."""
    nodes, graph = engine.stores.nodes, engine.stores.graph
    answers = nodes.positions(item.answers)
    answers = answers[answers >= 0]
    if not answers.size:
        return set()
    question = _norm(item.question)
    neighbours = np.unique(graph.neighbours(answers, None, "both"))
    named = {int(p): _norm(nodes.names[int(p)]) for p in neighbours if _norm(nodes.names[int(p)]) in question}
    maximal = {p for p, n in named.items() if not any(n != m and n in m for m in named.values())}
    return {int(nodes.ids[p]) for p in maximal}


def parser_quality(engine: EmbeddedEngine, items: list[QAItem]) -> dict[str, Any]:
    typed = correct = 0
    linked1 = linked5 = total = 0
    questions_with_gold = 0
    for item in items:
        result = engine.ask(item.question, strategy="af", k=20)
        declared = item.meta.get("target_type")
        if isinstance(declared, str):
            typed += 1
            correct += result.notes["parsed"]["target_type"] == declared
        gold = gold_constants(engine, item)
        if not gold:
            continue
        questions_with_gold += 1
        candidates = result.notes.get("constants", {}).values()
        first = {c["candidates"][0] for c in candidates if c["candidates"]}
        top5 = {i for c in candidates for i in c["candidates"][:5]}
        total += len(gold)
        linked1 += len(gold & first)
        linked5 += len(gold & top5)
    return {
        "target_type_accuracy": round(100 * correct / typed, 2) if typed else None,
        "questions_with_target_type": typed,
        "constant_linking_recall@1": round(100 * linked1 / total, 2) if total else None,
        "constant_linking_recall@5": round(100 * linked5 / total, 2) if total else None,
        "gold_constants": total,
        "questions_with_gold_constants": questions_with_gold,
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--qa", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--rows", default=None, help="';'-separated strategy specs instead of the default rows")
    args = parser.parse_args()
    engine = EmbeddedEngine.open(args.index).warm("af")
    items = load_qa(args.qa)[: args.limit]
    engine.ask("warm up: lexicon and attribute catalog", strategy="af")
    rows = args.rows.split(";") if args.rows else ROWS
    reports = [evaluate_strategy(engine, items, spec) for spec in rows]
    summary = compare(reports)
    quality = parser_quality(engine, items)
    out = {"index": str(args.index), "qa": str(args.qa), "questions": len(items), "parser": quality, **summary}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1))
    width = max(len(r) for r in rows)
    print(f"{'row':<{width}}  hit@1  hit@5 hit@20   r@20    mrr  p50ms  p95ms  ratio hit@1/mrr vs bm25")
    for name, report in summary["strategies"].items():
        m, lat, r = report["metrics"], report["latency_ms"], summary["ratios"][name]
        print(
            f"{name:<{width}} {m['hit@1']:6.2f} {m['hit@5']:6.2f} {m['hit@20']:6.2f} {m['recall@20']:6.2f} "
            f"{m['mrr']:6.2f} {lat['p50']:6.1f} {lat['p95']:6.1f}  {r['hit@1']:.2f} / {r['mrr']:.2f}"
        )
    print("parser:", json.dumps(quality))
    stages = (
        summary["strategies"]["af[steps=1-7]"]["latency_ms"] if "af[steps=1-7]" in summary["strategies"] else {}
    )
    print(
        "af[steps=1-7] per stage p50/p95 ms:",
        {k: (v["p50"], v["p95"]) for k, v in stages.items() if isinstance(v, dict)},
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
