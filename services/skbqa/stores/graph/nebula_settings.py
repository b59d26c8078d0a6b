"""Where a NebulaGraph adapter connects: `NebulaSettings`, host:port lists and ``nebula://`` URLs."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from skbqa.stores.graph import ngql_quoting

DEFAULT_PORT = 9669
DEFAULT_USER = "root"
DEFAULT_PASSWORD = "nebula"  # NebulaGraph's out-of-the-box account; any password works while auth is off
DEFAULT_CHUNK = 512


@dataclass(frozen=True)
class NebulaSettings:
    addresses: tuple[tuple[str, int], ...]
    space: str
    user: str = DEFAULT_USER
    password: str = DEFAULT_PASSWORD
    timeout_ms: int = 60_000  # connect and per-statement timeout
    max_sessions: int = 16
    chunk_size: int = DEFAULT_CHUNK  # VIDs per GO / FETCH statement
    retries: int = 3
    backoff_s: float = 0.2

    @property
    def where(self) -> str:
        return f"space {self.space!r} at {format_addresses(self.addresses)}"


def format_addresses(addresses: Sequence[tuple[str, int]]) -> str:
    return ",".join(f"[{h}]:{p}" if ":" in h else f"{h}:{p}" for h, p in addresses)


def parse_addresses(addresses: str | Sequence[str]) -> tuple[tuple[str, int], ...]:
    """Parse "host:port,host2" or ["host:port", ...] → ((host, port), ...); the port defaults to 9669."""
    items = addresses.split(",") if isinstance(addresses, str) else list(addresses)
    parsed: list[tuple[str, int]] = []
    for raw in items:
        item = raw.strip()
        if item.startswith("["):  # [ipv6]:port
            host, _, rest = item[1:].partition("]")
            port_text = rest.removeprefix(":")
        elif item.count(":") == 1:
            host, _, port_text = item.partition(":")
        else:
            host, port_text = item, ""
        try:
            port = int(port_text) if port_text else DEFAULT_PORT
        except ValueError:
            raise ValueError(f"bad NebulaGraph address {raw!r}: the port must be a number") from None
        if not host or not 0 < port < 65536:
            raise ValueError(f"bad NebulaGraph address {raw!r}: expected host:port")
        parsed.append((host, port))
    if not parsed:
        raise ValueError("no NebulaGraph address given")
    return tuple(parsed)


def parse_nebula_url(url: str) -> NebulaSettings:
    """nebula://[user[:password]@]host:port[,host:port...]/space (user and password default to root / nebula)."""
    parts = urlsplit(url)
    if parts.scheme != "nebula":
        raise ValueError(f"not a NebulaGraph URL (nebula://host:port/space): {url!r}")
    userinfo, _, hosts = parts.netloc.rpartition("@")
    user, _, password = userinfo.partition(":")
    space = parts.path.strip("/")
    if not space or "/" in space:
        raise ValueError(f"the NebulaGraph URL must name one space: nebula://host:port/space, not {url!r}")
    ngql_quoting.quote_ident(space)
    # Credentials belong in a Secret, not in a URL that lands in values and logs: SKBQA_NEBULA_USER / _PASSWORD
    # (the chart sets them from an existing Secret) apply when the URL carries none.
    return NebulaSettings(
        parse_addresses(hosts),
        space,
        user=unquote(user) or os.environ.get("SKBQA_NEBULA_USER") or DEFAULT_USER,
        password=unquote(password) or os.environ.get("SKBQA_NEBULA_PASSWORD") or DEFAULT_PASSWORD,
    )
