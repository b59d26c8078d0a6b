"""GRAPE on the biomed SKB: train on a synthetic SKB, then evaluate beside bm25, vss and af in one process.

Run from the repo root:
    .venv/bin/python bench/grape_biomed.py --index .skbqa/biomed-int8 \\
        --qa ../shared/data/biomed-skb/qa-dev.jsonl --out bench/results/grape-biomed.json

1. `train_grape` generates a synthetic bibliographic SKB (papers/authors/venues), ingests it with the index's
   encoder, mines training pairs and saves the scorer and judge into INDEX/grape/ — the only thing written into
   the index (skip with --skip-train to reuse saved models);
2. every strategy answers the same questions (depth 100 for MRR), ratios against bm25 measured in the same run;
3. GRAPE's own figures per question: model calls (batched scorer + judge invocations), continuations scored,
   beam expansions, seconds in GRAPE itself, how many answers came from the af fill, and the fallback reasons.
The strategy is registered in the engine here; the CLI's registration lives in engine/embedded.py.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from skbqa.engine.embedded import EmbeddedEngine
from skbqa.eval.runner import compare, evaluate_strategy
from skbqa.query.context import Candidate, QueryContext
from skbqa.skb.qa import load_qa
from skbqa.strategies.af import AfStrategy
from skbqa.strategies.grape.models import load_models
from skbqa.strategies.grape.strategy import GrapeStrategy
from skbqa.strategies.grape.training import TrainSettings, train_grape

STRATEGIES = ["bm25", "vss", "af", "grape"]


class Recording:
    """Delegates to GRAPE and keeps each request's `notes["grape"]`."""

    name = "grape"

    def __init__(self, inner: GrapeStrategy) -> None:
        self.inner = inner
        self.notes: list[dict[str, Any]] = []

    def warm(self, encoder: Any) -> None:
        self.inner.warm(encoder)

    def retrieve(self, query: QueryContext, k: int) -> list[Candidate]:
        out = self.inner.retrieve(query, k)
        self.notes.append(query.notes["grape"])
        return out


def spread(values: list[float]) -> dict[str, float]:
    arr = np.asarray(values, float)
    return {
        "mean": round(float(arr.mean()), 3),
        "p50": round(float(np.percentile(arr, 50)), 3),
        "p95": round(float(np.percentile(arr, 95)), 3),
        "max": round(float(arr.max()), 3),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, default=Path(".skbqa/biomed-int8"))
    parser.add_argument("--qa", type=Path, default=Path("/work/shared/data/biomed-skb/qa-dev.jsonl"))
    parser.add_argument("--out", type=Path, default=Path("bench/results/grape-biomed.json"))
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--synth-nodes", type=int, default=3000)
    parser.add_argument("--questions", type=int, default=400)
    parser.add_argument("--walks", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip-train", action="store_true", help="reuse the models already in INDEX/grape/")
    args = parser.parse_args()

    if args.skip_train:
        training = load_models(args.index).manifest
    else:
        settings = TrainSettings(
            synth_nodes=args.synth_nodes, questions=args.questions, walks=args.walks, seed=args.seed
        )
        training = train_grape(args.index, settings, progress=False)
    print(f"training: {json.dumps(training['seconds'])}; held-out pairs {json.dumps(training['heldout_pairs'])}")

    engine = EmbeddedEngine.open(args.index)
    af = engine.strategies["af"]
    assert isinstance(af, AfStrategy)
    grape = Recording(GrapeStrategy(engine.stores, af))
    engine.strategies["grape"] = grape
    engine.warm()
    items = load_qa(args.qa)[: args.limit]
    started = time.perf_counter()
    reports = [evaluate_strategy(engine, items, s, depth=100) for s in STRATEGIES]
    summary = compare(reports)
    notes = grape.notes
    summary["grape"] = {
        "model_calls": spread([n["model_calls"] for n in notes]),
        "scored": spread([n["scored"] for n in notes]),
        "expansions": spread([n["expansions"] for n in notes]),
        "grape_seconds": spread([n["seconds"] for n in notes]),
        "filled_from_af": spread([n["filled"] for n in notes]),
        "fallbacks": dict(Counter(str(n["fallback"]) for n in notes)),
        "questions": len(notes),
    }
    summary["training"] = training
    summary["eval_seconds"] = round(time.perf_counter() - started, 1)

    names = ("hit@1", "hit@5", "recall@20", "mrr")
    print(f"{'strategy':<8} {'n':>4} " + " ".join(f"{n:>9}" for n in names) + f" {'p50 ms':>8} {'p95 ms':>8}")
    for name, report in summary["strategies"].items():
        m, lat = report["metrics"], report["latency_ms"]
        cells = " ".join(f"{m[n]:>9.2f}" for n in names)
        print(f"{name:<8} {report['n']:>4} {cells} {lat['p50']:>8.1f} {lat['p95']:>8.1f}")
    print(f"grape per question: {json.dumps(summary['grape'])}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(summary, indent=2))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
