"""A stage service's gRPC server (`skbqa.v1.Stage/Process`) takes the gateway's TLS / mutual TLS / bearer-token
settings and bounds the calls in flight: RESOURCE_EXHAUSTED at once beyond it. Real gRPC, real certificates,
a stage core that holds calls until the test lets them go."""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from skbqa.serving.gateway.limits import ClientLimits
from skbqa.serving.settings import ServiceSettings
from skbqa.serving.stage_service import start_stage_server
from skbqa.serving.stages.core import StageMessage
from skbqa.v1 import stages_pb2_grpc
from tests.certs import Certs, make_certs
from tests.fakes.backends import GatedStageCore

OVERRIDE = (("grpc.ssl_target_name_override", "localhost"),)
MESSAGE = StageMessage(request_id="r-1", question="which genes are linked to asthma?", strategy="af", k=3)


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    return make_certs(tmp_path_factory.mktemp("certs"))


@pytest.fixture
def pool() -> Iterator[ThreadPoolExecutor]:
    with ThreadPoolExecutor(max_workers=8) as executor:
        yield executor


def settings(tmp_path: Path, **kwargs: object) -> ServiceSettings:
    options: dict[str, object] = {"bus_url": "memory://", **kwargs}
    return ServiceSettings(index=tmp_path, role="parser", port=0, **options)  # type: ignore[arg-type]


def secure(port: int, certs: Certs, *, client_cert: bool) -> grpc.Channel:
    credentials = grpc.ssl_channel_credentials(
        root_certificates=certs.ca.read_bytes(),
        private_key=certs.client_key.read_bytes() if client_cert else None,
        certificate_chain=certs.client_cert.read_bytes() if client_cert else None,
    )
    return grpc.secure_channel(f"127.0.0.1:{port}", credentials, options=OVERRIDE)


def process(channel: grpc.Channel, timeout: float = 10, **kwargs: object) -> object:
    return stages_pb2_grpc.StageStub(channel).Process(MESSAGE, timeout=timeout, **kwargs)


def code_of(call: object) -> grpc.StatusCode:
    with pytest.raises(grpc.RpcError) as caught:
        call()  # type: ignore[operator]
    return caught.value.code()  # type: ignore[no-any-return]


def test_stage_with_mutual_tls_serves_a_certified_client_only(tmp_path: Path, certs: Certs) -> None:
    core = GatedStageCore(open_gate=True)
    running = start_stage_server(
        core,
        settings(
            tmp_path,
            tls_cert_file=certs.server_cert,
            tls_key_file=certs.server_key,
            tls_client_ca_file=certs.ca,
        ),
    )
    running.set_serving(True)
    try:
        with secure(running.port, certs, client_cert=True) as channel:
            result = process(channel)
            assert result.has_forward and result.forward.request_id == "r-1"  # type: ignore[attr-defined]
        with secure(running.port, certs, client_cert=False) as channel:
            assert code_of(lambda: process(channel)) == grpc.StatusCode.UNAVAILABLE  # handshake refused
        with grpc.insecure_channel(f"127.0.0.1:{running.port}") as channel:
            assert code_of(lambda: process(channel)) == grpc.StatusCode.UNAVAILABLE  # no plaintext at all
    finally:
        running.stop(0)


def test_stage_with_tokens_refuses_calls_without_one_and_keeps_health_open(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text("stage-token\n")
    running = start_stage_server(GatedStageCore(open_gate=True), settings(tmp_path, tokens_file=tokens))
    running.set_serving(True)
    try:
        with grpc.insecure_channel(f"127.0.0.1:{running.port}") as channel:
            assert code_of(lambda: process(channel)) == grpc.StatusCode.UNAUTHENTICATED
            bad = (("authorization", "Bearer nope"),)
            assert code_of(lambda: process(channel, metadata=bad)) == grpc.StatusCode.UNAUTHENTICATED
            assert process(channel, metadata=(("authorization", "Bearer stage-token"),)).has_forward  # type: ignore[attr-defined]
            reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=5)
            assert reply.status == health_pb2.HealthCheckResponse.SERVING
    finally:
        running.stop(0)


def test_stage_overload_is_resource_exhausted_at_once(tmp_path: Path, pool: ThreadPoolExecutor) -> None:
    core = GatedStageCore()
    running = start_stage_server(core, settings(tmp_path, max_inflight=2))
    running.set_serving(True)
    try:
        with grpc.insecure_channel(f"127.0.0.1:{running.port}") as channel:
            held = [pool.submit(process, channel, 20) for _ in range(2)]
            core.wait_entered(2)
            for _ in range(4):
                started = time.monotonic()
                with pytest.raises(grpc.RpcError) as caught:
                    process(channel, 20)
                assert time.monotonic() - started < 1.0  # not queued behind the held calls
                assert caught.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
                assert caught.value.details() == "too many requests in flight on this server; retry with backoff"
            reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=1)
            assert reply.status == health_pb2.HealthCheckResponse.SERVING  # probes are outside the cap
            core.gate.set()
            assert all(f.result(20).has_forward for f in held)  # type: ignore[attr-defined]
            assert process(channel).has_forward  # type: ignore[attr-defined]  # the slots came back
    finally:
        core.gate.set()
        running.stop(0)


def test_stage_errors_stay_one_line_and_free_their_slot(tmp_path: Path) -> None:
    core = GatedStageCore(open_gate=True, error=RuntimeError(f"boom on {MESSAGE.question}"))
    running = start_stage_server(core, settings(tmp_path, max_inflight=1))
    running.set_serving(True)
    try:
        with grpc.insecure_channel(f"127.0.0.1:{running.port}") as channel:
            for _ in range(3):  # a failed call must give its slot back, or the second would be RESOURCE_EXHAUSTED
                with pytest.raises(grpc.RpcError) as caught:
                    process(channel)
                assert caught.value.code() == grpc.StatusCode.INTERNAL
                assert "asthma" not in caught.value.details() and "Traceback" not in caught.value.details()
    finally:
        running.stop(0)


def test_stage_applies_per_client_limits_when_given(tmp_path: Path) -> None:
    running = start_stage_server(
        GatedStageCore(open_gate=True), settings(tmp_path), limits=ClientLimits(rate_per_s=0.1, burst=2)
    )
    running.set_serving(True)
    try:
        with grpc.insecure_channel(f"127.0.0.1:{running.port}") as channel:
            assert process(channel).has_forward and process(channel).has_forward  # type: ignore[attr-defined]
            assert code_of(lambda: process(channel)) == grpc.StatusCode.RESOURCE_EXHAUSTED
    finally:
        running.stop(0)


def test_start_stage_uses_the_secured_stage_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, certs: Certs
) -> None:
    """`skbqa serve --role parser` wiring: `start_stage` gives its server the TLS settings (a stage core stands in
    for the real one, over the in-memory bus)."""
    import skbqa.serving.runtime as runtime
    import skbqa.serving.stage_versions as stage_versions
    import skbqa.serving.stages.registry as stages
    from skbqa.serving.run import start_stage

    monkeypatch.setattr(runtime, "build_runtime", lambda settings: None)
    monkeypatch.setattr(stages, "build_stage", lambda role, runtime: GatedStageCore(open_gate=True))
    # the stand-in holds no stores: it serves version 0 of the knowledge base
    monkeypatch.setattr(stage_versions, "core_version", lambda core: 0)
    secured = settings(
        tmp_path,
        bus_url="memory://stage-security-test",
        tls_cert_file=certs.server_cert,
        tls_key_file=certs.server_key,
        tls_client_ca_file=certs.ca,
    )
    running, stop = start_stage(secured)
    try:
        with secure(running.port, certs, client_cert=True) as channel:
            assert process(channel).has_forward  # type: ignore[attr-defined]
        with secure(running.port, certs, client_cert=False) as channel:
            assert code_of(lambda: process(channel)) == grpc.StatusCode.UNAVAILABLE
    finally:
        stop()
