"""Transport security and authentication for the Kafka bus, read from the environment (the chart sets these from an
existing Secret, so credentials never appear in a bus URL, in values or in logs).

| variable | kafka-python option | values |
|---|---|---|
| `SKBQA_KAFKA_SECURITY_PROTOCOL` | `security_protocol` | PLAINTEXT (default), SSL, SASL_PLAINTEXT, SASL_SSL |
| `SKBQA_KAFKA_SSL_CAFILE` | `ssl_cafile` | the CA that signed the brokers' certificates |
| `SKBQA_KAFKA_SSL_CERTFILE`, `SKBQA_KAFKA_SSL_KEYFILE` | `ssl_certfile`, `ssl_keyfile` | a client certificate (mTLS) |
| `SKBQA_KAFKA_SASL_MECHANISM` | `sasl_mechanism` | PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 |
| `SKBQA_KAFKA_SASL_USERNAME`, `SKBQA_KAFKA_SASL_PASSWORD` | `sasl_plain_username`, `sasl_plain_password` | |

Every Kafka client a `KafkaBus` makes (producer, consumers, admin, lag probe) gets the same options.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from skbqa.common.errors import InvalidInputError

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
_FILES = {"SSL_CAFILE": "ssl_cafile", "SSL_CERTFILE": "ssl_certfile", "SSL_KEYFILE": "ssl_keyfile"}


def _get(environ: Mapping[str, str], name: str) -> str:
    return environ.get(f"SKBQA_KAFKA_{name}", "").strip()


def security_options(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """kafka-python keyword arguments for the configured security; {} for plain PLAINTEXT. Bad settings fail fast
    with the variable's name (never its value: it may be a password)."""
    env = os.environ if environ is None else environ
    protocol = (_get(env, "SECURITY_PROTOCOL") or "PLAINTEXT").upper()
    if protocol not in PROTOCOLS:
        raise InvalidInputError(f"SKBQA_KAFKA_SECURITY_PROTOCOL must be one of {', '.join(PROTOCOLS)}")
    options: dict[str, Any] = {}
    if protocol != "PLAINTEXT":
        options["security_protocol"] = protocol
    for name, option in _FILES.items():
        path = _get(env, name)
        if not path:
            continue
        if "SSL" not in protocol:
            raise InvalidInputError(f"SKBQA_KAFKA_{name} is set but the protocol {protocol} uses no TLS")
        if not Path(path).is_file():
            raise InvalidInputError(f"SKBQA_KAFKA_{name}: no such file {path}")
        options[option] = path
    if ("ssl_certfile" in options) != ("ssl_keyfile" in options):
        raise InvalidInputError("a Kafka client certificate needs both SKBQA_KAFKA_SSL_CERTFILE and _SSL_KEYFILE")
    if protocol.startswith("SASL"):
        mechanism = (_get(env, "SASL_MECHANISM") or "PLAIN").upper()
        if mechanism not in MECHANISMS:
            raise InvalidInputError(f"SKBQA_KAFKA_SASL_MECHANISM must be one of {', '.join(MECHANISMS)}")
        username, password = _get(env, "SASL_USERNAME"), env.get("SKBQA_KAFKA_SASL_PASSWORD", "")
        if not username or not password:
            raise InvalidInputError(f"{protocol} needs SKBQA_KAFKA_SASL_USERNAME and SKBQA_KAFKA_SASL_PASSWORD")
        options.update(sasl_mechanism=mechanism, sasl_plain_username=username, sasl_plain_password=password)
    elif _get(env, "SASL_USERNAME") or _get(env, "SASL_MECHANISM"):
        raise InvalidInputError(f"SASL settings are set but SKBQA_KAFKA_SECURITY_PROTOCOL is {protocol}")
    return options
