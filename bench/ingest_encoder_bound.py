"""Is ingest bound by the encoder? Ingest throughput against the encoder's raw throughput, in one process.

    nice -n 19 .venv/bin/python bench/ingest_encoder_bound.py --nodes 10000

A synthetic bundle is generated; MiniLM (ONNX int8, the default) first encodes exactly the texts ingest embeds
(the three sets, built by `ingest.documents`) on its own — the raw throughput — and then `ingest` builds the whole
index with the same encoder. texts / ingest wall time over texts / raw encode time is the share of the encoder's
throughput that ingest keeps (the target is ≥ 90 %); the rest is loading, graph, BM25, documents and vector
index writing. With --index, the figure is also read from an existing index's manifest (its encode stage against
its total), e.g. the full biomed ingest.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from skbqa.ingest.builder import ingest
from skbqa.ingest.documents import embedded_texts
from skbqa.models.local_encoder import load_encoder
from skbqa.skb.loaders import load_skb
from skbqa.stores.graph.csr import CsrGraph
from skbqa.stores.index import EMBEDDING_SETS
from skbqa.stores.nodes import NodeTable
from skbqa.synth.generator import generate


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--encoder", default="onnx-int8")
    parser.add_argument("--index", type=Path, action="append", default=[], help="also report an existing index")
    parser.add_argument("--out", type=Path, default=Path("bench/results/ingest-encoder-bound.json"))
    args = parser.parse_args()

    result: dict = {"encoder": args.encoder, "nodes": args.nodes}
    with tempfile.TemporaryDirectory(prefix="skbqa-ingest-bound-") as tmp:
        bundle = Path(tmp) / "bundle"
        generate(bundle, nodes=args.nodes, seed=3, questions=0, edges_per_node=40)
        skb = load_skb(bundle)
        nodes = NodeTable.from_skb(skb)
        graph = CsrGraph.build(skb.num_nodes, skb.schema.edge_names, skb.edge_src, skb.edge_dst, skb.edge_type)
        positions = np.arange(len(nodes), dtype=np.int64)
        texts = [t for name in EMBEDDING_SETS for t in embedded_texts(name, nodes, graph, positions)]
        del skb, nodes, graph
        encoder = load_encoder(args.encoder)
        encoder.encode(texts[:32])  # load the model outside both timings
        started = time.perf_counter()
        for name_start in range(0, len(texts), args.nodes):  # one call per set, as ingest makes them
            encoder.encode(texts[name_start : name_start + args.nodes])
        raw = time.perf_counter() - started
        started = time.perf_counter()
        report = ingest(bundle, Path(tmp) / "index", encoder, progress=False)
        wall = time.perf_counter() - started
    result["texts"] = len(texts)
    result["raw_encode_seconds"] = round(raw, 1)
    result["raw_texts_per_second"] = round(len(texts) / raw, 1)
    result["ingest_seconds"] = round(wall, 1)
    result["ingest_stages"] = report.seconds
    result["ingest_texts_per_second"] = round(report.texts_encoded / wall, 1)
    result["ingest_share_of_raw_throughput"] = round(raw / wall, 3)
    for index in args.index:
        manifest = json.loads((index / "manifest.json").read_text())
        seconds = manifest["seconds"]
        result[f"manifest:{index}"] = {
            "encode_seconds": seconds.get("encode"),
            "total_seconds": seconds.get("total"),
            "encode_share_of_total": round(seconds["encode"] / seconds["total"], 3)
            if seconds.get("encode")
            else None,
        }
    print(json.dumps(result, indent=2))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
