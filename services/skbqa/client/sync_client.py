"""`SkbqaClient`: the blocking client of a deployed skbqa service (`skbqa.v1.Skbqa`, the gateway or
`skbqa serve`).

    with SkbqaClient.connect("gateway.example:443", tls=True) as client:   # token from SKBQA_CLIENT_TOKEN
        answer = client.ask("Which genes are located in 6p21.3?", k=10)
        for item in answer.items:
            print(item.rank, item.name, item.why)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

from tenacity import Retrying
from typing_extensions import Unpack

from skbqa.client.calls import AskSettings, Deadline, change_call, no_event_error, prepare, retry_policy
from skbqa.client.errors import server_error
from skbqa.client.options import ClientOptions
from skbqa.client.results import (
    AppliedChanges,
    AskEvent,
    Explained,
    IndexStatus,
    RemoteAnswer,
    applied_changes,
    ask_event,
    change_message,
    index_status,
    remote_answer,
)
from skbqa.v1 import api_pb2

T = TypeVar("T")


class SkbqaClient:
    """One channel to one service. Thread-safe: share it between threads. `interceptors` wrap every call (the
    load test's recorder, say)."""

    def __init__(self, options: ClientOptions, *, interceptors: Sequence[Any] = ()) -> None:
        import grpc

        from skbqa.v1 import api_pb2_grpc

        self.options = options
        credentials = options.credentials()
        self._channel = (
            grpc.secure_channel(options.channel_target, credentials, options=options.channel_options())
            if credentials is not None
            else grpc.insecure_channel(options.channel_target, options=options.channel_options())
        )
        channel = grpc.intercept_channel(self._channel, *interceptors) if interceptors else self._channel
        self._stub = api_pb2_grpc.SkbqaStub(channel)
        self._calls_channel = channel

    @classmethod
    def connect(
        cls, target: str | None = None, *, interceptors: Sequence[Any] = (), **settings: Any
    ) -> SkbqaClient:
        """A client from HOST:PORT (or SKBQA_SERVER) and the SKBQA_CLIENT_* environment; `settings` are
        ClientOptions fields and win over the environment."""
        return cls(ClientOptions.from_env(target, **settings), interceptors=interceptors)

    def __enter__(self) -> SkbqaClient:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        self._channel.close()

    # --------------------------------------------------------------------------------------------------- calls

    def ask(self, question: str, **settings: Unpack[AskSettings]) -> RemoteAnswer:
        request, deadline = prepare(question, settings, self.options)
        reply = self._retrying(
            deadline, lambda timeout: self._stub.Ask(request, timeout=timeout, **self.options.call_metadata())
        )
        return remote_answer(reply, deadline.elapsed_ms())

    def ask_stream(self, question: str, **settings: Unpack[AskSettings]) -> Iterator[AskEvent]:
        """The early (grounded) answers, then the final ones. A stream is retried only before its first event."""
        request, deadline = prepare(question, settings, self.options)

        def open_stream(timeout: float) -> tuple[Any, Any]:
            call = self._stub.AskStream(request, timeout=timeout, **self.options.call_metadata())
            first = next(call, None)
            if first is None:
                raise no_event_error(deadline.attempts)
            return call, first

        call, first = self._retrying(deadline, open_stream)
        yield ask_event(first, deadline.elapsed_ms())
        try:
            for message in call:
                yield ask_event(message, deadline.elapsed_ms())
        except Exception as error:
            if _is_rpc_error(error):
                raise server_error(error, deadline.attempts) from None
            raise

    def explain(self, question: str, **settings: Unpack[AskSettings]) -> Explained:
        ask, deadline = prepare(question, settings, self.options)
        request = api_pb2.ExplainRequest(ask=ask)
        reply = self._retrying(
            deadline, lambda timeout: self._stub.Explain(request, timeout=timeout, **self.options.call_metadata())
        )
        return Explained(remote_answer(reply.answer, deadline.elapsed_ms()), reply.explanation)

    def index_status(self, *, deadline_s: float | None = None) -> IndexStatus:
        deadline = Deadline(deadline_s or self.options.deadline_s)
        reply = self._retrying(
            deadline,
            lambda timeout: self._stub.IndexStatus(
                api_pb2.IndexStatusRequest(), timeout=timeout, **self.options.call_metadata()
            ),
        )
        return index_status(reply)

    def apply_changes(
        self,
        changes: Iterable[Mapping[str, Any]],
        *,
        deadline_s: float | None = None,
        idempotency_key: str | None = None,
    ) -> AppliedChanges:
        """Send one batch of changes (change-file form, docs/updates.md), applied whole or not at all; returns
        the version at which they are visible. Needs an admin token on a server that checks tokens.
        `idempotency_key` (1-128 printable ASCII; default: a fresh one per call, kept across this call's retries,
        so a retry never applies the batch twice): sending the same batch again under the same key, even from
        another process or after the server restarted, returns the first answer and applies nothing; pass your
        own key to be able to resend a batch whose answer you never got."""
        messages = [change_message(c) for c in changes]
        key, metadata = change_call(self.options, idempotency_key)
        deadline = Deadline(deadline_s or self.options.deadline_s)
        reply = self._retrying(
            deadline, lambda timeout: self._stub.ApplyChanges(iter(messages), timeout=timeout, **metadata)
        )
        return applied_changes(reply, key)

    def health(self, service: str = "", *, deadline_s: float = 5.0) -> str:
        """The server's health status for `service` ("" = the whole server): SERVING, NOT_SERVING, …"""
        from grpc_health.v1 import health_pb2, health_pb2_grpc

        stub = health_pb2_grpc.HealthStub(self._calls_channel)
        deadline = Deadline(deadline_s)
        reply = self._retrying(
            deadline,
            lambda timeout: stub.Check(
                health_pb2.HealthCheckRequest(service=service), timeout=timeout, **self.options.call_metadata()
            ),
        )
        return str(health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status))

    # ----------------------------------------------------------------------------------------------- internals

    def _retrying(self, deadline: Deadline, call: Callable[[float], T]) -> T:
        for attempt in Retrying(**retry_policy(self.options, deadline)):
            with attempt:
                timeout = deadline.next_attempt()
                try:
                    return call(timeout)
                except Exception as error:
                    if _is_rpc_error(error):
                        raise server_error(error, deadline.attempts) from None
                    raise
        raise AssertionError("unreachable: tenacity returns or re-raises")


def _is_rpc_error(error: BaseException) -> bool:
    import grpc

    return isinstance(error, grpc.RpcError)
