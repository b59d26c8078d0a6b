"""Triton encoder calls per `af` request through the distributed code path, before and after the parser starts
the question's embedding ahead (`ParseStage.encode_ahead`, `QueryContext.encode_ahead`), measured in one run.

One process: a PyTriton encoder server (CPU, onnx-int8, as `stack up` runs it) and `--role all` over the
in-memory bus with `--encoder triton://…` (the stage code, workers and gateway of the stack, without a broker).
Every question is asked once per variant per round, the two variants alternating (order swapped each round) so
that both see the same machine load. Per variant: Triton inference requests per `Ask` (the client's batch hook,
i.e. `skbqa_encoder_batch_size`'s count), how many of them a stage thread waited on in sequence and how many ran
ahead in the background, the parser's compute hop and the end to end from the answers' `timings_ms`, and the
rankings, which must equal the other variant's and the embedded engine's (local encoder, same numerics).

    .venv/bin/python bench/triton_calls.py --qa data/biomed-sample/qa.jsonl --out bench/results/triton-calls.json
"""

from __future__ import annotations

import argparse
import json
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import numpy as np

from skbqa.devstack.ports import free_port
from skbqa.devstack.triton import start_triton_encoder_server
from skbqa.engine.embedded import EmbeddedEngine
from skbqa.models.local_encoder import load_encoder
from skbqa.observability import hops
from skbqa.serving import runtime as serving_runtime
from skbqa.serving.run import start_all_in_one
from skbqa.serving.settings import ServiceSettings
from skbqa.serving.stages.parser import ParseStage
from skbqa.v1 import api_pb2, api_pb2_grpc

VARIANTS = {"before": False, "after": True}  # ParseStage.encode_ahead
K = 20
AHEAD_THREAD = "skbqa-encode-ahead"  # QueryContext's background pool (query/context.py)


@dataclass
class CallLog:
    """Every Triton request the runtime's client sends, by whether a stage thread sent it or the pool ahead."""

    foreground: int = 0
    ahead: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, _size: int) -> None:
        with self.lock:
            if threading.current_thread().name.startswith(AHEAD_THREAD):
                self.ahead += 1
            else:
                self.foreground += 1

    def snapshot(self) -> tuple[int, int]:
        with self.lock:
            return self.foreground, self.ahead


@dataclass
class Measured:
    foreground: list[int] = field(default_factory=list)
    ahead: list[int] = field(default_factory=list)
    parser_compute: list[float] = field(default_factory=list)
    compute: list[float] = field(default_factory=list)  # the five stages' compute hops, summed
    ranking_compute: list[float] = field(default_factory=list)  # where the question was embedded when no phrase
    end_to_end: list[float] = field(default_factory=list)
    client: list[float] = field(default_factory=list)
    rankings: list[list[int]] = field(default_factory=list)


@contextmanager
def counting_triton_client(log: CallLog) -> Iterator[None]:
    """The runtime's Triton client reports each request it sends to `log` (and no longer to Prometheus: the
    bench needs per-request counts, not a histogram)."""
    original = serving_runtime.encoder_batch_meter

    def meter(_url: str) -> Callable[[int], None]:
        return log.record

    serving_runtime.encoder_batch_meter = meter  # type: ignore[assignment]
    try:
        yield
    finally:
        serving_runtime.encoder_batch_meter = original  # type: ignore[assignment]


def ask(stub: Any, log: CallLog, question: str, into: Measured) -> None:
    before = log.snapshot()
    started = time.perf_counter()
    reply = stub.Ask(api_pb2.AskRequest(question=question, strategy="af", k=K), timeout=60)
    into.client.append((time.perf_counter() - started) * 1000)
    # the answer arrives after the last stage's calls: nothing of this request is still in flight
    after = log.snapshot()
    into.foreground.append(after[0] - before[0])
    into.ahead.append(after[1] - before[1])
    timings = reply.timings_ms
    into.parser_compute.append(timings[f"{hops.TIMING_PREFIX}parser_compute"])
    into.ranking_compute.append(timings[f"{hops.TIMING_PREFIX}ranking_compute"])
    into.compute.append(sum(ms for key, ms in timings.items() if key.endswith("_compute")))
    into.end_to_end.append(reply.timings_ms[hops.END_TO_END])
    into.rankings.append([item.node_id for item in reply.items])


def summary(m: Measured) -> dict[str, Any]:
    def p50(values: list[float]) -> float:
        return round(float(np.percentile(values, 50)), 2)

    calls = [f + a for f, a in zip(m.foreground, m.ahead, strict=True)]
    return {
        "requests": len(calls),
        "triton_calls_per_ask": round(float(np.mean(calls)), 3),
        "sequential_calls_per_ask": round(float(np.mean(m.foreground)), 3),
        "ahead_calls_per_ask": round(float(np.mean(m.ahead)), 3),
        "max_calls_per_ask": max(calls),
        "parser_compute_p50_ms": p50(m.parser_compute),
        "parser_compute_mean_ms": round(float(np.mean(m.parser_compute)), 2),
        "ranking_compute_mean_ms": round(float(np.mean(m.ranking_compute)), 2),
        "compute_hops_p50_ms": p50(m.compute),
        "compute_hops_mean_ms": round(float(np.mean(m.compute)), 2),
        "end_to_end_p50_ms": p50(m.end_to_end),
        "client_p50_ms": p50(m.client),
    }


def ratio(after: float, before: float) -> float:
    return round(after / before, 3) if before else float("nan")


def run(index: Path, questions: list[str], rounds: int) -> dict[str, Any]:
    local = load_encoder("onnx-int8", threads=1)
    engine = EmbeddedEngine.open(index, encoder=local).warm("af")
    expected = [[i.node_id for i in engine.ask(q, strategy="af", k=K).items] for q in questions]
    log = CallLog()
    measured = {name: Measured() for name in VARIANTS}
    with tempfile.TemporaryDirectory(prefix="skbqa-triton-calls-") as tmp:
        server = start_triton_encoder_server(
            free_port(), free_port(), free_port(), runtime="onnx-int8", log_path=Path(tmp) / "triton.log"
        )
        try:
            settings = ServiceSettings(
                index=index, port=0, role="all", bus_url="memory://triton-calls", encoder_url=server.url
            )
            with counting_triton_client(log):
                running, stop = start_all_in_one(settings)
            try:
                with grpc.insecure_channel(f"127.0.0.1:{running.port}") as channel:
                    stub = api_pb2_grpc.SkbqaStub(channel)
                    for question in questions[:3]:  # warm connections, caches and the background pool
                        for ahead in VARIANTS.values():
                            ParseStage.encode_ahead = ahead
                            ask(stub, log, question, Measured())
                    for round_no in range(rounds):
                        order = list(VARIANTS) if round_no % 2 == 0 else list(reversed(VARIANTS))
                        for question in questions:
                            for name in order:
                                ParseStage.encode_ahead = VARIANTS[name]
                                ask(stub, log, question, measured[name])
            finally:
                ParseStage.encode_ahead = True
                stop()
        finally:
            server.stop()
    rows = {name: summary(m) for name, m in measured.items()}
    same_as_before = sum(
        a == b for a, b in zip(measured["after"].rankings, measured["before"].rankings, strict=True)
    )
    want = expected * rounds
    return {
        "questions": len(questions),
        "rounds": rounds,
        "k": K,
        "variants": rows,
        "ratios_after_to_before": {
            key: ratio(rows["after"][key], rows["before"][key])
            for key in (
                "triton_calls_per_ask",
                "sequential_calls_per_ask",
                "parser_compute_p50_ms",
                "parser_compute_mean_ms",
                "ranking_compute_mean_ms",
                "compute_hops_p50_ms",
                "compute_hops_mean_ms",
                "end_to_end_p50_ms",
                "client_p50_ms",
            )
        },
        "same_rankings_after_vs_before": f"{same_as_before}/{len(want)}",
        "same_rankings_vs_embedded": {
            name: f"{sum(a == b for a, b in zip(m.rankings, want, strict=True))}/{len(want)}"
            for name, m in measured.items()
        },
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--index", type=Path, help="an index of the sample (default: ingest data/biomed-sample)")
    p.add_argument("--qa", type=Path, default=Path("data/biomed-sample/qa.jsonl"))
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--out", type=Path, default=Path("bench/results/triton-calls.json"))
    args = p.parse_args()
    questions = [json.loads(line)["question"] for line in args.qa.read_text().splitlines() if line.strip()]
    with tempfile.TemporaryDirectory(prefix="skbqa-triton-calls-index-") as tmp:
        index = args.index
        if index is None:
            from skbqa.ingest.builder import ingest

            index = Path(tmp) / "index"
            ingest(args.qa.parent, index, load_encoder("onnx-int8"), progress=False)
        report = run(index, questions, args.rounds)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
