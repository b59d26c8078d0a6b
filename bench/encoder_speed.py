"""Encoder throughput: ONNX Runtime int8 (and fp32) vs plain torch sentence-transformers, in one process.

    nice -n 19 .venv/bin/python bench/encoder_speed.py --bundle ../shared/data/biomed-skb --rounds 5

The runtimes encode the same sample of node documents (the texts ingest embeds) in interleaved rounds — torch,
onnx, onnx-int8, torch, ... — so a load change on a shared machine hits every runtime alike; the report gives
each runtime's median texts/s, the ratio of medians against torch (the baseline) and the per-round ratios, so the
spread is visible. Both sides cap texts at 128 tokens and use every core (torch: intra-op threads; ONNX: one
single-threaded session per core running whole length-sorted batches).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from skbqa.ingest.documents import embedded_texts
from skbqa.models.local_encoder import load_encoder
from skbqa.skb.loaders import load_skb
from skbqa.stores.graph.csr import CsrGraph
from skbqa.stores.nodes import NodeTable


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bundle", type=Path, default=Path("../shared/data/biomed-skb"))
    parser.add_argument("--sample", type=int, default=600, help="documents (and as many relation documents)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--runtimes", default="torch,onnx,onnx-int8")
    parser.add_argument("--out", type=Path, default=Path("bench/results/encoder-speed.json"))
    args = parser.parse_args()

    skb = load_skb(args.bundle)
    nodes = NodeTable.from_skb(skb)
    graph = CsrGraph.build(skb.num_nodes, skb.schema.edge_names, skb.edge_src, skb.edge_dst, skb.edge_type)
    picks = np.sort(np.random.default_rng(0).choice(len(nodes), args.sample, replace=False))
    texts = embedded_texts("document", nodes, graph, picks) + embedded_texts("relations", nodes, graph, picks)
    runtimes = args.runtimes.split(",")
    encoders = {name: load_encoder(name) for name in runtimes}
    for encoder in encoders.values():
        encoder.encode(texts[:16])  # load and warm up outside the timed rounds
    rates: dict[str, list[float]] = {name: [] for name in runtimes}
    for round_no in range(args.rounds):
        for name, encoder in encoders.items():
            started = time.perf_counter()
            encoder.encode(texts)
            rates[name].append(len(texts) / (time.perf_counter() - started))
        print(f"round {round_no + 1}: " + ", ".join(f"{n} {r[-1]:.1f}/s" for n, r in rates.items()), flush=True)
    base = runtimes[0]
    result = {
        "bundle": str(args.bundle),
        "texts": len(texts),
        "rounds": args.rounds,
        "cpus": os.cpu_count(),
        "load_avg": os.getloadavg(),
        "median_texts_per_second": {n: round(statistics.median(r), 1) for n, r in rates.items()},
        "ratio_of_medians_vs_" + base: {
            n: round(statistics.median(r) / statistics.median(rates[base]), 2) for n, r in rates.items()
        },
        "per_round_ratio_vs_" + base: {
            n: [round(a / b, 2) for a, b in zip(r, rates[base], strict=True)] for n, r in rates.items()
        },
    }
    print(json.dumps(result, indent=2))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
