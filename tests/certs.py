"""Throwaway certificates for TLS tests and benchmarks: a CA, a server certificate for 127.0.0.1/localhost and a
client certificate, written as PEM files (the `cryptography` package, no openssl calls)."""

from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from skbqa.serving.settings import ServiceSettings


@dataclass(frozen=True)
class Certs:
    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def make_certs(directory: Path) -> Certs:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    directory.mkdir(parents=True, exist_ok=True)
    now = dt.datetime.now(dt.UTC)

    def key() -> ec.EllipticCurvePrivateKey:
        return ec.generate_private_key(ec.SECP256R1())

    def pem_key(k: ec.EllipticCurvePrivateKey) -> bytes:
        return k.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )

    def name(common: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])

    ca_key = key()
    ca = (
        x509.CertificateBuilder()
        .subject_name(name("skbqa test CA"))
        .issuer_name(name("skbqa test CA"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )

    def leaf(common: str, usage: x509.ObjectIdentifier, sans: list[x509.GeneralName]) -> tuple[bytes, bytes]:
        k = key()
        builder = (
            x509.CertificateBuilder()
            .subject_name(name(common))
            .issuer_name(ca.subject)
            .public_key(k.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(days=1))
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        )
        if sans:
            builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
        cert = builder.sign(ca_key, hashes.SHA256())
        return cert.public_bytes(serialization.Encoding.PEM), pem_key(k)

    server_cert, server_key = leaf(
        "localhost",
        ExtendedKeyUsageOID.SERVER_AUTH,
        [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))],
    )
    client_cert, client_key = leaf("skbqa test client", ExtendedKeyUsageOID.CLIENT_AUTH, [])
    return Certs(
        ca=_write(directory / "ca.pem", ca.public_bytes(serialization.Encoding.PEM)),
        server_cert=_write(directory / "server.pem", server_cert),
        server_key=_write(directory / "server.key", server_key),
        client_cert=_write(directory / "client.pem", client_cert),
        client_key=_write(directory / "client.key", client_key),
    )


def mutual_tls_settings(index: Path, certs: Certs, tokens_file: Path, *tokens: str) -> ServiceSettings:
    """An embedded server's settings with mutual TLS (these certificates) and bearer tokens (written to
    `tokens_file`)."""
    from skbqa.serving.settings import ServiceSettings

    tokens_file.write_text("".join(f"{token}\n" for token in tokens))
    return ServiceSettings(
        index=index,
        port=0,
        tls_cert_file=certs.server_cert,
        tls_key_file=certs.server_key,
        tls_client_ca_file=certs.ca,
        tokens_file=tokens_file,
    )
