"""What storing vectors in fewer bits costs on real data: float32 vs float16 vs 8-bit scalar quantisation.

    nice -n 19 .venv/bin/python bench/quantization.py --index .skbqa/biomed-int8 \
        --qa ../shared/data/biomed-skb/qa-dev.jsonl

The index (MiniLM vectors, float32) is opened read-only; each variant rounds every stored vector of every set the
way that storage would (float16: IEEE half; sq8: faiss' QT_8bit, per-dimension min/max in 256 steps) and the
same questions are answered by `vss` and `af` over the rounded vectors, in one process: metrics per variant, the
change against float32, and the overlap of the top-20 lists with float32's.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from skbqa.engine.embedded import EmbeddedEngine
from skbqa.eval.metrics import mean_metrics, question_metrics
from skbqa.models.index_encoder import encoder_for_index
from skbqa.skb.qa import load_qa
from skbqa.stores.index import open_index


def sq8(vectors: np.ndarray) -> np.ndarray:
    """faiss ScalarQuantizer QT_8bit round trip: per-dimension range split into 256 steps (cell centres)."""
    low, high = vectors.min(axis=0), vectors.max(axis=0)
    span = np.where(high > low, high - low, 1.0)
    codes = np.clip(np.floor((vectors - low) / span * 255.0 + 0.5), 0, 255)
    return (low + codes / 255.0 * span).astype(np.float32)


ROUNDINGS = {
    "float32": lambda v: v,
    "float16": lambda v: v.astype(np.float16).astype(np.float32),
    "sq8": sq8,
}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--index", type=Path, default=Path(".skbqa/biomed-int8"))
    parser.add_argument("--qa", type=Path, default=Path("../shared/data/biomed-skb/qa-dev.jsonl"))
    parser.add_argument("--out", type=Path, default=Path("bench/results/quantization-biomed.json"))
    args = parser.parse_args()

    items = load_qa(args.qa)
    result: dict = {"index": str(args.index), "questions": len(items), "variants": {}}
    lists: dict[str, dict[str, list[list[int]]]] = {}
    for variant, rounding in ROUNDINGS.items():
        stores = open_index(args.index, vector_dtype="float32")
        for index in stores.vectors.values():
            index._vectors = rounding(index._vectors)  # a benchmark rewriting the stored values
        engine = EmbeddedEngine(stores, encoder_for_index(args.index, stores.manifest["encoder"]["name"])).warm(
            "af"
        )
        lists[variant] = {}
        entry: dict = {}
        for strategy in ("vss", "af"):
            ranked = [[a.node_id for a in engine.ask(i.question, strategy=strategy, k=20).items] for i in items]
            lists[variant][strategy] = ranked
            entry[strategy] = mean_metrics(
                [question_metrics(r, i.answers) for r, i in zip(ranked, items, strict=True)]
            )
            if variant != "float32":
                base = lists["float32"][strategy]
                entry[strategy]["top20_overlap_vs_float32"] = round(
                    float(
                        np.mean([len(set(a) & set(b)) / max(len(b), 1) for a, b in zip(ranked, base, strict=True)])
                    ),
                    4,
                )
                entry[strategy]["delta_vs_float32"] = {
                    m: round(entry[strategy][m] - result["variants"]["float32"][strategy][m], 2)
                    for m in ("hit@1", "recall@20", "mrr")
                }
            print(variant, strategy, entry[strategy], flush=True)
        result["variants"][variant] = entry
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
