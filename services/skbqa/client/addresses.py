"""One server address or several: the gRPC target and channel settings a client uses for them.

`HOST:PORT` is one server (gRPC's default `pick_first`, its DNS resolver). `IP:PORT,IP:PORT,...` is several
replicas of one service (the gateways of `skbqa stack up --replicas gateway=2`): the channel gets gRPC's static
address list (`ipv4:` / `ipv6:` target) and its `round_robin` balancer, so calls go to each replica in turn, and a
replica that is gone (connection refused or reset) is left out until it accepts connections again. With the
balancer, the channel also asks each replica's gRPC health service (`healthCheckConfig`): a replica that reports
NOT_SERVING (its broker lost, a stage stalled) gets no calls while another reports SERVING, as a Kubernetes
Service leaves out a pod that is not ready.

Retries stay the client's own (tenacity in `calls.py`: UNAVAILABLE only, within the call's deadline, the request id
kept): every attempt is picked by the balancer again, so a call refused by a dying replica is retried on a live
one. gRPC's own retry policy stays off: on top of those it would multiply the attempts.

Several addresses must be IP literals: gRPC's static list resolves no names (a DNS name with several records is
one address here, and gets `pick_first`).
"""

from __future__ import annotations

import ipaddress
import json
from typing import Any

from skbqa.common.errors import InvalidInputError, clip

MAX_ADDRESSES = 64
# A replica that went away is reconnected with a backoff that gRPC grows to 120 s by default: a restarted replica
# would get no calls for up to two minutes after it is back. Capped, the balancer uses it again within seconds.
RECONNECT_BACKOFF_INITIAL_MS = 500
RECONNECT_BACKOFF_MAX_MS = 2000
BALANCED_SERVICE_CONFIG = json.dumps(
    {"loadBalancingConfig": [{"round_robin": {}}], "healthCheckConfig": {"serviceName": ""}}
)


def split_addresses(target: str) -> tuple[str, ...]:
    """The HOST:PORT addresses in `target` (comma-separated); InvalidInputError, one line, when one is not."""
    addresses = tuple(part.strip() for part in target.split(","))
    if len(addresses) > MAX_ADDRESSES:
        raise InvalidInputError(f"at most {MAX_ADDRESSES} server addresses, got {len(addresses)}")
    for address in addresses:
        host, sep, port = address.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise InvalidInputError(f"server address must be HOST:PORT, got '{clip(address)}'")
    if len(addresses) > 1:
        _family(addresses)
    return addresses


def _family(addresses: tuple[str, ...]) -> str:
    """ "ipv4" or "ipv6": the static-list scheme of several addresses, which must all be IP literals of one kind."""
    kinds = set()
    for address in addresses:
        host = address.rpartition(":")[0]
        try:
            ip = ipaddress.ip_address(host[1:-1] if host.startswith("[") and host.endswith("]") else host)
        except ValueError:
            raise InvalidInputError(
                f"several server addresses must be IP:PORT (gRPC resolves no names in a list), got '{clip(address)}'"
            ) from None
        if ip.version == 6 and not host.startswith("["):
            raise InvalidInputError(f"an IPv6 address needs brackets: [{clip(host)}]:PORT")
        kinds.add(f"ipv{ip.version}")
    if len(kinds) > 1:
        raise InvalidInputError("several server addresses must all be IPv4 or all IPv6")
    return kinds.pop()


def channel_target(addresses: tuple[str, ...]) -> str:
    """What the gRPC channel is opened on: the address itself, or the static list of several."""
    if len(addresses) == 1:
        return addresses[0]
    return f"{_family(addresses)}:{','.join(addresses)}"


def balancing_options(addresses: tuple[str, ...]) -> list[tuple[str, Any]]:
    """Channel options for `addresses`: the reconnect backoff cap for all; the balancer with health checks, and
    the first address as the authority (TLS checks the certificate against it; the list itself is no host name),
    for several."""
    options: list[tuple[str, Any]] = [
        ("grpc.initial_reconnect_backoff_ms", RECONNECT_BACKOFF_INITIAL_MS),
        ("grpc.max_reconnect_backoff_ms", RECONNECT_BACKOFF_MAX_MS),
    ]
    if len(addresses) > 1:
        options += [
            ("grpc.service_config", BALANCED_SERVICE_CONFIG),
            ("grpc.default_authority", addresses[0]),
        ]
    return options
