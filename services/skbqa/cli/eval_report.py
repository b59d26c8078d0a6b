"""How `skbqa eval` prints its summary: metrics and latency per strategy, ratios to the baseline, LLM notes, and
the breakdowns by question family and target type."""

from __future__ import annotations

from typing import Any


def print_eval(summary: dict[str, Any]) -> None:
    names = ("hit@1", "hit@5", "hit@20", "recall@20", "mrr")
    width = max(10, *(len(n) for n in summary["strategies"]))
    print(
        f"{'strategy':<{width}} {'n':>5} " + " ".join(f"{n:>9}" for n in names) + f" {'p50 ms':>8} {'p95 ms':>8}"
    )
    for name, report in summary["strategies"].items():
        m, lat = report["metrics"], report["latency_ms"]
        print(
            f"{name:<{width}} {report['n']:>5} "
            + " ".join(f"{m[n]:>9.2f}" for n in names)
            + f" {lat['p50']:>8.1f} {lat['p95']:>8.1f}"
        )
    first = next(iter(summary["strategies"].values()))
    if first.get("answered_by", "in-process") != "in-process":
        rates = ", ".join(f"{n} {r['throughput_qps']:.1f} q/s" for n, r in summary["strategies"].items())
        print(
            f"answered by {first['answered_by']}, {first['concurrency']} in flight; latency at the client; {rates}"
        )
    if len(summary["strategies"]) > 1:
        print(f"ratios vs {summary['baseline']}:")
        for name, ratio in summary["ratios"].items():
            cells = " ".join(f"{(ratio[n] if ratio[n] is not None else float('nan')):>9.2f}" for n in names)
            print(f"{name:<{width}} {'':>5} {cells} {ratio['latency_p50'] or float('nan'):>8.2f}")
    for name, report in summary["strategies"].items():
        llm = report.get("llm")
        if llm:
            n = report["n"]
            print(f"{name} LLM: " + ", ".join(f"{k} {v}" for k, v in sorted(llm.items())))
            if llm.get("parser_fallbacks"):
                print(f"  warning: {llm['parser_fallbacks']} of {n} questions fell back to the encoder parser")
            if llm.get("rerank_incomplete"):
                print(
                    f"  warning: the reranker stopped early (deadline or LLM error) on {llm['rerank_incomplete']} of {n}"
                )
    for name, report in summary["strategies"].items():
        if report.get("by_family"):
            print(f"{name} by family:")
            for f, m in report["by_family"].items():
                print(
                    f"  {f:<22} n={m['n']:<4} hit@1 {m['hit@1']:6.2f}  recall@20 {m['recall@20']:6.2f}  mrr {m['mrr']:6.2f}"
                )
        print(f"{name} by target type:")
        for t, m in report["by_target_type"].items():
            print(
                f"  {t:<22} n={m['n']:<4} hit@1 {m['hit@1']:6.2f}  recall@20 {m['recall@20']:6.2f}  mrr {m['mrr']:6.2f}"
            )
