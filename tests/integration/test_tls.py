"""The public API over TLS and mutual TLS, with bearer tokens, and the plaintext health-only port for probes."""

from __future__ import annotations

import json
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from skbqa.devstack.ports import free_port
from skbqa.serving.run import start_embedded
from skbqa.serving.settings import ServiceSettings
from skbqa.v1 import api_pb2, api_pb2_grpc
from tests.certs import Certs, make_certs, mutual_tls_settings
from tests.conftest import SAMPLE_BUNDLE

QUESTION = json.loads((SAMPLE_BUNDLE / "qa.jsonl").read_text().splitlines()[0])["question"]
OVERRIDE = (("grpc.ssl_target_name_override", "localhost"),)


@pytest.fixture(scope="module")
def certs(tmp_path_factory) -> Certs:
    return make_certs(tmp_path_factory.mktemp("certs"))


def _secure(port: int, certs: Certs, *, client: bool) -> grpc.Channel:
    credentials = grpc.ssl_channel_credentials(
        root_certificates=certs.ca.read_bytes(),
        private_key=certs.client_key.read_bytes() if client else None,
        certificate_chain=certs.client_cert.read_bytes() if client else None,
    )
    return grpc.secure_channel(f"127.0.0.1:{port}", credentials, options=OVERRIDE)


def test_tls_serves_and_refuses_plaintext(biomed_sample_engine, certs) -> None:
    settings = ServiceSettings(
        index=biomed_sample_engine.stores.directory,
        port=0,
        tls_cert_file=certs.server_cert,
        tls_key_file=certs.server_key,
        health_port=free_port(),
    )
    running, stop = start_embedded(settings)
    try:
        with _secure(running.port, certs, client=False) as channel:
            assert (
                api_pb2_grpc.SkbqaStub(channel).Ask(api_pb2.AskRequest(question=QUESTION, k=3), timeout=60).items
            )
        with grpc.insecure_channel(f"127.0.0.1:{running.port}") as channel, pytest.raises(grpc.RpcError) as caught:
            api_pb2_grpc.SkbqaStub(channel).Ask(api_pb2.AskRequest(question=QUESTION, k=3), timeout=10)
        assert caught.value.code() == grpc.StatusCode.UNAVAILABLE
        # kubelet's gRPC probes speak plaintext: health (only) on its own port
        with grpc.insecure_channel(f"127.0.0.1:{running.health_port}") as channel:
            reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=5)
            assert reply.status == health_pb2.HealthCheckResponse.SERVING
            with pytest.raises(grpc.RpcError) as caught:
                api_pb2_grpc.SkbqaStub(channel).Ask(api_pb2.AskRequest(question=QUESTION), timeout=10)
            assert caught.value.code() == grpc.StatusCode.UNIMPLEMENTED
    finally:
        stop()


def test_mutual_tls_and_tokens_together(biomed_sample_engine, certs, tmp_path: Path) -> None:
    settings = mutual_tls_settings(
        biomed_sample_engine.stores.directory, certs, tmp_path / "tokens", "token-a", "token-b"
    )
    running, stop = start_embedded(settings)
    request = api_pb2.AskRequest(question=QUESTION, k=3)
    try:
        with _secure(running.port, certs, client=True) as channel:
            stub = api_pb2_grpc.SkbqaStub(channel)
            assert stub.Ask(request, timeout=60, metadata=(("authorization", "Bearer token-b"),)).items
            with pytest.raises(grpc.RpcError) as caught:
                stub.Ask(request, timeout=30)
            assert caught.value.code() == grpc.StatusCode.UNAUTHENTICATED
        with _secure(running.port, certs, client=False) as channel, pytest.raises(grpc.RpcError) as caught:
            api_pb2_grpc.SkbqaStub(channel).Ask(
                request, timeout=10, metadata=(("authorization", "Bearer token-a"),)
            )
        assert caught.value.code() == grpc.StatusCode.UNAVAILABLE  # no client certificate: the handshake fails
    finally:
        stop()


def test_tls_settings_are_checked_with_one_line(tmp_path: Path) -> None:
    from skbqa.common.errors import InvalidInputError

    with pytest.raises(InvalidInputError, match="needs both a certificate and a key"):
        ServiceSettings(index=tmp_path, tls_cert_file=tmp_path / "c.pem").validate()
    with pytest.raises(InvalidInputError, match="does not exist"):
        from skbqa.serving.security import TlsSettings

        TlsSettings(tmp_path / "missing.pem", tmp_path / "missing.key").credentials()
