"""SAGE on the full biomedical SKB: build the similarity graph, then compare SAGE against its seed strategies.

Run from the repo root (needs an index from `skbqa ingest`, e.g. bench/biomed.py):
    .venv/bin/python bench/sage_build.py --index .skbqa/biomed-int8 \
        --qa ../shared/data/biomed-skb/qa-dev.jsonl --out bench/results/sage-biomed.json

One process: the build (wall time, peak RSS so far, pairs scored by the IVF candidate search against n² per type,
the paper's Table 5 figures: edges per signal, share of candidates, degree distribution, density, percentile ×
OR/AND sweep), then the ANN recall@M of that search against exact top-M on a sample of nodes per type and signal
(with an nprobe sweep: recall against the share of pairs scored), then every strategy on the same questions
at eval depth 100. SAGE's first 20 answers are its 10 seeds plus 10 expansions (see sage/strategy.py), so its
recall@20 is compared with the seed strategy's own first 20: the equal-budget comparison of the paper.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from skbqa.cli.sage import print_build_report
from skbqa.common.resources import peak_rss_mib
from skbqa.engine.embedded import EmbeddedEngine
from skbqa.eval.runner import compare, evaluate_strategy
from skbqa.eval.specs import parse_spec, split_specs
from skbqa.query.context import Candidate, QueryContext
from skbqa.skb.qa import load_qa
from skbqa.stores.index import load_exact_vectors
from skbqa.stores.nodes import NodeTable
from skbqa.strategies.sage import signals as sig
from skbqa.strategies.sage.ann import IvfIndex, exact_top_m, recall_at_m
from skbqa.strategies.sage.graph_build import SageBuildConfig, build_for_index, unit_rows
from skbqa.strategies.sage.store import SageGraph
from skbqa.strategies.sage.strategy import SageStrategy

DEFAULT_STRATEGIES = (
    "bm25,vss,hybrid,af,"
    "sage[seed=af,policy=edge],sage[seed=af,policy=always],"
    "sage[seed=hybrid,policy=edge],sage[seed=hybrid,policy=always]"
)
METRICS = ("recall@20", "hit@1", "hit@5", "hit@20", "mrr")


class RecordingSage:
    """The sage strategy, keeping each request's expansion report (expanded or not, neighbours, added)."""

    name = "sage"

    def __init__(self, inner: SageStrategy) -> None:
        self.inner = inner
        self.reports: list[dict[str, Any]] = []

    def warm(self, encoder: Any) -> None:
        self.inner.warm(encoder)

    def retrieve(self, query: QueryContext, k: int) -> list[Candidate]:
        out = self.inner.retrieve(query, k)
        self.reports.append(dict(query.notes.get("sage", {})))
        return out


def ann_recall(
    index: Path, config: SageBuildConfig, rich: np.ndarray, sample: int, sweep: tuple[int, ...]
) -> dict[str, Any]:
    """Recall@M of the build's IVF neighbourhoods against exact top-M, for `sample` random graph nodes per type
    and vector signal. The index is retrained exactly as the build trains it (same rows, same seed), and a node's
    IVF result does not depend on the other queries, so this is the build's own candidate search for those nodes."""
    nodes = NodeTable.load(index / "nodes")
    members = np.flatnonzero(rich).astype(np.int64)
    local_types = nodes.types[members].astype(np.int64)
    rng = np.random.default_rng(0)
    out: dict[str, Any] = {"sample_per_type": sample, "neighbours": config.neighbours, "nprobe": config.nprobe}
    by_type: dict[str, Any] = {}
    for signal, directory in (("name", "name"), ("content", "document")):
        vectors = unit_rows(load_exact_vectors(index / "vectors" / directory), members, directory)
        for group in sig.type_groups(local_types):
            if group.size < 2:
                continue
            rows = np.ascontiguousarray(vectors[group])
            queries = np.sort(rng.choice(group.size, min(sample, group.size), replace=False))
            truth = exact_top_m(rows, queries, config.neighbours).ids
            ivf = IvfIndex.train(rows, config.centroids)
            curve = {}
            for nprobe in sorted({*sweep, config.nprobe}):
                found = ivf.search(queries, config.neighbours, nprobe)
                curve[str(nprobe)] = {
                    f"recall@{config.neighbours}": round(recall_at_m(found.ids[:, : truth.shape[1]], truth), 4),
                    "share_of_pairs_scored": round(found.scored / (queries.size * group.size), 4),
                }
            name = nodes.schema.node_types[int(local_types[group[0]])].name
            by_type.setdefault(name, {})[signal] = {
                "nodes": int(group.size),
                "centroids": int(ivf.centroids.shape[0]),
                f"recall@{config.neighbours}": curve[str(config.nprobe)][f"recall@{config.neighbours}"],
                "by_nprobe": curve,
            }
        del vectors
    out["by_type"] = by_type
    key = f"recall@{config.neighbours}"
    out[f"min_{key}"] = min(s[key] for t in by_type.values() for s in t.values())
    return out


def expansion_summary(reports: list[dict[str, Any]]) -> dict[str, Any]:
    n = max(1, len(reports))
    expanded = [r for r in reports if r.get("expanded")]
    return {
        "questions": len(reports),
        "expanded_share": round(len(expanded) / n, 3),
        "skipped_for_edges": sum(1 for r in reports if r.get("expanded") is False),
        "mean_seeds_in_graph": round(sum(r.get("seeds_in_graph", 0) for r in expanded) / max(1, len(expanded)), 2),
        "mean_neighbours": round(sum(r.get("neighbours", 0) for r in expanded) / max(1, len(expanded)), 1),
        "mean_added": round(sum(r.get("added", 0) for r in expanded) / max(1, len(expanded)), 2),
    }


def budget_curve(
    engine: EmbeddedEngine, items: list[Any], seed: str, policy: str, graph: SageGraph, budgets: tuple[int, ...]
) -> dict[str, Any]:
    """Recall at equal budgets B (sage: B/2 seeds + B/2 expansions; the seed strategy: its own top B), as in the
    paper's Figure 4, plus the ceiling of expansion: the share of answers within the 10 seeds or their neighbours."""
    recall: dict[str, dict[int, list[float]]] = {
        "base": {b: [] for b in budgets},
        "sage": {b: [] for b in budgets},
    }
    ceiling: list[float] = []
    seeds_only: list[float] = []
    for item in items:
        positions = engine.stores.nodes.positions(item.answers)
        gold = {int(a) for a, p in zip(item.answers, positions, strict=True) if p >= 0}
        if not gold:
            continue
        base = [i.node_id for i in engine.ask(item.question, strategy=seed, k=max(budgets)).items]
        for budget in budgets:
            options = {"seed": seed, "policy": policy, "seeds": budget // 2, "k_prime": budget // 2}
            ranked = [
                i.node_id for i in engine.ask(item.question, strategy="sage", k=budget, options=options).items
            ]
            recall["sage"][budget].append(len(gold & set(ranked)) / len(gold))
            recall["base"][budget].append(len(gold & set(base[:budget])) / len(gold))
        seeds = engine.stores.nodes.positions(base[:10])
        reachable = set(engine.stores.nodes.ids[graph.expand(seeds).neighbours].tolist()) | set(base[:10])
        ceiling.append(len(gold & reachable) / len(gold))
        seeds_only.append(len(gold & set(base[:10])) / len(gold))
    out: dict[str, Any] = {"policy": policy}
    for budget in budgets:
        b, g = 100 * np.mean(recall["base"][budget]), 100 * np.mean(recall["sage"][budget])
        out[f"recall@{budget}"] = {"base": round(b, 2), "sage": round(g, 2), "points": round(g - b, 2)}
    out["recall_of_10_seeds"] = round(100 * float(np.mean(seeds_only)), 2)
    out["recall_of_10_seeds_plus_all_neighbours"] = round(100 * float(np.mean(ceiling)), 2)
    return out


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--index", type=Path, default=Path(".skbqa/biomed-int8"))
    parser.add_argument("--qa", type=Path, default=Path("../shared/data/biomed-skb/qa-dev.jsonl"))
    parser.add_argument("--out", type=Path, default=Path("bench/results/sage-biomed.json"))
    parser.add_argument("--strategies", default=DEFAULT_STRATEGIES)
    parser.add_argument("--percentile", type=float, default=95.0)
    parser.add_argument("--neighbours", type=int, default=SageBuildConfig.neighbours)
    parser.add_argument("--nprobe", type=int, default=SageBuildConfig.nprobe)
    parser.add_argument("--centroids", type=int, default=None, help="IVF clusters per type (default √n)")
    parser.add_argument("--recall-sample", type=int, default=500, help="nodes per type for ANN recall; 0 skips")
    parser.add_argument("--nprobe-sweep", default="4,8,16,32", help="nprobe values of the recall sweep")
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--skip-build", action="store_true", help="reuse INDEX/sage instead of rebuilding it")
    parser.add_argument("--budgets", default="10,20,40", help="equal-budget recall curve; empty to skip")
    args = parser.parse_args()

    result: dict[str, Any] = {"index": str(args.index), "qa": str(args.qa)}
    if args.skip_build:
        built = SageGraph.load(args.index)
        build = dict(built.meta)
        config = SageBuildConfig(**build["config"])
    else:
        config = SageBuildConfig(
            percentile=args.percentile, neighbours=args.neighbours, nprobe=args.nprobe, centroids=args.centroids
        )
        started = time.perf_counter()
        built, directory = build_for_index(args.index, config)
        build = dict(built.meta)
        build["wall_seconds"] = round(time.perf_counter() - started, 1)
        build["peak_rss_mib"] = round(peak_rss_mib(), 1)  # the build is all this process has done so far
        print_build_report(build, directory)
    result["build"] = build
    print_search_costs(build)
    if args.recall_sample > 0:
        sweep = tuple(int(p) for p in args.nprobe_sweep.split(",") if p.strip())
        result["ann_recall"] = ann_recall(args.index, config, built.rich, args.recall_sample, sweep)
        print_recall(result["ann_recall"])
    del built

    items = load_qa(args.qa)[: args.limit]
    engine = EmbeddedEngine.open(args.index)
    sage = RecordingSage(SageStrategy(engine.stores, engine.strategies))
    engine.strategies["sage"] = sage
    engine.warm()
    reports, expansion = [], {}
    for spec in split_specs(args.strategies):
        sage.reports.clear()
        reports.append(evaluate_strategy(engine, items, spec, progress=True))
        if parse_spec(spec)[0] == "sage":
            expansion[spec] = expansion_summary(sage.reports)
        print(f"{spec:<34} recall@20 {reports[-1].metrics['recall@20']:6.2f}", flush=True)
    summary = compare(reports)
    result["eval"] = summary
    result["expansion"] = expansion

    by_name = {r.strategy: r for r in reports}
    gains: dict[str, Any] = {}
    for spec, report in by_name.items():
        name, options = parse_spec(spec)
        seed = by_name.get(str(options.get("seed", "af"))) if name == "sage" else None
        if seed is None:
            continue
        gains[spec] = {
            "seed": seed.strategy,
            **{
                f"{m}_points": round(report.metrics[m] - seed.metrics[m], 2)
                for m in ("recall@20", "hit@1", "hit@5", "mrr")
            },
            "recall@20_ratio": round(report.metrics["recall@20"] / seed.metrics["recall@20"], 3)
            if seed.metrics["recall@20"]
            else None,
            "recall@20_points_by_type": {
                t: round(m["recall@20"] - seed.by_target_type.get(t, {}).get("recall@20", 0.0), 2)
                for t, m in report.by_target_type.items()
            },
        }
    result["recall@20_gain_over_seed"] = gains

    print(
        f"\n{'strategy':<34} "
        + " ".join(f"{m:>9}" for m in METRICS)
        + f" {'p50 ms':>8} {'Δ R@20':>8} {'ratio':>6}"
    )
    for spec, report in by_name.items():
        gain = gains.get(spec, {})
        delta = f"{gain['recall@20_points']:>+8.2f}" if gain else f"{'':>8}"
        ratio = f"{gain['recall@20_ratio']:>6.3f}" if gain else f"{'':>6}"
        print(
            f"{spec:<34} "
            + " ".join(f"{report.metrics[m]:>9.2f}" for m in METRICS)
            + f" {report.latency_ms['p50']:>8.1f} {delta} {ratio}"
        )
    for spec, summary_row in expansion.items():
        print(f"{spec:<34} {json.dumps(summary_row)}")
    budgets = tuple(int(b) for b in args.budgets.split(",") if b.strip())
    if budgets:
        graph = sage.inner.graph()
        curves = {
            f"{seed}[policy={policy}]": budget_curve(engine, items, seed, policy, graph, budgets)
            for seed, policy in (("af", "edge"), ("af", "always"), ("hybrid", "always"))
        }
        result["equal_budget_curve"] = curves
        print(
            f"\n{'seed[policy]':<22} "
            + " ".join(f"{'R@' + str(b) + ' base→sage':>22}" for b in budgets)
            + "  ceiling"
        )
        for name, curve in curves.items():
            cells = " ".join(
                f"{curve[f'recall@{b}']['base']:>8.2f} → {curve[f'recall@{b}']['sage']:6.2f} ({curve[f'recall@{b}']['points']:+.2f})"
                for b in budgets
            )
            print(
                f"{name:<22} {cells}  {curve['recall_of_10_seeds']:.1f}→{curve['recall_of_10_seeds_plus_all_neighbours']:.1f}"
            )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    print(f"wrote {args.out}")
    return 0


def print_search_costs(build: dict[str, Any]) -> None:
    search = build.get("candidate_search")
    if not search:
        return
    print(f"\n{'type':<20} {'nodes':>7} {'IVF k':>6} {'largest':>8} {'name/n²':>8} {'cont/n²':>8} {'ent/n²':>8}")
    for name, row in {**search["by_type"], "all types": search["total"]}.items():
        share = row["share_of_all_pairs"]
        print(
            f"{name:<20} {row.get('nodes', ''):>7} {row.get('centroids', ''):>6} {row.get('largest_cluster', ''):>8} "
            + " ".join(f"{100 * share[s]:>7.2f}%" for s in ("name", "content", "entity"))
        )


def print_recall(recall: dict[str, Any]) -> None:
    key = f"recall@{recall['neighbours']}"
    nprobes = list(next(iter(next(iter(recall["by_type"].values())).values()))["by_nprobe"])
    print(f"\nANN {key} vs exact on {recall['sample_per_type']} nodes per type (share of pairs scored)")
    print(f"{'type':<20} {'signal':<8} " + " ".join(f"{'nprobe ' + p:>18}" for p in nprobes))
    for name, signals in recall["by_type"].items():
        for signal, row in signals.items():
            cells = " ".join(
                f"{row['by_nprobe'][p][key]:>8.3f} ({100 * row['by_nprobe'][p]['share_of_pairs_scored']:>5.1f}%)"
                for p in nprobes
            )
            print(f"{name:<20} {signal:<8} {cells}")


if __name__ == "__main__":
    raise SystemExit(main())
