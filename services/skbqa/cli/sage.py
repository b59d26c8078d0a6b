"""`skbqa build-sage`: build the SAGE similarity graph of an index (INDEX_DIR/sage) for the `sage` strategy.

Prints the build time, peak memory, the share of all pairs the approximate candidate search scored, and the
graph's shape the way the paper's Table 5 reports it: edges (and the share of candidate pairs kept), edges per
signal, degree distribution and density, then the percentile × OR/AND sweep over the same candidates.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from skbqa.common.errors import InvalidInputError
from skbqa.common.resources import peak_rss_mib


def add_build_sage_parser(subparsers: Any) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = subparsers.add_parser(
        "build-sage", help="build the SAGE similarity graph of an index (for --strategy sage)"
    )
    p.add_argument("--index", type=Path, required=True, help="an index built by skbqa ingest")
    p.add_argument(
        "--percentile", type=float, default=95.0, help="keep a signal's pairs above this percentile (paper: 95)"
    )
    p.add_argument("--neighbours", type=int, default=20, help="candidates per node and signal (M)")
    p.add_argument(
        "--nprobe", type=int, default=16, help="IVF clusters searched per node for its name/content neighbours"
    )
    p.add_argument(
        "--centroids", type=int, default=None, help="IVF clusters per node type (default: √n of the type's nodes)"
    )
    p.add_argument(
        "--min-content-words",
        type=int,
        default=None,
        help="rich-text criterion: content words beyond name, attributes and type template (default 3)",
    )
    p.add_argument("--no-structural", action="store_true", help="do not keep KG edges between graph nodes")
    p.add_argument("--json", type=Path, default=None, dest="json_out", help="write the build report here")
    return p


def run_build_sage(args: argparse.Namespace) -> int:
    from skbqa.strategies.sage.graph_build import SageBuildConfig, build_for_index

    settings: dict[str, Any] = {
        "percentile": args.percentile,
        "neighbours": args.neighbours,
        "nprobe": args.nprobe,
        "centroids": args.centroids,
        "structural": not args.no_structural,
    }
    if args.min_content_words is not None:
        settings["min_content_words"] = args.min_content_words
    config = SageBuildConfig(**settings)
    try:
        config.validate()
    except ValueError as exc:
        raise InvalidInputError(str(exc)) from None
    started = time.perf_counter()
    graph, directory = build_for_index(args.index, config)
    meta = dict(graph.meta)
    meta["wall_seconds"] = round(time.perf_counter() - started, 1)
    meta["peak_rss_mib"] = round(peak_rss_mib(), 1)
    print_build_report(meta, directory)
    if args.json_out:
        args.json_out.parent.mkdir(parents=True, exist_ok=True)
        args.json_out.write_text(json.dumps(meta, indent=2))
    return 0


def print_build_report(meta: dict[str, Any], directory: Path | str, out: Any = print) -> None:
    edges, degree = meta["edges"], meta["degree"]
    out(
        f"built {directory}: {meta['graph_nodes']} graph nodes (rich text), {edges['total']} edges in "
        f"{meta.get('wall_seconds', meta['seconds']['total'])} s, peak RSS {meta.get('peak_rss_mib', '?')} MiB"
    )
    out(
        f"  candidates {meta['candidate_pairs']}; similarity edges {edges['similarity']} "
        f"({100 * edges['share_of_candidates']:.1f}% of candidates), structure-only {edges['structure_only']}"
    )
    search = meta.get("candidate_search")
    if search:
        share = search["total"]["share_of_all_pairs"]
        out(
            f"  candidate search ({search['method']}): pairs scored / n² per type, summed: "
            + ", ".join(f"{s} {100 * v:.2f}%" for s, v in share.items())
        )
    out("  edges per signal: " + ", ".join(f"{k} {v}" for k, v in edges["by_signal"].items()))
    out(
        f"  degree min {degree['min']} median {degree['median']} mean {degree['mean']} p95 {degree['p95']} "
        f"max {degree['max']} (isolated {degree['isolated']}); density {meta['density']:.2e}"
    )
    out(f"  {'pct':>4} {'logic':<5} {'edges':>9} {'% cand':>7} {'avg deg':>8} {'density':>9}")
    for row in meta["table5_sweep"]:
        out(
            f"  {row['percentile']:>4} {row['logic']:<5} {row['edges']:>9} {100 * row['share_of_candidates']:>6.1f}% "
            f"{row['avg_degree']:>8.1f} {row['density']:>9.1e}"
        )
