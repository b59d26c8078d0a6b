"""Several QA sets × several strategies in one process, with hit@1 / recall@20 / MRR per set and per family
(`meta.family`) and ratios against the first strategy (BM25 by default) measured in the same run.

    python bench/heldout_eval.py --index .skbqa/biomed --qa paraphrases=bench/heldout/biomed/qa.jsonl \\
        --qa dev=../shared/data/biomed-skb/qa-dev.jsonl --out bench/results/heldout-biomed.json

It uses only the engine's `ask`, so the same script measures an older checkout (PYTHONPATH=<old>/services) for the
before/after tables.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from skbqa.eval.metrics import mean_metrics, question_metrics
from skbqa.eval.specs import parse_spec, split_specs
from skbqa.skb.qa import load_qa

try:
    from skbqa.engine.embedded import EmbeddedEngine
except ImportError:  # an older layout (the "before" side of a comparison)
    from skbqa.embedded.engine import EmbeddedEngine  # type: ignore[no-redef]

DEFAULT_STRATEGIES = "bm25,vss,hybrid,af"


def family(meta: dict[str, Any]) -> str:
    nested = meta.get("meta")
    value = nested.get("family") if isinstance(nested, dict) else meta.get("family")
    return str(value) if value else "all"


def run_set(engine: Any, path: Path, strategies: list[str], depth: int) -> dict[str, Any]:
    items = load_qa(path)
    out: dict[str, Any] = {"n": len(items), "strategies": {}}
    for strategy in strategies:
        name, options = parse_spec(strategy)
        rows: list[dict[str, float]] = []
        per_family: dict[str, list[dict[str, float]]] = defaultdict(list)
        latency: list[float] = []
        for item in items:
            started = time.perf_counter()
            result = engine.ask(item.question, strategy=name, k=depth, options=options)
            latency.append((time.perf_counter() - started) * 1000)
            row = question_metrics([a.node_id for a in result.items], item.answers)
            rows.append(row)
            per_family[family(item.meta)].append(row)
        out["strategies"][strategy] = {
            "metrics": mean_metrics(rows),
            "p50_ms": round(statistics.median(latency), 2),
            "by_family": {f: {"n": len(r), **mean_metrics(r)} for f, r in sorted(per_family.items())},
        }
    base = out["strategies"][strategies[0]]["metrics"]["hit@1"]
    for report in out["strategies"].values():
        report["hit@1_vs_first"] = round(report["metrics"]["hit@1"] / base, 2) if base else None
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--qa", action="append", required=True, metavar="NAME=FILE")
    parser.add_argument("--strategy", default=DEFAULT_STRATEGIES)
    parser.add_argument("--depth", type=int, default=100)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    strategies = split_specs(args.strategy)
    engine = EmbeddedEngine.open(args.index)
    engine.warm(*{parse_spec(s)[0] for s in strategies})
    report: dict[str, Any] = {"index": str(args.index), "strategies": strategies, "sets": {}}
    for spec in args.qa:
        name, _, file = spec.partition("=")
        result = run_set(engine, Path(file), strategies, args.depth)
        report["sets"][name] = result
        print(f"== {name} (n={result['n']})")
        families = sorted({f for s in result["strategies"].values() for f in s["by_family"]})
        header = f"{'strategy':<22} {'hit@1':>6} {'r@20':>6} {'mrr':>6} {'p50':>6} " + " ".join(
            f"{f[:12]:>12}" for f in families
        )
        print(header)
        for strategy, s in result["strategies"].items():
            m = s["metrics"]
            cells = " ".join(f"{s['by_family'].get(f, {}).get('hit@1', float('nan')):>12.1f}" for f in families)
            print(
                f"{strategy:<10} {m['hit@1']:>6.1f} {m['recall@20']:>6.1f} {m['mrr']:>6.1f} {s['p50_ms']:>6.1f} {cells}"
            )
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
