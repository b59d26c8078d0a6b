"""Loopback ports for the local launchers."""

from __future__ import annotations

import socket
import threading

LOOPBACK = "127.0.0.1"
_handed_out: set[tuple[str, int]] = set()
_lock = threading.Lock()


def free_port(host: str = LOOPBACK) -> int:
    """A port that was free on `host` a moment ago and that this process has not handed out before: the launchers
    ask for several ports before any child binds one, and the kernel may offer a just-released port again.
    Another process may still take it before the child binds; the child then fails with "address already in use"
    in its log."""
    with _lock:
        for _ in range(64):
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
                probe.bind((host, 0))
                port = int(probe.getsockname()[1])
            if (host, port) not in _handed_out:
                _handed_out.add((host, port))
                return port
        raise OSError(f"no free port on {host} that was not handed out already")
