"""One server address or several: the gRPC target and channel settings a client uses for them.

`HOST:PORT` is one server (gRPC's default `pick_first`, its own DNS resolver, which already returns every A/AAAA
record of the name). `HOST:PORT,HOST:PORT,...` is several replicas of one service (the gateways of `skbqa stack
up --replicas gateway=2`, or `gateway-0.gw:50051,gateway-1.gw:50051` on Kubernetes): the channel gets gRPC's
static address list (`ipv4:` / `ipv6:` target) and its `round_robin` balancer, so calls go to each replica in turn,
and a replica that is gone (connection refused or reset) is left out until it accepts connections again. With the
balancer, the channel also asks each replica's gRPC health service (`healthCheckConfig`): a replica that reports
NOT_SERVING (its broker lost, a stage stalled) gets no calls while another reports SERVING, as a Kubernetes
Service leaves out a pod that is not ready.

gRPC's static list resolves no names, and gRPC Python has no resolver plugin API (grpc/grpc#11685): host names in
a list are resolved by the client itself (`resolver.py`, `channels.py`), every address of each name, into a
static list of IPs. IPv4 and IPv6 results mix in one `ipv6:` list, an IPv4 address written IPv4-mapped
(`[::ffff:10.0.0.5]`): gRPC connects to those over IPv4 (a dual-stack socket, or a plain IPv4 one where the host
has no IPv6).

Retries stay the client's own (tenacity in `calls.py`: UNAVAILABLE only, within the call's deadline, the request id
kept): every attempt is picked by the balancer again, so a call refused by a dying replica is retried on a live
one. gRPC's own retry policy stays off: on top of those it would multiply the attempts.
"""

from __future__ import annotations

import ipaddress
import json
import re
from typing import Any

from skbqa.common.errors import InvalidInputError, clip

MAX_ADDRESSES = 64
# A DNS name is at most 253 characters (RFC 1035); labels of letters, digits, '-' and '_' (Docker Compose names
# have underscores). Anything else is refused here, so no error message ever quotes a long or odd host.
_HOST_NAME = re.compile(
    r"(?=.{1,253}\.?$)[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?(\.[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?)*\.?"
)
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
        if len(addresses) > 1 and ip_of(host) is None and not _HOST_NAME.fullmatch(host):
            raise InvalidInputError(f"server address must be IP:PORT or NAME:PORT, got '{clip(address)}'")
    return addresses


def ip_of(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The IP `host` is a literal of (IPv6 in brackets), else None (a name). An IPv6 literal without brackets is
    refused: `::1:5` could be a port or not."""
    bracketed = host.startswith("[") and host.endswith("]")
    try:
        ip = ipaddress.ip_address(host[1:-1] if bracketed else host)
    except ValueError:
        return None
    if ip.version == 6 and not bracketed:
        raise InvalidInputError(f"an IPv6 address needs brackets: [{clip(host)}]:PORT")
    return ip


def has_names(addresses: tuple[str, ...]) -> bool:
    """Whether the client resolves `addresses` itself: a list (gRPC's static list takes IPs only) with a name."""
    return len(addresses) > 1 and any(ip_of(address.rpartition(":")[0]) is None for address in addresses)


def channel_target(addresses: tuple[str, ...]) -> str:
    """What the gRPC channel is opened on: one address itself (gRPC resolves a name), or the static list of several
    IP:PORT — `ipv4:` when all are IPv4, else `ipv6:` with any IPv4 one written IPv4-mapped."""
    if len(addresses) == 1:
        return addresses[0]
    parsed = [(ip_of(host), port) for host, _, port in (address.rpartition(":") for address in addresses)]
    if any(ip is None for ip, _ in parsed):
        raise InvalidInputError("a list of server addresses with names is resolved first (resolver.py)")
    if all(ip is not None and ip.version == 4 for ip, _ in parsed):
        return "ipv4:" + ",".join(f"{ip}:{port}" for ip, port in parsed)
    return "ipv6:" + ",".join(f"[{_as_ipv6(ip)}]:{port}" for ip, port in parsed)


def _as_ipv6(ip: Any) -> str:
    return f"::ffff:{ip}" if ip.version == 4 else str(ip)


def balancing_options(addresses: tuple[str, ...]) -> list[tuple[str, Any]]:
    """Channel options for `addresses` (as given, before any resolving): the reconnect backoff cap for all; the
    balancer with health checks, and the first address as the authority (TLS checks the certificate against it;
    the list itself is no host name), for several."""
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
