"""Host names in a list of server addresses, resolved by the client: gRPC's static list (`ipv4:` / `ipv6:`) takes
IPs only, and gRPC Python has no resolver plugin to do it inside the channel (grpc/grpc#11685).

Each name is resolved with the system's resolver (`socket.getaddrinfo`: /etc/hosts, search domains and the
cluster DNS as any program sees them), every address it has (IPv4 and IPv6), in a worker thread: the call waiting
for it stays bounded by its deadline, and an asyncio client's event loop is never blocked. A name that does not
resolve while another does is left out (a pod that is not ready has no record yet) and tried again at the next
resolution; when none resolves, the call fails UNAVAILABLE with `UnresolvedNameError`, one line.

When to resolve again follows gRPC's own DNS resolver: after connections fail (here: a call ended UNAVAILABLE),
at most once per `RESOLVE_AFTER_FAILURE_S` (a rolling restart gives every pod a new IP; waiting gRPC's 30 s would
outlast the call's deadline); and every `RESOLVE_EVERY_S` besides, in the background, so a replica that moved
while the others kept answering is found again (gRPC re-resolves when any subchannel fails; the Python API does not
show subchannels).
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor

from skbqa.client.addresses import ip_of
from skbqa.client.errors import UnresolvedNameError
from skbqa.common.errors import clip

RESOLVE_EVERY_S = (
    30.0  # gRPC's DNS resolver's floor between resolutions (grpc.dns_min_time_between_resolutions_ms)
)
RESOLVE_AFTER_FAILURE_S = 1.0
MAX_RESOLVED = 256  # addresses one list may resolve to: a bounded channel, whatever the DNS answers
MAX_NAMED_FAILURES = 3  # names quoted in the error when none resolves: one line

# (host, port) → [(ip, port), ...]; a test's stand-in for the DNS
Lookup = Callable[[str, int], Sequence[tuple[str, int]]]

# Resolutions of every client in this process share these threads: getaddrinfo blocks and has no timeout of its
# own, so a waiting call gives up at its deadline and leaves the lookup to finish here.
_RESOLVERS = ThreadPoolExecutor(max_workers=4, thread_name_prefix="skbqa-resolve")


def system_lookup(host: str, port: int) -> list[tuple[str, int]]:
    """Every TCP address of `host` the system's resolver gives (IPv4 and IPv6)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [(str(info[4][0]), int(info[4][1])) for info in infos if info[0] in (socket.AF_INET, socket.AF_INET6)]


def resolve(addresses: Sequence[str], lookup: Lookup = system_lookup) -> tuple[str, ...]:
    """IP:PORT for every address of every HOST:PORT in `addresses` (an IP literal stands for itself), without
    duplicates, in order; UnresolvedNameError when not one address is found."""
    found: dict[str, None] = {}
    failures: list[str] = []
    for address in addresses:
        host, _, port = address.rpartition(":")
        if ip_of(host) is not None:
            found[address] = None
            continue
        try:
            resolved = lookup(host.rstrip("."), int(port))
        except (OSError, UnicodeError) as exc:  # gaierror is an OSError; a label over 63 bytes a UnicodeError
            failures.append(f"'{clip(host)}' ({clip(getattr(exc, 'strerror', None) or type(exc).__name__)})")
            continue
        if not resolved:
            failures.append(f"'{clip(host)}' (no IPv4 or IPv6 address)")
        for ip, resolved_port in resolved:
            found[_address(ip, resolved_port)] = None
    if not found:
        more = len(failures) - MAX_NAMED_FAILURES
        named = ", ".join(failures[:MAX_NAMED_FAILURES]) + (f" and {more} more" if more > 0 else "")
        raise UnresolvedNameError(f"no server name resolves: {named}")
    return tuple(found)[:MAX_RESOLVED]


def resolve_later(addresses: Sequence[str], lookup: Lookup) -> Future[tuple[str, ...]]:
    """`resolve` in the shared resolver threads."""
    return _RESOLVERS.submit(resolve, addresses, lookup)


def _address(ip: str, port: int) -> str:
    """IP:PORT as gRPC's static list writes it; an IPv6 address's zone (`fe80::1%eth0`) kept."""
    return f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"
