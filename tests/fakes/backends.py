"""Stand-ins behind the real gRPC servers, for tests of what the servers do around the work: a gateway backend
and a stage core that hold every call until the test opens a gate (so "refused while the others are blocked" is
a fact, not a race), or fail in a chosen way."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from skbqa.serving.gateway.backends import Waiter
from skbqa.serving.grpc_server import RunningServer, start_server
from skbqa.serving.stages.core import AnswerEnvelope, StageMessage, StageOutput
from skbqa.v1 import api_pb2, api_pb2_grpc

HOLD_S = 30.0  # the longest a held call waits for the gate (a failing test must not hang)


class GatedBackend:
    """The gateway's `Backend`: every request answered with `items` once `gate` is set; `entered` counts the
    requests being held. `on_submit` may raise to play a failing bus."""

    def __init__(
        self,
        items: Sequence[int] = (7, 3),
        *,
        open_gate: bool = False,
        on_submit: Callable[[StageMessage], None] | None = None,
    ) -> None:
        self.items = tuple(items)
        self.gate = threading.Event()
        if open_gate:
            self.gate.set()
        self.entered = threading.Semaphore(0)
        self._on_submit = on_submit

    def submit(self, message: StageMessage, timeout_s: float | None = None) -> Waiter:
        if self._on_submit is not None:
            self._on_submit(message)
        waiter = Waiter(message.request_id)
        threading.Thread(target=self._answer, args=(message, waiter), daemon=True).start()
        return waiter

    def _answer(self, message: StageMessage, waiter: Waiter) -> None:
        self.entered.release()
        self.gate.wait(HOLD_S)
        self._push_final(message, waiter)

    def _push_final(self, message: StageMessage, waiter: Waiter) -> None:
        response = api_pb2.AskResponse(
            request_id=message.request_id,
            question=message.question,
            strategy=message.strategy,
            k=message.k,
            items=[api_pb2.AnswerItem(rank=n + 1, node_id=node) for n, node in enumerate(self.items)],
        )
        push_answer(waiter, message, AnswerEnvelope.FINAL, response)

    def wait_entered(self, count: int, timeout_s: float = 10.0) -> None:
        for _ in range(count):
            assert self.entered.acquire(timeout=timeout_s), "a call did not reach the backend"

    def forget(self, waiter: Waiter) -> None:
        waiter.done = True

    def ready(self) -> bool:
        return True

    def close(self) -> None:
        self.gate.set()


def push_answer(waiter: Waiter, message: StageMessage, kind: Any, response: api_pb2.AskResponse) -> None:
    """`response` to `message`'s waiter, as the answer consumer hands it on (`kind`: PARTIAL or FINAL)."""
    waiter.push(
        AnswerEnvelope(request_id=message.request_id, kind=kind, stage="test", answer=response.SerializeToString())
    )


def start_api(backend: Any, *, max_inflight: int = 16, **server: Any) -> RunningServer:
    """The real `SkbqaServicer` over `backend` on the real gRPC server (`server`: start_server's keywords)."""
    from skbqa.serving.gateway.api import SkbqaServicer

    servicer = SkbqaServicer(
        backend,
        strategies=["af", "bm25"],
        default_strategy="af",
        status=api_pb2.IndexStatusResponse(nodes=2),
        max_inflight=max_inflight,
    )
    running = start_server(
        [(api_pb2_grpc.add_SkbqaServicer_to_server, servicer, "skbqa.v1.Skbqa")],
        max_inflight=max_inflight,
        **server,
    )
    running.set_serving(True)
    return running


class GatedStageCore:
    """A `StageCore` that forwards the message unchanged once `gate` is set (or raises `error`); as the last stage
    (`final=True`) it answers instead. `calls` counts the messages it was given."""

    def __init__(
        self,
        *,
        open_gate: bool = False,
        error: Exception | None = None,
        role: str = "parser",
        topics: tuple[str, str] = ("skbqa.query", "skbqa.parsed"),
        final: bool = False,
    ) -> None:
        self.role = role
        self.input_topic, self.output_topic = topics
        self.gate = threading.Event()
        if open_gate:
            self.gate.set()
        self.entered = threading.Semaphore(0)
        self.error = error
        self.final = final
        self.calls = 0

    def process(self, message: StageMessage) -> StageOutput:
        self.calls += 1
        self.entered.release()
        self.gate.wait(HOLD_S)
        if self.error is not None:
            raise self.error
        if self.final:
            return StageOutput(None, [AnswerEnvelope(request_id=message.request_id, kind=AnswerEnvelope.FINAL)])
        return StageOutput(forward=message)

    def wait_entered(self, count: int, timeout_s: float = 10.0) -> None:
        for _ in range(count):
            assert self.entered.acquire(timeout=timeout_s), "a call did not reach the stage core"

    def warm(self) -> None:
        pass

    def probe(self) -> str:
        return ""
