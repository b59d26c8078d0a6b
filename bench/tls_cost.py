"""The latency cost of TLS, mutual TLS, bearer tokens and per-client limits on the public API, measured in one
process: one embedded pipeline behind one gRPC server per mode, the modes interleaved call by call.

Every round sends each question to every mode, in an order rotated per call, so drift (CPU frequency, caches,
other processes) lands on all modes alike; the cost of a mode is the median of its *paired* differences to
plaintext (same question, same round), with a bootstrap 95% interval as the spread. `IndexStatus` (no pipeline
work) shows the transport cost alone; `Ask` shows it against a real answer; a new connection per call shows the
handshake a client without connection reuse pays.

    .venv/bin/python bench/tls_cost.py --index .skbqa/biomed-sample --qa data/biomed-sample/qa.jsonl \
        --out bench/results/tls-cost.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
import numpy as np

from skbqa.engine.embedded import DEFAULT_STRATEGY, STRATEGY_NAMES
from skbqa.serving.gateway.api import SkbqaServicer
from skbqa.serving.gateway.backends import LocalBackend
from skbqa.serving.gateway.limits import ClientLimits
from skbqa.serving.grpc_server import RunningServer, start_server
from skbqa.serving.local_pipeline import LocalPipeline
from skbqa.serving.run import API_SERVICE, index_status
from skbqa.serving.runtime import build_runtime
from skbqa.serving.security import TlsSettings
from skbqa.serving.settings import ServiceSettings
from skbqa.v1 import api_pb2, api_pb2_grpc

TOKEN = "bench-token-0123456789abcdef0123"
MODES = ("plaintext", "plaintext+limits", "tls", "tls+token", "mtls+token")
# generous limits: what is measured is the interceptor's bookkeeping, never a refusal
LIMITS = ClientLimits(rate_per_s=1e6, burst=1_000_000, max_inflight=1000)


def _channel(port: int, certs: Any, mode: str) -> grpc.Channel:
    if mode.startswith("plaintext"):
        return grpc.insecure_channel(f"127.0.0.1:{port}")
    client = mode.startswith("mtls")
    credentials = grpc.ssl_channel_credentials(
        root_certificates=certs.ca.read_bytes(),
        private_key=certs.client_key.read_bytes() if client else None,
        certificate_chain=certs.client_cert.read_bytes() if client else None,
    )
    return grpc.secure_channel(
        f"127.0.0.1:{port}", credentials, options=(("grpc.ssl_target_name_override", "localhost"),)
    )


def _metadata(mode: str) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {TOKEN}"),) if mode.endswith("token") else ()


def _servers(index: Path, certs: Any) -> tuple[dict[str, RunningServer], Callable[[], None]]:
    """One pipeline, one servicer; a server per mode in front of it (only the transport differs)."""
    settings = ServiceSettings(index=index, port=0)
    pipeline = LocalPipeline(build_runtime(settings))
    pipeline.warm()
    backend = LocalBackend(pipeline, workers=2)
    servicer = SkbqaServicer(
        backend,
        strategies=list(STRATEGY_NAMES),
        default_strategy=DEFAULT_STRATEGY,
        status=index_status(settings, list(STRATEGY_NAMES)),
        gateway_id="bench",
    )
    servers = {}
    for mode in MODES:
        tls = None
        if not mode.startswith("plaintext"):
            tls = TlsSettings(certs.server_cert, certs.server_key, certs.ca if mode.startswith("mtls") else None)
        running = start_server(
            [(api_pb2_grpc.add_SkbqaServicer_to_server, servicer, API_SERVICE)],
            tls=tls,
            tokens=[TOKEN.encode()] if mode.endswith("token") else None,
            limits=LIMITS if mode.endswith("limits") else None,
        )
        running.set_serving(True)
        servers[mode] = running

    def stop() -> None:
        for running in servers.values():
            running.stop(0)
        backend.close()

    return servers, stop


def _rotated(step: int) -> list[str]:
    shift = step % len(MODES)
    return [*MODES[shift:], *MODES[:shift]]


def _timed(call: Callable[[], Any]) -> float:
    started = time.perf_counter()
    call()
    return (time.perf_counter() - started) * 1000


def _one_call(stub: Any, mode: str, question: str, *, ask: bool) -> Callable[[], Any]:
    metadata = _metadata(mode)
    if ask:
        request = api_pb2.AskRequest(question=question, k=10)
        return lambda: stub.Ask(request, timeout=60, metadata=metadata)
    return lambda: stub.IndexStatus(api_pb2.IndexStatusRequest(), timeout=60, metadata=metadata)


def _interleaved(stubs: dict[str, Any], questions: list[str], rounds: int, *, ask: bool) -> dict[str, list[float]]:
    """ms per call and mode; position i of every mode's list is the same (round, question)."""
    times: dict[str, list[float]] = {mode: [] for mode in MODES}
    step = 0
    for _ in range(rounds):
        for question in questions:
            for mode in _rotated(step):
                times[mode].append(_timed(_one_call(stubs[mode], mode, question, ask=ask)))
            step += 1
    return times


def _fresh_connections(
    servers: dict[str, RunningServer], certs: Any, question: str, calls: int
) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {mode: [] for mode in MODES}
    request = api_pb2.AskRequest(question=question, k=10)
    for step in range(calls):
        for mode in _rotated(step):

            def call(mode: str = mode) -> None:
                with _channel(servers[mode].port, certs, mode) as channel:
                    api_pb2_grpc.SkbqaStub(channel).Ask(request, timeout=60, metadata=_metadata(mode))

            times[mode].append(_timed(call))
    return times


def _bootstrap_median(values: np.ndarray, rng: np.random.Generator, draws: int = 2000) -> tuple[float, float]:
    picks = rng.integers(0, values.size, size=(draws, values.size))
    medians = np.median(values[picks], axis=1)
    return float(np.percentile(medians, 2.5)), float(np.percentile(medians, 97.5))


def _summary(times: dict[str, list[float]], rng: np.random.Generator) -> dict[str, Any]:
    base = np.asarray(times["plaintext"])
    out: dict[str, Any] = {}
    for mode in MODES:
        values = np.asarray(times[mode])
        row: dict[str, Any] = {
            "calls": int(values.size),
            "p50_ms": round(float(np.percentile(values, 50)), 3),
            "p95_ms": round(float(np.percentile(values, 95)), 3),
        }
        if mode != "plaintext":
            paired = values - base
            low, high = _bootstrap_median(paired, rng)
            row["added_ms_median_paired"] = round(float(np.median(paired)), 3)
            row["added_ms_ci95"] = [round(low, 3), round(high, 3)]
            row["added_ms_iqr"] = [round(float(np.percentile(paired, q)), 3) for q in (25, 75)]
            row["added_ms_p95"] = round(float(np.percentile(values, 95) - np.percentile(base, 95)), 3)
            row["p50_ratio_vs_plaintext"] = round(float(np.percentile(values, 50) / np.percentile(base, 50)), 3)
        out[mode] = row
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--qa", type=Path, required=True)
    parser.add_argument("--questions", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=15, help="Ask rounds over every question")
    parser.add_argument("--status-rounds", type=int, default=40, help="IndexStatus rounds over every question")
    parser.add_argument("--fresh", type=int, default=60, help="new-connection calls per mode")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.certs: the throwaway CA
    from tests.certs import make_certs

    lines = [line for line in args.qa.read_text().splitlines() if line.strip()]
    questions = [json.loads(line)["question"] for line in lines][: args.questions]
    rng = np.random.default_rng(7)
    with tempfile.TemporaryDirectory() as tmp:
        certs = make_certs(Path(tmp) / "certs")
        servers, stop = _servers(args.index, certs)
        channels = {mode: _channel(servers[mode].port, certs, mode) for mode in MODES}
        try:
            stubs = {mode: api_pb2_grpc.SkbqaStub(channel) for mode, channel in channels.items()}
            _interleaved(stubs, questions[:3], 1, ask=True)  # warm every connection and the pipeline
            started = time.perf_counter()
            ask = _interleaved(stubs, questions, args.rounds, ask=True)
            status = _interleaved(stubs, questions, args.status_rounds, ask=False)
            fresh = _fresh_connections(servers, certs, questions[0], args.fresh)
            seconds = time.perf_counter() - started
        finally:
            for channel in channels.values():
                channel.close()
            stop()
    report = {
        "method": "one process, one pipeline, a server per mode; modes interleaved per call in rotated order; "
        "added_ms = median of paired differences to plaintext (same question and round), ci95 by bootstrap",
        "questions": len(questions),
        "rounds": {"ask": args.rounds, "index_status": args.status_rounds, "new_connection": args.fresh},
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "grpc": grpc.__version__},
        "seconds": round(seconds, 1),
        "ask": _summary(ask, rng),
        "index_status": _summary(status, rng),
        "ask_new_connection": _summary(fresh, rng),
    }
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
