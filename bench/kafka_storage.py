"""The local stack on each broker storage, in one run: memory against durable s3 served by each object store.

For every row (``memory``, then ``s3`` on each ``--s3-servers`` entry) a stack of its own is started on the
same index and the same questions, and measured:

1. sequential `Ask` latency p50/p95 (``--sequential`` calls, the questions in turn);
2. closed-loop throughput and latency with ``--clients`` concurrent clients (``--requests`` calls), and the p50 of
   each block of calls in order (does latency grow with use? Tansu 0.6's s3 engine lists a partition's whole
   history on every fetch);
3. an open-loop ``--rate`` req/s run (``--paced`` calls, each with a ``--deadline``): p50/p95 and failures;
4. idle CPU of the broker (tansu) and of its object store over ``--idle-seconds``;
5. durable rows: recovery after ``kill -9`` of Tansu under the paced load: seconds from the kill until calls
   are answered again, failures, and whether every call sent after recovery is answered.

Ratios are against the memory row of this run. The stack runs without Triton and Ray (each service encodes in
process) so that the broker is the only thing that differs and the run stays within a few minutes on 2 cores.

    .venv/bin/python bench/kafka_storage.py --index .skbqa/biomed --qa data/biomed-sample/qa.jsonl \
        --out bench/results/kafka-storage.json
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import grpc
import numpy as np
import psutil

from skbqa.devstack.stack import LocalStack, StackOptions
from skbqa.v1 import api_pb2, api_pb2_grpc


def _questions(path: Path, limit: int) -> list[str]:
    return [json.loads(line)["question"] for line in path.read_text().splitlines() if line.strip()][:limit]


def _summary(times: list[float]) -> dict[str, float]:
    if not times:
        return {"p50": float("nan"), "p95": float("nan")}
    return {"p50": round(float(np.percentile(times, 50)), 1), "p95": round(float(np.percentile(times, 95)), 1)}


def _ask(stub: Any, question: str, deadline_s: float) -> float | None:
    """Milliseconds for one answered call, None for a failed one."""
    started = time.perf_counter()
    try:
        stub.Ask(api_pb2.AskRequest(question=question), timeout=deadline_s)
    except grpc.RpcError:
        return None
    return (time.perf_counter() - started) * 1000


def _sequential(stub: Any, questions: list[str], calls: int) -> dict[str, float]:
    times = [_ask(stub, questions[i % len(questions)], 60) for i in range(calls)]
    return _summary([t for t in times if t is not None]) | {"failed": sum(t is None for t in times)}


def _closed_loop(stub: Any, questions: list[str], clients: int, total: int, blocks: int) -> dict[str, Any]:
    work = [questions[i % len(questions)] for i in range(total)]
    started = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        times = list(pool.map(lambda q: _ask(stub, q, 60), work))
    elapsed = time.perf_counter() - started
    answered = [t for t in times if t is not None]
    size = max(1, total // blocks)
    per_block = [_summary([t for t in times[i : i + size] if t is not None])["p50"] for i in range(0, total, size)]
    return {
        "throughput_per_s": round(len(answered) / elapsed, 2),
        **_summary(answered),
        "failed": total - len(answered),
        "block_p50_ms": per_block,
    }


def _paced(
    stub: Any, questions: list[str], rate: float, calls: int, deadline_s: float
) -> list[tuple[float, float | None]]:
    """Open loop: a call every 1/rate s whatever the answers do; (send time, ms or None) per call."""
    results: list[tuple[float, float | None]] = []
    lock = threading.Lock()

    def one(i: int, sent: float) -> None:
        outcome = _ask(stub, questions[i % len(questions)], deadline_s)
        with lock:
            results.append((sent, outcome))

    threads = []
    start = time.perf_counter()
    for i in range(calls):
        time.sleep(max(0.0, start + i / rate - time.perf_counter()))
        thread = threading.Thread(target=one, args=(i, time.perf_counter()))
        thread.start()
        threads.append(thread)
    for thread in threads:
        thread.join()
    return sorted(results, key=lambda r: r[0])


def _paced_summary(results: list[tuple[float, float | None]]) -> dict[str, Any]:
    answered = [t for _, t in results if t is not None]
    return _summary(answered) | {"calls": len(results), "failed": len(results) - len(answered)}


def _broker_pids(stack: LocalStack) -> dict[str, int]:
    """tansu (and its object store) under the stack's broker launcher."""
    pids_file = stack.directory / "broker-data" / "pids.json"
    if pids_file.is_file():
        return {k: int(v) for k, v in json.loads(pids_file.read_text()).items()}
    launcher = psutil.Process(stack.processes["broker"].pid)
    tansu = next(p.pid for p in launcher.children(recursive=True) if p.name() == "tansu")
    return {"tansu": tansu}


def _idle_cpu(pids: dict[str, int], seconds: float) -> dict[str, float]:
    processes = {name: psutil.Process(pid) for name, pid in pids.items()}
    before = {name: p.cpu_times() for name, p in processes.items()}
    time.sleep(seconds)
    after = {name: p.cpu_times() for name, p in processes.items()}
    return {
        f"{name}_pct_of_core": round(
            100 * (after[name].user + after[name].system - before[name].user - before[name].system) / seconds, 1
        )
        for name in processes
    }


def _recovery(stack: LocalStack, stub: Any, questions: list[str], args: argparse.Namespace) -> dict[str, Any]:
    """kill -9 of Tansu a few seconds into a paced run; the launcher restarts it over the same object store."""
    tansu = _broker_pids(stack)["tansu"]
    killed_at: list[float] = []

    def kill_later() -> None:
        time.sleep(args.kill_after)
        killed_at.append(time.perf_counter())
        os.kill(tansu, signal.SIGKILL)

    killer = threading.Thread(target=kill_later)
    killer.start()
    results = _paced(stub, questions, args.rate, args.recovery_calls, args.deadline)
    killer.join()
    kill = killed_at[0]
    after = [(sent, t) for sent, t in results if sent >= kill]
    # recovered: the first call sent after the kill from which every later call was answered
    recovered_at = None
    for index, (sent, _) in enumerate(after):
        if all(t is not None for _, t in after[index:]):
            recovered_at = sent
            break
    answered_after = [sent + t / 1000 for sent, t in after if t is not None]
    return {
        "kill_after_s": args.kill_after,
        "calls": len(results),
        "failed": sum(t is None for _, t in results),
        "first_answer_after_kill_s": round(min(answered_after) - kill, 1) if answered_after else None,
        "all_answered_from_s": round(recovered_at - kill, 1) if recovered_at is not None else None,
        "after_recovery": _paced_summary([(s, t) for s, t in after if recovered_at and s >= recovered_at]),
    }


def measure(args: argparse.Namespace, questions: list[str], storage: str, s3_server: str) -> dict[str, Any]:
    name = storage if storage == "memory" else f"s3-{s3_server}"
    with tempfile.TemporaryDirectory(prefix=f"skbqa-storage-{name}-") as tmp:
        options = StackOptions(
            index=args.index, directory=Path(tmp), gateway_port=0, triton=False, ray=False,
            broker_storage=storage, broker_s3_server=s3_server,
        )  # fmt: skip
        stack = LocalStack(options)
        started = time.perf_counter()
        stack.up()
        row: dict[str, Any] = {"row": name, "stack_up_s": round(time.perf_counter() - started, 1)}
        try:
            with grpc.insecure_channel(f"127.0.0.1:{stack.ports['gateway']}") as channel:
                stub = api_pb2_grpc.SkbqaStub(channel)
                for question in questions[:5]:  # warm connections, caches and the consumers' fetch positions
                    _ask(stub, question, 60)
                row["sequential"] = _sequential(stub, questions, args.sequential)
                row["closed_loop"] = _closed_loop(stub, questions, args.clients, args.requests, args.blocks)
                row["paced"] = _paced_summary(_paced(stub, questions, args.rate, args.paced, args.deadline))
                row["idle_cpu"] = _idle_cpu(_broker_pids(stack), args.idle_seconds)
                if storage != "memory":
                    row["recovery"] = _recovery(stack, stub, questions, args)
        finally:
            stack.down()
        print(json.dumps(row), flush=True)
        return row


def _ratios(rows: list[dict[str, Any]]) -> None:
    base = rows[0]
    for row in rows[1:]:
        row["vs_memory"] = {
            "throughput": round(
                row["closed_loop"]["throughput_per_s"] / base["closed_loop"]["throughput_per_s"], 2
            ),
            "sequential_p50": round(row["sequential"]["p50"] / base["sequential"]["p50"], 2),
            "closed_loop_p50": round(row["closed_loop"]["p50"] / base["closed_loop"]["p50"], 2),
            "paced_p50": round(row["paced"]["p50"] / base["paced"]["p50"], 2),
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--qa", type=Path, required=True)
    parser.add_argument("--limit", type=int, default=20)
    parser.add_argument("--s3-servers", nargs="+", default=["files", "moto"])
    parser.add_argument("--sequential", type=int, default=40)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--requests", type=int, default=160)
    parser.add_argument("--blocks", type=int, default=4)
    parser.add_argument("--rate", type=float, default=4.0, help="paced calls per second (issue 19's load)")
    parser.add_argument("--paced", type=int, default=40)
    parser.add_argument("--deadline", type=float, default=10.0, help="each paced call's deadline, seconds")
    parser.add_argument("--idle-seconds", type=float, default=5.0)
    parser.add_argument("--kill-after", type=float, default=3.0)
    parser.add_argument("--recovery-calls", type=int, default=120, help="paced calls of the kill run")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    questions = _questions(args.qa, args.limit)
    rows = [measure(args, questions, "memory", "files")]
    rows += [measure(args, questions, "s3", server) for server in args.s3_servers]
    _ratios(rows)
    settings = {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()}
    result = {"questions": len(questions), "settings": settings, "rows": rows}
    print(json.dumps([{"row": r["row"], **r.get("vs_memory", {})} for r in rows]), flush=True)
    if args.out:
        args.out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
