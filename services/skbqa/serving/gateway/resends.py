"""A request sent again when it is nowhere in the pipeline: the gateway's end-to-end guard for accepted work.

Each stage commits its input only after its outputs are on the bus, so a request is always waiting at some stage
(its group's lag counts it) until its answer is published. When no word of a request (partial, final or error)
has come for `after_s` and a lag check begun since then found every stage's lag at 0, the request is nowhere: a
record the broker acknowledged and lost, or an answer this gateway missed. It is sent again under an alias id (the
call's id + "~N"), so that the stages, which skip a request id they have already handled, compute it afresh; the
first final under any of its ids ends the call and later ones are dropped as duplicates. A request still queued
behind others, or being computed, keeps a lag above 0 and is never sent twice.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from skbqa.serving.gateway.backends import Waiter
from skbqa.serving.stages.core import AnswerEnvelope

RESEND_AFTER_S = 5.0  # no word of a request for this long, and the stages idle: it is sent again
MAX_RESENDS = 2
_SLICE_S = 0.5  # how often a waiting call looks whether its request should go again


class ResendingWaiter(Waiter):
    """A bus request's waiter that sends the request again (see the module's doc). `resend(waiter)` publishes it
    under a new alias id; `idle_at()` is the start of the last lag check that found every stage idle (None when
    the last check did not, or there is no check)."""

    def __init__(
        self,
        request_id: str,
        resend: Callable[[ResendingWaiter], None],
        idle_at: Callable[[], float | None],
        *,
        after_s: float = RESEND_AFTER_S,
        max_resends: int = MAX_RESENDS,
    ) -> None:
        super().__init__(request_id)
        self._resend = resend
        self._idle_at = idle_at
        self._after_s = after_s
        self._max_resends = max_resends
        self._lock = threading.Lock()
        self._last_word = time.monotonic()
        self._partial_stages: set[str] = set()
        self.resends = 0

    def push(self, envelope: AnswerEnvelope) -> None:
        with self._lock:
            self._last_word = time.monotonic()
            if envelope.kind == AnswerEnvelope.PARTIAL:
                if envelope.stage in self._partial_stages:
                    return  # the same stage's partial again, from a request sent twice: the stream has it
                self._partial_stages.add(envelope.stage)
        super().push(envelope)

    def next(self, timeout_s: float | None) -> AnswerEnvelope:
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise TimeoutError(self.request_id)
            try:
                return super().next(_SLICE_S if left is None else min(_SLICE_S, left))
            except TimeoutError:
                if self._due():
                    self._resend(self)

    def _due(self) -> bool:
        """Silent for `after_s`, and a lag check begun since its last word found no stage holding it."""
        with self._lock:
            if self.resends >= self._max_resends:
                return False
            last_word = self._last_word
            if time.monotonic() - last_word < self._after_s:
                return False
            idle_at = self._idle_at()
            if idle_at is None or idle_at <= last_word:
                return False
            self.resends += 1
            self._last_word = time.monotonic()  # the next resend, if any, waits a full `after_s` again
            return True
