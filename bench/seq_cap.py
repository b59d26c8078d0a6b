"""Does capping the encoder at 128 tokens cost accuracy? Re-encode the relation documents at a longer cap and
compare `vss` and `hybrid` on the dev questions against the index as built, in the same process.

    .venv/bin/python bench/seq_cap.py --index .skbqa/biomed-int8 --qa ../shared/data/biomed-skb/qa-dev.jsonl
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
from tokenizers import Tokenizer

from skbqa.engine.embedded import EmbeddedEngine, build_strategies
from skbqa.eval.runner import compare, evaluate_strategy
from skbqa.ingest.documents import relation_documents
from skbqa.models.local_encoder import load_encoder, packaged_model_dir
from skbqa.skb.qa import load_qa
from skbqa.stores.vectors.exact import ExactIndex


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--qa", type=Path, required=True)
    parser.add_argument("--long", type=int, default=256)
    parser.add_argument("--out", type=Path, default=Path("bench/results/seq-cap.json"))
    args = parser.parse_args()

    engine = EmbeddedEngine.open(args.index)
    items = load_qa(args.qa)
    runtime = engine.encoder.name.split("/")[1]
    texts = relation_documents(engine.stores.nodes, engine.stores.graph)
    tokenizer = Tokenizer.from_file(str(packaged_model_dir() / "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    lengths = np.array([len(e.ids) for e in tokenizer.encode_batch(texts)])
    over = float((lengths > 128).mean())
    print(f"relation documents over 128 tokens: {over:.1%}; over {args.long}: {(lengths > args.long).mean():.1%}")

    base = [evaluate_strategy(engine, items, s) for s in ("vss", "hybrid")]
    started = time.perf_counter()
    vectors = load_encoder(runtime, max_length=args.long).encode(texts, progress=f"encode max{args.long}")
    seconds = time.perf_counter() - started
    longer = ExactIndex(vectors.shape[1])
    longer.add(np.arange(len(texts)), vectors, engine.stores.nodes.types)
    engine.stores.vectors["relations"] = longer
    engine.strategies = build_strategies(engine.stores)
    long_reports = [evaluate_strategy(engine, items, s) for s in ("vss", "hybrid")]
    for report in long_reports:
        report.strategy = f"{report.strategy}@{args.long}"
    summary = compare([base[0], long_reports[0], base[1], long_reports[1]])
    result = {
        "fraction_over_128_tokens": over,
        "encode_seconds_long": round(seconds, 1),
        "metrics": {name: r["metrics"] for name, r in summary["strategies"].items()},
    }
    for name, metrics in result["metrics"].items():
        print(f"{name:<12} " + "  ".join(f"{k} {v:5.1f}" for k, v in metrics.items()))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
