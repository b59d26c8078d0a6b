"""Kafka TLS/SASL settings: read from SKBQA_KAFKA_* (a Secret in the chart), checked with one-line errors that never
quote a password, and handed to every client a KafkaBus builds. (Tansu 0.6, the broker these machines run, refuses
`--cert` together with `--key`, so TLS against a real broker is not testable here; the options are checked where
kafka-python receives them.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from skbqa.bus import kafka_admin, kafka_base, kafka_consumer, kafka_producer
from skbqa.bus.kafka import KafkaBus
from skbqa.bus.kafka_security import security_options
from skbqa.common.errors import InvalidInputError


def test_plaintext_by_default_adds_nothing() -> None:
    assert security_options({}) == {}


def test_sasl_ssl_with_a_ca(tmp_path: Path) -> None:
    ca = tmp_path / "ca.pem"
    ca.write_text("x")
    env = {
        "SKBQA_KAFKA_SECURITY_PROTOCOL": "sasl_ssl",
        "SKBQA_KAFKA_SSL_CAFILE": str(ca),
        "SKBQA_KAFKA_SASL_MECHANISM": "SCRAM-SHA-512",
        "SKBQA_KAFKA_SASL_USERNAME": "svc",
        "SKBQA_KAFKA_SASL_PASSWORD": "s3cret",
    }
    assert security_options(env) == {
        "security_protocol": "SASL_SSL",
        "ssl_cafile": str(ca),
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": "svc",
        "sasl_plain_password": "s3cret",
    }


@pytest.mark.parametrize(
    ("env", "names"),
    [
        ({"SKBQA_KAFKA_SECURITY_PROTOCOL": "TLS"}, "SKBQA_KAFKA_SECURITY_PROTOCOL"),
        ({"SKBQA_KAFKA_SECURITY_PROTOCOL": "SSL", "SKBQA_KAFKA_SSL_CAFILE": "/no/such.pem"}, "SSL_CAFILE"),
        ({"SKBQA_KAFKA_SSL_CAFILE": "/etc/hostname"}, "uses no TLS"),
        ({"SKBQA_KAFKA_SECURITY_PROTOCOL": "SASL_PLAINTEXT", "SKBQA_KAFKA_SASL_PASSWORD": "pw"}, "USERNAME"),
        ({"SKBQA_KAFKA_SASL_USERNAME": "svc", "SKBQA_KAFKA_SASL_PASSWORD": "pw"}, "PLAINTEXT"),
        (
            {
                "SKBQA_KAFKA_SECURITY_PROTOCOL": "SASL_SSL",
                "SKBQA_KAFKA_SASL_MECHANISM": "GSSAPI",
                "SKBQA_KAFKA_SASL_USERNAME": "svc",
                "SKBQA_KAFKA_SASL_PASSWORD": "pw",
            },
            "SASL_MECHANISM",
        ),
    ],
)
def test_bad_settings_name_the_variable_not_the_secret(env: dict[str, str], names: str) -> None:
    with pytest.raises(InvalidInputError) as caught:
        security_options(env)
    message = str(caught.value)
    assert names in message and "pw" not in message and "\n" not in message


def test_every_client_of_the_bus_gets_the_options(monkeypatch) -> None:
    seen: list[tuple[str, dict[str, Any]]] = []

    class Recorder:
        def __init__(self, kind: str) -> None:
            self.kind = kind

        def __call__(self, *args: Any, **kwargs: Any) -> Any:
            seen.append((self.kind, kwargs))
            raise RuntimeError("recorded")  # stop before any network I/O

    class FakeKafka:
        KafkaConsumer = Recorder("consumer")
        KafkaProducer = Recorder("producer")
        KafkaAdminClient = Recorder("admin")
        errors = __import__("kafka").errors

    for module in (kafka_base, kafka_producer, kafka_consumer, kafka_admin):
        monkeypatch.setattr(module, "_kafka", lambda: FakeKafka)
    options = {"security_protocol": "SASL_SSL", "sasl_plain_username": "svc", "sasl_plain_password": "pw"}
    bus = KafkaBus("127.0.0.1:1", security=options)
    for call in (
        lambda: bus.consumer(["t"], "g"),
        lambda: bus.publish("t", "k", b"v"),
        lambda: bus.ensure_topics(["t"]),
        lambda: bus.lag("g", ["t"]),
    ):
        with pytest.raises(Exception):  # noqa: B017 - whatever the bus makes of the recorder's refusal
            call()
    kinds = {kind for kind, kwargs in seen if all(kwargs.get(k) == v for k, v in options.items())}
    assert kinds == {"consumer", "producer", "admin"}, seen


def test_the_bus_reads_the_environment_by_default(monkeypatch) -> None:
    monkeypatch.setenv("SKBQA_KAFKA_SECURITY_PROTOCOL", "SASL_PLAINTEXT")
    monkeypatch.setenv("SKBQA_KAFKA_SASL_USERNAME", "svc")
    monkeypatch.setenv("SKBQA_KAFKA_SASL_PASSWORD", "pw")
    assert KafkaBus("127.0.0.1:1")._security["sasl_plain_username"] == "svc"
    monkeypatch.setenv("SKBQA_KAFKA_SECURITY_PROTOCOL", "nonsense")
    with pytest.raises(InvalidInputError):
        KafkaBus("127.0.0.1:1")
