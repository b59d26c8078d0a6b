"""The versions feed joins its group again when a busy broker does not complete a join in time, and gives up
(the process exits with the broker's error) only after `JOIN_ATTEMPTS` tries."""

from __future__ import annotations

from typing import Any

import pytest

from skbqa.bus.memory import MemoryBus
from skbqa.common.errors import BackendUnavailableError
from skbqa.serving import kb_feed
from skbqa.serving.kb_feed import VersionFeed


class SlowToJoin(MemoryBus):
    """A memory bus whose first `failures` joins time out, as a busy broker's do."""

    def __init__(self, failures: int) -> None:
        super().__init__()
        self.failures = failures
        self.joins = 0

    def consumer(self, *args: Any, **kwargs: Any) -> Any:
        self.joins += 1
        if self.joins <= self.failures:
            raise BackendUnavailableError("group not joined within 30 s")
        return super().consumer(*args, **kwargs)


def test_a_join_that_times_out_is_tried_again() -> None:
    bus = SlowToJoin(failures=kb_feed.JOIN_ATTEMPTS - 1)
    feed = VersionFeed(bus)
    try:
        assert bus.joins == kb_feed.JOIN_ATTEMPTS
    finally:
        feed.close()
        bus.close()


def test_the_feed_gives_up_after_its_attempts() -> None:
    bus = SlowToJoin(failures=kb_feed.JOIN_ATTEMPTS)
    with pytest.raises(BackendUnavailableError):
        VersionFeed(bus)
    assert bus.joins == kb_feed.JOIN_ATTEMPTS
    bus.close()
