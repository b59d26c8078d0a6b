"""Metrics that production code must record, checked where they are wired (not just that `Metrics` can record
them, which tests/unit/test_metrics_module.py covers): the Triton encoder a service builds reports its batch sizes.
The worker's and the Stage servicer's in-flight gauges: tests/unit/test_lag_exporter.py and
tests/unit/test_stage_service.py."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from skbqa.models.triton_encoder import ServedModel, TritonEncoder
from skbqa.observability.metrics import get_metrics
from skbqa.serving.runtime import build_encoder, encoder_batch_meter
from skbqa.serving.settings import ServiceSettings

NAME = "test-hashing/64"


def batch_samples(label: str) -> tuple[float, float]:
    registry = get_metrics().registry
    count = registry.get_sample_value("skbqa_encoder_batch_size_count", {"encoder": label}) or 0.0
    total = registry.get_sample_value("skbqa_encoder_batch_size_sum", {"encoder": label}) or 0.0
    return count, total


def test_the_triton_encoder_a_service_builds_reports_every_batch(monkeypatch, tmp_path: Path) -> None:
    # No server: the handshake and the inference call are replaced; the batching and the hook are the real ones.
    monkeypatch.setattr(TritonEncoder, "served", lambda self: ServedModel(NAME, 4, 0))

    def encode_batch(self: Any, batch: Any, dim: int) -> np.ndarray:
        return np.zeros((len(batch), dim), np.float32)

    monkeypatch.setattr(TritonEncoder, "_encode_batch", encode_batch)
    settings = ServiceSettings(index=tmp_path, encoder_url="triton://127.0.0.1:1/wired_encoder")
    stores = SimpleNamespace(manifest={"encoder": {"name": NAME}})
    encoder = build_encoder(settings, stores)  # type: ignore[arg-type]
    before = batch_samples("wired_encoder")
    encoder.encode(["text"] * 150)  # the client's batch size is 64: 64 + 64 + 22
    count, total = batch_samples("wired_encoder")
    assert (count - before[0], total - before[1]) == (3, 150)


def test_the_batch_label_is_the_model_name_from_the_url() -> None:
    before = batch_samples("skbqa_encoder")
    meter = encoder_batch_meter("triton://triton:8001/skbqa_encoder/2")
    assert meter is not None
    meter(8)
    assert batch_samples("skbqa_encoder") == (before[0] + 1, before[1] + 8)


def test_the_gateway_counts_the_calls_it_is_answering_as_in_flight() -> None:
    import grpc

    from skbqa.v1 import api_pb2, api_pb2_grpc
    from tests.fakes.backends import GatedBackend, start_api

    registry = get_metrics().registry

    def inflight() -> float:
        return registry.get_sample_value("skbqa_inflight", {"service": "gateway"}) or 0.0

    backend = GatedBackend()
    server = start_api(backend)
    before = inflight()
    try:
        with grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
            stub = api_pb2_grpc.SkbqaStub(channel)
            calls = [stub.Ask.future(api_pb2.AskRequest(question=f"question {n}"), timeout=30) for n in range(3)]
            backend.wait_entered(3)
            assert inflight() == before + 3  # held by the backend: all three are being answered
            backend.gate.set()
            assert all(call.result().items for call in calls)
        assert inflight() == before
    finally:
        backend.close()
        server.stop()


def test_serve_reads_the_lag_interval_from_a_flag_or_the_environment(monkeypatch, tmp_path: Path) -> None:
    from skbqa.cli.main import _parser as build_parser
    from skbqa.cli.serve import settings_from_args

    parser = build_parser()
    flag = parser.parse_args(["serve", "--index", str(tmp_path), "--lag-interval", "0"])
    assert settings_from_args(flag).lag_interval_s == 0.0
    monkeypatch.setenv("SKBQA_LAG_INTERVAL_S", "2.5")
    from_env = parser.parse_args(["serve", "--index", str(tmp_path)])
    assert settings_from_args(from_env).lag_interval_s == 2.5
