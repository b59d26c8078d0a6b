"""Distributed vs embedded, measured in one run on the same questions (issue 5's figures).

1. `Ask` latency p50/p95 through the embedded gRPC server (every stage in one process) and through the local
   distributed stack (tansu broker, Triton encoder, one process per service, Ray Serve reranker);
2. per-stage p50/p95 from Prometheus (PromQL over `skbqa_stage_seconds` and `skbqa_queue_wait_seconds`);
3. throughput (answers/s, N concurrent clients) with 1 and then 2 replicas of the slowest stage;
4. the same `Ask` latency on a stack whose bus uses `--baseline-bus-options` (default: the previous
   `fetch_max_wait_ms=100`), so the bus setting's effect is a ratio measured in this run;
5. the latency budget, hop by hop (`budget`): every answer's trace (`timings_ms` keys `hop.*`, which add up to
   its `end_to_end`), p50 and mean per hop, the sum of the hop p50s against the end-to-end p50 (medians need not
   add; the means do), for the distributed code path and the stack, with the stack's p50 per hop from Prometheus
   (`skbqa_hop_seconds`) beside it;
6. the stack with co-located light stages (`--layout`, each a `stack up --colocate` layout; default
   `parser+symbols+grounding`, and that plus `ranking+reranker`) against the default stack (a process per stage):
   p50/p95, throughput and the budget, as ratios to the default stack's row of this run;
7. where the overhead goes, each part measured in this run: the distributed code path (gateway, bus workers, stage
   codec, answer routing, metrics) in one process over the in-memory bus; the stack without Triton (every service
   encodes in process); and one publish → fetch hop on the stack's broker (the pipeline makes six).

    .venv/bin/python bench/distributed.py --index .skbqa/biomed-sample --qa data/biomed-sample/qa.jsonl \
        --out bench/results/distributed.json
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import numpy as np

from skbqa.devstack.stack import LocalStack, StackOptions
from skbqa.observability import hops
from skbqa.serving.run import start_all_in_one, start_embedded
from skbqa.serving.settings import ServiceSettings
from skbqa.v1 import api_pb2, api_pb2_grpc

STAGES = ("parser", "symbols", "grounding", "ranking", "reranker")
HOPS_PER_QUESTION = 6  # query → parsed → symbols → grounded → ranked → answer


def _questions(path: Path, limit: int) -> list[str]:
    return [json.loads(line)["question"] for line in path.read_text().splitlines() if line.strip()][:limit]


@dataclass
class Latencies:
    times: list[float] = field(default_factory=list)  # ms at the client
    rankings: list[list[int]] = field(default_factory=list)
    traces: list[dict[str, float]] = field(default_factory=list)  # each answer's hop parts and end_to_end (ms)


def _latencies(port: int, questions: list[str], rounds: int) -> Latencies:
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = api_pb2_grpc.SkbqaStub(channel)
        for question in questions[:3]:  # warm connections and caches
            stub.Ask(api_pb2.AskRequest(question=question), timeout=60)
        measured = Latencies()
        for _ in range(rounds):
            for question in questions:
                started = time.perf_counter()
                reply = stub.Ask(api_pb2.AskRequest(question=question), timeout=60)
                measured.times.append((time.perf_counter() - started) * 1000)
                measured.rankings.append([item.node_id for item in reply.items])
                trace = {
                    key.removeprefix(hops.TIMING_PREFIX): ms
                    for key, ms in reply.timings_ms.items()
                    if key.startswith(hops.TIMING_PREFIX) or key == hops.END_TO_END
                }
                if trace:  # the embedded server travels no hops
                    measured.traces.append(trace)
    return measured


def _budget(measured: Latencies) -> dict[str, Any]:
    """The latency budget table: p50 and mean per hop (pipeline order), their sums, the end to end they add up to
    (the gateway's, from the traces) and the client's p50, which adds the gRPC call itself."""
    present = [hop for hop in hops.HOPS if all(hop in trace for trace in measured.traces)]
    p50 = {hop: float(np.percentile([t[hop] for t in measured.traces], 50)) for hop in present}
    mean = {hop: float(np.mean([t[hop] for t in measured.traces])) for hop in present}
    end_to_end = [t[hops.END_TO_END] for t in measured.traces]
    return {
        "hops": [{"hop": hop, "p50_ms": round(p50[hop], 3), "mean_ms": round(mean[hop], 3)} for hop in present],
        "sum_of_hop_p50_ms": round(sum(p50.values()), 2),
        "end_to_end_p50_ms": round(float(np.percentile(end_to_end, 50)), 2),
        "sum_of_hop_means_ms": round(sum(mean.values()), 2),
        "end_to_end_mean_ms": round(float(np.mean(end_to_end)), 2),
        "client_p50_ms": round(float(np.percentile(measured.times, 50)), 2),
        "requests": len(measured.traces),
    }


def _print_budget(name: str, budget: dict[str, Any]) -> None:
    print(f"\nlatency budget, {name} ({budget['requests']} requests, ms):")
    print(f"  {'hop':<20} {'p50':>8} {'mean':>8}")
    for row in budget["hops"]:
        print(f"  {row['hop']:<20} {row['p50_ms']:>8.3f} {row['mean_ms']:>8.3f}")
    print(f"  {'sum of the hops':<20} {budget['sum_of_hop_p50_ms']:>8.2f} {budget['sum_of_hop_means_ms']:>8.2f}")
    print(
        f"  {'end to end (gateway)':<20} {budget['end_to_end_p50_ms']:>8.2f} {budget['end_to_end_mean_ms']:>8.2f}"
    )
    print(f"  {'at the client':<20} {budget['client_p50_ms']:>8.2f}")


def _throughput(port: int, questions: list[str], clients: int, total: int) -> float:
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = api_pb2_grpc.SkbqaStub(channel)
        work = [questions[i % len(questions)] for i in range(total)]
        started = time.perf_counter()
        with ThreadPoolExecutor(clients) as pool:
            list(pool.map(lambda q: stub.Ask(api_pb2.AskRequest(question=q), timeout=120), work))
        return total / (time.perf_counter() - started)


def _hop_p50(stack: LocalStack, hops: int = 60) -> float:
    """p50 of one publish → fetch hop on the stack's own broker, with the services' bus settings."""
    from kafka_hop import hop_latency  # bench/kafka_hop.py, beside this script

    from skbqa.bus.kafka import DEFAULT_FETCH_MAX_WAIT_MS

    bootstrap = stack.ports["bus"].removeprefix("kafka://")
    return float(hop_latency(bootstrap, DEFAULT_FETCH_MAX_WAIT_MS, hops)["p50_ms"])


def _summary(times: list[float]) -> dict[str, float]:
    return {"p50": round(float(np.percentile(times, 50)), 2), "p95": round(float(np.percentile(times, 95)), 2)}


def _promql(base: str, query: str, label: str = "stage") -> dict[str, float]:
    url = f"{base}/api/v1/query?" + urllib.parse.urlencode({"query": query})
    with urllib.request.urlopen(url, timeout=10) as reply:
        result = json.load(reply)["data"]["result"]
    return {r["metric"].get(label, ""): round(float(r["value"][1]) * 1000, 2) for r in result}


def _colocated_row(
    args: argparse.Namespace, questions: list[str], expected: list[list[int]], default: dict[str, Any], layout: str
) -> dict[str, Any]:
    """One stack whose `layout` groups ("a+b+c,d+e") each run as one process, measured as the default stack's row
    was, with ratios to it: fewer broker hops against stages that no longer scale (or fail) one by one."""
    groups = tuple(group for group in layout.split(",") if group)
    with tempfile.TemporaryDirectory() as tmp:
        stack = LocalStack(
            StackOptions(index=args.index, directory=Path(tmp), gateway_port=0, colocate=groups, prometheus=True)
        )
        started = time.perf_counter()
        stack.up()
        try:
            port = stack.ports["gateway"]
            measured = _latencies(port, questions, args.rounds)
            row: dict[str, Any] = {
                "layout": layout,
                "processes": len(stack.records),
                "stack_up_s": round(time.perf_counter() - started, 1),
                **_summary(measured.times),
                "same_rankings_as_embedded": sum(a == b for a, b in zip(measured.rankings, expected, strict=True)),
                "compared": len(measured.rankings),
                "budget": _budget(measured),
            }
            time.sleep(3)  # one more scrape: each co-located stage still has its own skbqa_stage_seconds
            row["sequential_stage_p50_ms"] = _promql(
                stack.ports["prometheus"],
                "histogram_quantile(0.5, sum by (le, stage) (skbqa_stage_seconds_bucket))",
            )
            row["throughput_per_s"] = round(_throughput(port, questions, args.clients, args.requests), 1)
        finally:
            stack.down()
    row["ratio_to_default_stack"] = {
        "p50": round(row["p50"] / default["p50"], 3),
        "p95": round(row["p95"] / default["p95"], 3),
        "throughput": round(row["throughput_per_s"] / default["throughput_per_s"], 3),
    }
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--qa", type=Path, required=True)
    parser.add_argument("--limit", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--requests", type=int, default=120)
    parser.add_argument("--slowest", default="ranking")
    parser.add_argument("--baseline-bus-options", default="fetch_max_wait_ms=100")
    parser.add_argument(
        "--layout",
        action="append",
        default=None,
        help="co-located groups of one stack row, comma-separated (repeatable; default: "
        "parser+symbols+grounding, and parser+symbols+grounding,ranking+reranker)",
    )
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    questions = _questions(args.qa, args.limit)
    report: dict[str, Any] = {"index": str(args.index), "questions": len(questions), "rounds": args.rounds}

    server, stop = start_embedded(ServiceSettings(index=args.index, port=0))
    try:
        embedded = _latencies(server.port, questions, args.rounds)
        embedded_rankings = embedded.rankings
        report["embedded"] = {
            **_summary(embedded.times),
            "throughput_per_s": round(_throughput(server.port, questions, args.clients, args.requests), 1),
        }
    finally:
        stop()

    # The distributed code path without the broker or separate processes: what skbqa's own layers cost.
    server, stop = start_all_in_one(
        ServiceSettings(index=args.index, role="all", bus_url="memory://bench", port=0)
    )
    try:
        measured = _latencies(server.port, questions, args.rounds)
        report["distributed_code_path_memory_bus"] = {
            **_summary(measured.times),
            "same_rankings_as_embedded": sum(
                a == b for a, b in zip(measured.rankings, embedded_rankings, strict=True)
            ),
            "budget": _budget(measured),
        }
    finally:
        stop()

    for replicas in (1, 2):
        with tempfile.TemporaryDirectory() as tmp:
            stack = LocalStack(
                StackOptions(
                    index=args.index,
                    directory=Path(tmp),
                    gateway_port=0,
                    replicas={args.slowest: replicas},
                    prometheus=True,
                )
            )
            started = time.perf_counter()
            stack.up()
            up_s = round(time.perf_counter() - started, 1)
            try:
                port = stack.ports["gateway"]
                row: dict[str, Any] = {"stack_up_s": up_s}
                if replicas == 1:
                    measured = _latencies(port, questions, args.rounds)
                    row.update(_summary(measured.times))
                    row["same_rankings_as_embedded"] = sum(
                        a == b for a, b in zip(measured.rankings, embedded_rankings, strict=True)
                    )
                    row["compared"] = len(measured.rankings)
                    row["budget"] = _budget(measured)
                    time.sleep(3)  # one more scrape: the stage figures of the sequential phase alone
                    row["sequential_stage_p50_ms"] = _promql(
                        stack.ports["prometheus"],
                        "histogram_quantile(0.5, sum by (le, stage) (skbqa_stage_seconds_bucket))",
                    )
                    row["sequential_hop_p50_ms_prometheus"] = _promql(
                        stack.ports["prometheus"],
                        "histogram_quantile(0.5, sum by (le, hop) (skbqa_hop_seconds_bucket))",
                        label="hop",
                    )
                    row["hop_p50_ms"] = _hop_p50(stack)
                row["throughput_per_s"] = round(_throughput(port, questions, args.clients, args.requests), 1)
                time.sleep(3)  # one more scrape
                base = stack.ports["prometheus"]
                for q in (0.5, 0.95):
                    row[f"stage_p{int(q * 100)}_ms"] = _promql(
                        base, f"histogram_quantile({q}, sum by (le, stage) (skbqa_stage_seconds_bucket))"
                    )
                    row[f"queue_wait_p{int(q * 100)}_ms"] = _promql(
                        base, f"histogram_quantile({q}, sum by (le, stage) (skbqa_queue_wait_seconds_bucket))"
                    )
                report[f"distributed_{args.slowest}_x{replicas}"] = row
            finally:
                stack.down()
    layouts = args.layout or ["parser+symbols+grounding", "parser+symbols+grounding,ranking+reranker"]
    report["colocated"] = [
        _colocated_row(args, questions, embedded_rankings, report[f"distributed_{args.slowest}_x1"], layout)
        for layout in layouts
    ]
    with tempfile.TemporaryDirectory() as tmp:
        stack = LocalStack(
            StackOptions(
                index=args.index, directory=Path(tmp), gateway_port=0, bus_options=args.baseline_bus_options
            )
        )
        stack.up()
        try:
            baseline = _latencies(stack.ports["gateway"], questions, args.rounds)
            report["distributed_baseline_bus"] = {
                "bus_options": args.baseline_bus_options,
                **_summary(baseline.times),
            }
        finally:
            stack.down()
    with tempfile.TemporaryDirectory() as tmp:
        # Ray off too: with the default reranker option ("none") no request reaches it, and a fourth Ray start in
        # one run once failed to come up (a leftover of the previous stack's instance)
        stack = LocalStack(
            StackOptions(index=args.index, directory=Path(tmp), gateway_port=0, triton=False, ray=False)
        )
        stack.up()
        try:
            report["distributed_no_triton"] = _summary(
                _latencies(stack.ports["gateway"], questions, args.rounds).times
            )
        finally:
            stack.down()
    one = report[f"distributed_{args.slowest}_x1"]
    report["overhead_breakdown_p50_ms"] = {
        "total": round(one["p50"] - report["embedded"]["p50"], 2),
        "skbqa_code_path": round(report["distributed_code_path_memory_bus"]["p50"] - report["embedded"]["p50"], 2),
        "broker_hops": round(HOPS_PER_QUESTION * one["hop_p50_ms"], 2),
        "triton_encoder": round(one["p50"] - report["distributed_no_triton"]["p50"], 2),
    }
    report["p50_ratio_vs_baseline_bus"] = round(one["p50"] / report["distributed_baseline_bus"]["p50"], 3)
    report["overhead_p50_ms"] = round(one["p50"] - report["embedded"]["p50"], 2)
    report["throughput_ratio_2_vs_1_replicas"] = round(
        report[f"distributed_{args.slowest}_x2"]["throughput_per_s"] / one["throughput_per_s"], 2
    )
    text = json.dumps(report, indent=2)
    print(text)
    _print_budget("distributed code path, in-memory bus", report["distributed_code_path_memory_bus"]["budget"])
    _print_budget(f"distributed stack, {args.slowest} x1", one["budget"])
    for row in report["colocated"]:
        _print_budget(f"distributed stack, co-located {row['layout']}", row["budget"])
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
