"""Full biomedical SKB benchmark: ingest, encoder throughput, and strategies on the dev questions.

Run from the repo root (needs ../shared/data/biomed-skb):
    .venv/bin/python bench/biomed.py --bundle ../shared/data/biomed-skb --index .skbqa/biomed --out bench/results

Prints and writes (OUT/biomed-<encoder>.json):
- ingest wall time, its stages, texts encoded per second and the ingest process's peak RSS (ingest runs as a
  child `skbqa ingest`, so its peak is not mixed with this process's);
- raw encoder throughput for torch, ONNX fp32 and ONNX int8 on the same sample of node documents, as ratios vs
  torch (the baseline measured in the same run);
- STaRK metrics and latency for each strategy, with ratios vs the first.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from skbqa.cli.demo import index_is_current
from skbqa.engine.embedded import EmbeddedEngine
from skbqa.eval.runner import compare, evaluate_strategy
from skbqa.ingest.documents import embedding_documents
from skbqa.models.local_encoder import load_encoder
from skbqa.skb.qa import load_qa
from skbqa.stores.nodes import NodeTable


def encoder_throughput(nodes: NodeTable, sample: int, runtimes: list[str]) -> dict[str, dict[str, float]]:
    rng = np.random.default_rng(0)
    docs = embedding_documents(nodes)
    texts = [docs[i] for i in rng.choice(len(docs), size=min(sample, len(docs)), replace=False)]
    out: dict[str, dict[str, float]] = {}
    for runtime in runtimes:
        encoder = load_encoder(runtime)
        encoder.encode(texts[:16])  # load / warm up outside the timed region
        started = time.perf_counter()
        encoder.encode(texts)
        seconds = time.perf_counter() - started
        out[runtime] = {"texts_per_second": round(len(texts) / seconds, 1), "seconds": round(seconds, 2)}
        print(f"encoder {runtime:<10} {len(texts) / seconds:7.1f} docs/s", flush=True)
    base = out[runtimes[0]]["texts_per_second"]
    for runtime in runtimes:
        out[runtime]["ratio_vs_" + runtimes[0]] = round(out[runtime]["texts_per_second"] / base, 2)
    return out


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bundle", type=Path, required=True)
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--qa", default="qa-dev.jsonl")
    parser.add_argument("--out", type=Path, default=Path("bench/results"))
    parser.add_argument("--encoder", default="onnx-int8")
    parser.add_argument("--strategies", default="bm25,vss,hybrid")
    parser.add_argument("--encoder-sample", type=int, default=1000, help="0 skips the encoder comparison")
    parser.add_argument("--force-ingest", action="store_true")
    args = parser.parse_args()

    result: dict = {"bundle": str(args.bundle), "encoder": args.encoder}
    encoder_name = load_encoder(args.encoder).name
    if args.force_ingest or not index_is_current(args.bundle, args.index, encoder_name):
        started = time.perf_counter()
        cmd = [sys.executable, "-m", "skbqa.cli.main", "ingest", str(args.bundle), "--index", str(args.index)]
        subprocess.run([*cmd, "--encoder", args.encoder, "--force"], check=True)
        result["ingest_wall_seconds"] = round(time.perf_counter() - started, 1)
        result["ingest_peak_rss_mib"] = round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1)
    manifest = json.loads((args.index / "manifest.json").read_text())
    result["ingest_manifest"] = {
        k: manifest[k] for k in ("counts", "seconds", "encode_texts_per_second", "peak_rss_mib")
    }

    engine = EmbeddedEngine.open(args.index)
    if args.encoder_sample:
        result["encoder_throughput"] = encoder_throughput(
            engine.stores.nodes, args.encoder_sample, ["torch", "onnx", "onnx-int8"]
        )
    items = load_qa(args.bundle / args.qa)
    reports = [evaluate_strategy(engine, items, s) for s in args.strategies.split(",")]
    summary = compare(reports)
    result["eval"] = summary
    for name, report in summary["strategies"].items():
        m, lat = report["metrics"], report["latency_ms"]
        print(
            f"{name:<8} hit@1 {m['hit@1']:5.1f} hit@5 {m['hit@5']:5.1f} recall@20 {m['recall@20']:5.1f} "
            f"mrr {m['mrr']:5.1f}  p50 {lat['p50']:.1f} ms p95 {lat['p95']:.1f} ms  ratios {summary['ratios'][name]}"
        )
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"biomed-{args.encoder}.json"
    path.write_text(json.dumps(result, indent=2))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
