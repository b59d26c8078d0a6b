"""The supervised rows' load through the project's own client (`SkbqaClient`) on every gateway address the stack
gives (`IP:PORT,IP:PORT`: gRPC's round_robin over the replicas, with the client's retries of UNAVAILABLE), as
`Call`s counted like the raw stub's (tests/integration/fault_matrix.py).
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import Counter
from typing import Any

import grpc

from skbqa.client import SkbqaClient
from skbqa.client.errors import ServerError
from skbqa.client.options import ClientOptions
from tests.integration.fault_matrix import Call
from tests.integration.supervised_stack import SupervisedStack


class _Attempts(grpc.UnaryStreamClientInterceptor):  # type: ignore[misc]
    """Counts the attempts of each request id (the client keeps the id across its retries)."""

    def __init__(self) -> None:
        self.by_request: Counter[str] = Counter()
        self._lock = threading.Lock()

    def intercept_unary_stream(self, continuation: Any, details: Any, request: Any) -> Any:
        with self._lock:
            self.by_request[str(getattr(request, "request_id", ""))] += 1
        return continuation(details, request)


class ClientAsker:
    """An `Asker` (supervised_faults.py) on one SkbqaClient; `retried()` counts calls that took more than one
    attempt (a retry after UNAVAILABLE, picked by the balancer again)."""

    def __init__(self, client: SkbqaClient, attempts: _Attempts, options: dict[str, str]) -> None:
        self._client, self._attempts, self._options = client, attempts, options

    def __call__(self, index: int, question: str, deadline_s: float) -> Call:
        call = Call(index, request_id=f"fault-{uuid.uuid4().hex[:10]}-{index}", began=time.monotonic())
        try:
            for event in self._client.ask_stream(
                question, options=self._options, request_id=call.request_id, deadline_s=deadline_s
            ):
                if event.kind == "final":
                    call.finals.append([item.node_id for item in event.answer.items])
                    call.notes.append(dict(event.answer.notes))
                    call.degraded.append(event.answer.degraded)
                else:
                    call.partials += 1
        except ServerError as exc:
            call.status = exc.code
            call.detail = exc.reason[:200]
        call.ended = time.monotonic()
        return call

    def retried(self) -> int:
        return sum(1 for n in self._attempts.by_request.values() if n > 1)


def balanced_client(stack: SupervisedStack, deadline_s: float) -> tuple[SkbqaClient, _Attempts]:
    """The project's client on every gateway of the stack (what `stack up` prints and `stack status` lists), each
    named `localhost` rather than 127.0.0.1, as a list of names (`gateway-0.gw:50051,...`) is given on Kubernetes:
    the client resolves them itself (client/resolver.py)."""
    attempts = _Attempts()
    named = stack.gateways.replace("127.0.0.1:", "localhost:")
    client = SkbqaClient(ClientOptions(named, deadline_s=deadline_s), interceptors=[attempts])
    return client, attempts


def client_asker(client: tuple[SkbqaClient, _Attempts], options: dict[str, str]) -> ClientAsker:
    return ClientAsker(client[0], client[1], options)
