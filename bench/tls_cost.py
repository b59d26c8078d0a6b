"""The latency cost of TLS, mutual TLS and bearer tokens on `Ask` (issue 7), measured in one process against the
embedded server with the same questions; ratios against plaintext from the same run.

    .venv/bin/python bench/tls_cost.py --index .skbqa/biomed-sample --qa data/biomed-sample/qa.jsonl \
        --out bench/results/tls-cost.json
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import grpc
import numpy as np

from skbqa.distributed.settings import ServiceSettings
from skbqa.server.run import start_embedded
from skbqa.v1 import api_pb2, api_pb2_grpc

TOKEN = "bench-token"


def _channel(port: int, certs: Any, mode: str) -> grpc.Channel:
    if mode == "plaintext":
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


def _settings(index: Path, certs: Any, tokens: Path, mode: str) -> ServiceSettings:
    tls = mode != "plaintext"
    return ServiceSettings(
        index=index,
        port=0,
        tls_cert_file=certs.server_cert if tls else None,
        tls_key_file=certs.server_key if tls else None,
        tls_client_ca_file=certs.ca if mode.startswith("mtls") else None,
        tokens_file=tokens if mode.endswith("token") else None,
    )


def _measure(
    index: Path, certs: Any, tokens: Path, mode: str, questions: list[str], rounds: int
) -> dict[str, Any]:
    running, stop = start_embedded(_settings(index, certs, tokens, mode))
    metadata = (("authorization", f"Bearer {TOKEN}"),) if mode.endswith("token") else ()
    try:
        with _channel(running.port, certs, mode) as channel:
            stub = api_pb2_grpc.SkbqaStub(channel)
            for question in questions[:3]:
                stub.Ask(api_pb2.AskRequest(question=question), timeout=60, metadata=metadata)
            times = []
            for _ in range(rounds):
                for question in questions:
                    started = time.perf_counter()
                    stub.Ask(api_pb2.AskRequest(question=question), timeout=60, metadata=metadata)
                    times.append((time.perf_counter() - started) * 1000)
        # a new connection each call: what a client without connection reuse pays (handshakes included)
        fresh = []
        for question in questions[:10]:
            started = time.perf_counter()
            with _channel(running.port, certs, mode) as channel:
                api_pb2_grpc.SkbqaStub(channel).Ask(
                    api_pb2.AskRequest(question=question), timeout=60, metadata=metadata
                )
            fresh.append((time.perf_counter() - started) * 1000)
    finally:
        stop()
    return {
        "p50": round(float(np.percentile(times, 50)), 2),
        "p95": round(float(np.percentile(times, 95)), 2),
        "new_connection_p50": round(float(np.percentile(fresh, 50)), 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--qa", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.certs: the throwaway CA
    from tests.certs import make_certs

    questions = [json.loads(line)["question"] for line in args.qa.read_text().splitlines() if line.strip()][:20]
    with tempfile.TemporaryDirectory() as tmp:
        certs = make_certs(Path(tmp) / "certs")
        tokens = Path(tmp) / "tokens"
        tokens.write_text(TOKEN + "\n")
        report: dict[str, Any] = {"questions": len(questions), "rounds": args.rounds}
        for mode in ("plaintext", "tls", "tls+token", "mtls+token"):
            report[mode] = _measure(args.index, certs, tokens, mode, questions, args.rounds)
    base = report["plaintext"]
    for mode in ("tls", "tls+token", "mtls+token"):
        report[mode]["p50_ratio_vs_plaintext"] = round(report[mode]["p50"] / base["p50"], 3)
        report[mode]["p50_added_ms"] = round(report[mode]["p50"] - base["p50"], 2)
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
