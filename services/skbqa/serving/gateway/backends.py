"""Where the public API's requests go: `LocalBackend` runs the stage cores in this process; `BusBackend` publishes
to skbqa.query and correlates answers from skbqa.answer back to the waiting call.

Both hand out a `Waiter`: the answers of one request (partials, then a final or an error), in order.
"""

from __future__ import annotations

import logging
import queue
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol

from skbqa.serving.local_pipeline import LocalPipeline
from skbqa.serving.stages.core import AnswerEnvelope, StageMessage
from skbqa.serving.status import status_for

logger = logging.getLogger(__name__)


class Waiter:
    """Answers for one request id; the backend pushes, the RPC handler pulls."""

    def __init__(self, request_id: str) -> None:
        self.request_id = request_id
        self.ids = {request_id}  # every id its answers may come under (a request sent again has an alias)
        self._answers: queue.Queue[AnswerEnvelope] = queue.Queue()
        self.done = False

    def push(self, envelope: AnswerEnvelope) -> None:
        self._answers.put(envelope)

    def next(self, timeout_s: float | None) -> AnswerEnvelope:
        """The next answer; raises TimeoutError when none arrives in time."""
        try:
            return self._answers.get(timeout=timeout_s)
        except queue.Empty:
            raise TimeoutError(self.request_id) from None


class Backend(Protocol):
    def submit(self, message: StageMessage, timeout_s: float | None = None) -> Waiter:
        """Accept the request within `timeout_s` (TimeoutError otherwise) and return its waiter."""
        ...

    def forget(self, waiter: Waiter) -> None: ...

    def ready(self) -> bool: ...

    def close(self) -> None: ...


def error_envelope(message: StageMessage, error: BaseException, stage: str) -> AnswerEnvelope:
    code, text = status_for(error, message.request_id)
    return AnswerEnvelope(
        request_id=message.request_id,
        kind=AnswerEnvelope.ERROR,
        stage=stage,
        status_code=code,
        status_message=text,
        gateway_id=message.gateway_id,
    )


class LocalBackend:
    """The stage cores in sequence, on a small thread pool (numpy and ONNX Runtime release the GIL)."""

    def __init__(self, pipeline: LocalPipeline, *, workers: int = 2) -> None:
        self._pipeline = pipeline
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="skbqa-ask")

    def submit(self, message: StageMessage, timeout_s: float | None = None) -> Waiter:
        waiter = Waiter(message.request_id)
        self._pool.submit(self._run, message, waiter)
        return waiter

    def replace(self, pipeline: LocalPipeline) -> LocalPipeline:
        """Serve from `pipeline` from now on (a new index snapshot); requests already running finish on the old,
        which is returned."""
        old, self._pipeline = self._pipeline, pipeline
        return old

    def probe(self) -> str:
        return self._pipeline.probe()

    def _run(self, message: StageMessage, waiter: Waiter) -> None:
        pipeline = self._pipeline  # one snapshot for the whole request
        try:
            pipeline.run(message, waiter.push)
        except Exception as exc:  # every failure reaches the caller as a status, never as a hang
            waiter.push(error_envelope(message, exc, "embedded"))

    def forget(self, waiter: Waiter) -> None:
        waiter.done = True

    def ready(self) -> bool:
        return True

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
