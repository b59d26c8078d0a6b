"""The gRPC channel a client calls through, and — for a list of addresses with host names — the channel rebuilt
when the names resolve to other addresses, without ending any call under way on the old one.

One address, or a list of IP literals, is one channel for the client's life (gRPC resolves a single name itself).
A list with names gets a channel on what they resolve to (`resolver.py`); a later resolution that finds other
addresses opens a new channel for the calls that start from then on, and the old one is closed when its last
call ends (closing a sync channel would end its calls at once). Every call holds a `Lease` on the channel it
started on; the blocking and the asyncio client share this bookkeeping and differ only in how they wait for a
resolution and close a channel.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from skbqa.client.addresses import channel_target, has_names
from skbqa.client.errors import ServerError
from skbqa.client.resolver import (
    RESOLVE_AFTER_FAILURE_S,
    RESOLVE_EVERY_S,
    Lookup,
    resolve_later,
    system_lookup,
)

# opens a channel on a gRPC target: (the channel to close, the channel calls go through, the Skbqa stub)
Opener = Callable[[str], tuple[Any, Any, Any]]


@dataclass
class Lease:
    """One channel, its resolved addresses and the calls on it now."""

    channel: Any  # what `close` closes
    calls_channel: Any  # the channel with the client's interceptors (the health stub goes through it)
    stub: Any
    addresses: tuple[str, ...]
    calls: int = 0
    retired: bool = False


class Channels:
    """The client's current channel, resolution state and retired channels. Thread-safe (the sync client is shared
    between threads; an asyncio client touches it from its loop only)."""

    def __init__(
        self,
        addresses: tuple[str, ...],
        open_channel: Opener,
        *,
        lookup: Lookup = system_lookup,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._addresses = addresses
        self._open = open_channel
        self._lookup = lookup
        self._clock = clock
        self._lock = threading.Lock()
        self._current: Lease | None = None
        self._closable: list[Any] = []  # retired channels whose last call ended
        self._retired: list[Lease] = []
        self._resolving: Future[tuple[str, ...]] | None = None
        self._resolved_at = float("-inf")
        self._failed = False  # a call ended UNAVAILABLE since the last resolution
        self._urgent = False  # calls wait for the resolution under way (else it runs in the background)
        self._closed = False
        self.resolving = has_names(addresses)
        if not self.resolving:  # opening a channel connects nothing yet: no I/O here
            self._current = Lease(*open_channel(channel_target(addresses)), addresses=addresses)

    def begin(self) -> Future[tuple[str, ...]] | None:
        """Starts a resolution when one is due; returns it when the call should wait for it (no channel yet, or
        every call failing), None when the call goes on with the channel it has."""
        if not self.resolving:
            return None
        with self._lock:
            now = self._clock()
            since = now - self._resolved_at
            urgent = self._current is None or (self._failed and since >= RESOLVE_AFTER_FAILURE_S)
            if self._resolving is None and (urgent or since >= RESOLVE_EVERY_S):
                self._resolving = resolve_later(self._addresses, self._lookup)
                self._resolved_at, self._failed, self._urgent = now, False, urgent
            return self._resolving if self._urgent else None

    def lease(self, attempts: int = 1) -> Lease:
        """The channel a call starts on (after any resolution that has finished); UnresolvedNameError, or
        UNAVAILABLE, when there is none yet (counted at the call's `attempts`)."""
        with self._lock:
            if self._closed:  # as gRPC says of a call on a closed channel (and never a new channel for it)
                raise ValueError("the client is closed")
            error = self._take_resolution()
            if self._current is None:
                error = error or ServerError("UNAVAILABLE", "the server names are still being resolved")
                raise error.again(attempts)
            self._current.calls += 1
            return self._current

    def end(self, lease: Lease, *, unavailable: bool) -> list[Any]:
        """The call on `lease` ended (UNAVAILABLE, or not); returns the retired channels to close now."""
        with self._lock:
            lease.calls -= 1
            self._failed = self._failed or unavailable
            if lease.retired and lease.calls == 0 and lease in self._retired:
                self._retired.remove(lease)
                self._closable.append(lease.channel)
            closable, self._closable = self._closable, []
            return closable

    def close_all(self) -> list[Any]:
        """Every channel, to close with the client (calls still under way end with them)."""
        with self._lock:
            channels = [*self._closable, *(lease.channel for lease in self._retired)]
            if self._current is not None:
                channels.append(self._current.channel)
            self._current, self._closable, self._retired, self._closed = None, [], [], True
            return channels

    @property
    def addresses(self) -> tuple[str, ...]:
        """The IP:PORT addresses calls go to now (the addresses as given, before a list with names resolved)."""
        with self._lock:
            return self._current.addresses if self._current is not None else self._addresses

    def _take_resolution(self) -> ServerError | None:
        """Under the lock: a finished resolution becomes the current channel when its addresses differ; a failed
        one keeps the channel there is (stale addresses beat none) and is returned."""
        future = self._resolving
        if future is None or not future.done():
            return None
        self._resolving, self._urgent = None, False
        try:
            resolved = future.result()
        except ServerError as error:
            return error
        except Exception as error:  # a lookup's unexpected failure: the same one line, never a traceback
            return ServerError("UNAVAILABLE", f"resolving the server addresses failed ({type(error).__name__})")
        if self._current is not None and set(resolved) == set(self._current.addresses):
            return None
        old, self._current = self._current, Lease(*self._open(channel_target(resolved)), addresses=resolved)
        if old is not None:
            old.retired = True
            if old.calls:
                self._retired.append(old)
            else:
                self._closable.append(old.channel)
        return None
