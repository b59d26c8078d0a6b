"""The markdown tables of docs/scale.md from bench/results/scale-*.json (one file per size, bench/scale.py).

.venv/bin/python bench/scale_table.py bench/results
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def fmt_ms(latency: dict[str, float]) -> str:
    return f"{latency['p50']:.1f} / {latency['p95']:.1f}"


def gib(mib: float) -> str:
    return f"{mib / 1024:.1f}"


def ann_cell(result: dict[str, Any], set_name: str, key: str) -> str:
    entry = result["ann"].get(set_name, {})
    if entry.get("index") == "exact":
        return "exact"
    default = str(entry.get("default_nprobe"))
    return f"{entry[default][key]:.3f}" if default in entry else "–"


def main() -> int:
    directory = Path(sys.argv[1] if len(sys.argv) > 1 else "bench/results")
    results = sorted((json.loads(p.read_text()) for p in directory.glob("scale-*.json")), key=lambda r: r["nodes"])
    print(
        "| nodes | edges | synth + vectors s | ingest s (peak GiB) | edges/s to CSR | open + warm s | serving RSS GiB "
        "| vss p50/p95 ms | bm25 | hybrid | af | af / vss p50 | ANN recall@20 relations (typed) | names (typed) |"
    )
    print("|" + "---|" * 14)
    for r in results:
        strategies = r["strategies"]
        open_s = sum(v["seconds"] for v in r["open"].values() if isinstance(v, dict))
        synth = r.get("synth", {}).get("seconds", float("nan"))
        ingest = r.get("ingest", {})
        print(
            f"| {r['nodes']:,} | {r['memory']['edges']:,} | {synth:.0f} | {ingest.get('seconds', float('nan')):.0f} "
            f"({gib(ingest.get('peak_rss_mib', float('nan')))}) | {r['graph_load']['edges_per_second'] / 1e6:.2f}M "
            f"| {open_s:.0f} | {gib(r['memory']['rss_serving_mib'])} | {fmt_ms(strategies['vss']['latency_ms'])} "
            f"| {fmt_ms(strategies['bm25']['latency_ms'])} | {fmt_ms(strategies['hybrid']['latency_ms'])} "
            f"| {fmt_ms(strategies['af']['latency_ms'])} | {strategies['af']['ratio_vs_vss']['p50']:.2f} "
            f"| {ann_cell(r, 'relations', 'recall@20')} ({ann_cell(r, 'relations', 'recall@20_typed')}) "
            f"| {ann_cell(r, 'name', 'recall@20')} ({ann_cell(r, 'name', 'recall@20_typed')}) |"
        )
    print()
    print(
        "| nodes | RSS bytes/node | CSR bytes/edge | vector bytes/node | index on disk bytes/node | af hit@1 | af recall@20 |"
    )
    print("|" + "---|" * 7)
    for r in results:
        m, af = r["memory"], r["strategies"]["af"]["metrics"]
        print(
            f"| {r['nodes']:,} | {m['rss_bytes_per_node']:,} | {m['graph_bytes_per_edge']:.1f} "
            f"| {m['vector_bytes_per_node']:,} | {m['disk_bytes_per_node']:,} | {af['hit@1']:.1f} | {af['recall@20']:.1f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
