"""`SkbqaClient`: the blocking client of a deployed skbqa service (`skbqa.v1.Skbqa`, the gateway or
`skbqa serve`).

    with SkbqaClient.connect("gateway.example:443", tls=True) as client:   # token from SKBQA_CLIENT_TOKEN
        answer = client.ask("Which genes are located in 6p21.3?", k=10)
        for item in answer.items:
            print(item.rank, item.name, item.why)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import wait
from typing import Any, TypeVar

from tenacity import Retrying
from typing_extensions import Unpack

from skbqa.client.calls import (
    AskSettings,
    Deadline,
    StreamResume,
    change_call,
    no_event_error,
    prepare,
    retry_policy,
)
from skbqa.client.channels import Channels, Lease
from skbqa.client.errors import ServerError, rpc_failure
from skbqa.client.options import ClientOptions
from skbqa.client.resolver import Lookup, system_lookup
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

    def __init__(
        self, options: ClientOptions, *, interceptors: Sequence[Any] = (), lookup: Lookup | None = None
    ) -> None:
        """`lookup`: how names in a list of addresses resolve (default: the system's resolver; a test's stand-in)."""
        import grpc

        from skbqa.v1 import api_pb2_grpc

        self.options = options
        credentials = options.credentials()

        def open_channel(target: str) -> tuple[Any, Any, Any]:
            channel = (
                grpc.secure_channel(target, credentials, options=options.channel_options())
                if credentials is not None
                else grpc.insecure_channel(target, options=options.channel_options())
            )
            calls = grpc.intercept_channel(channel, *interceptors) if interceptors else channel
            return channel, calls, api_pb2_grpc.SkbqaStub(calls)

        self._channels = Channels(options.addresses, open_channel, lookup=lookup or system_lookup)

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
        for channel in self._channels.close_all():
            channel.close()

    # --------------------------------------------------------------------------------------------------- calls

    def ask(self, question: str, **settings: Unpack[AskSettings]) -> RemoteAnswer:
        request, deadline = prepare(question, settings, self.options)
        reply = self._retrying(
            deadline, lambda on, timeout: on.stub.Ask(request, timeout=timeout, **self.options.call_metadata())
        )
        return remote_answer(reply, deadline.elapsed_ms())

    def ask_stream(self, question: str, **settings: Unpack[AskSettings]) -> Iterator[AskEvent]:
        """The early (grounded) answers, then the final ones. A stream that fails UNAVAILABLE is asked again on
        another replica, within its deadline and attempts, also after its first events (`StreamResume`): each
        event reaches the caller once."""
        request, deadline = prepare(question, settings, self.options)
        resume = StreamResume()

        def open_stream(on: Lease, timeout: float) -> tuple[Lease, Any, Any]:
            call = on.stub.AskStream(request, timeout=timeout, **self.options.call_metadata())
            resume.attempt()
            for message in call:
                if resume.fresh(message):
                    return on, call, message
            raise no_event_error(deadline.attempts)

        while True:
            lease, call, message = self._retrying(deadline, open_stream, keep=True)
            failure: ServerError | None = None
            try:
                while True:
                    yield ask_event(message, deadline.elapsed_ms())
                    if resume.finished:  # read the call to its end: interceptors see it finish, not cancelled
                        for _ in call:
                            pass
                        return
                    message = next((m for m in call if resume.fresh(m)), None)
                    if message is None:
                        raise no_event_error(deadline.attempts)
            except Exception as error:
                if (failure := rpc_failure(error, deadline.attempts)) is None:
                    raise
                if not deadline.may_resume(failure, self.options):
                    raise failure from None
            finally:
                call.cancel()  # a caller that stops reading ends the call; after the final one it is a no-op
                self._end(lease, failure)

    def explain(self, question: str, **settings: Unpack[AskSettings]) -> Explained:
        ask, deadline = prepare(question, settings, self.options)
        request = api_pb2.ExplainRequest(ask=ask)
        reply = self._retrying(
            deadline, lambda on, timeout: on.stub.Explain(request, timeout=timeout, **self.options.call_metadata())
        )
        return Explained(remote_answer(reply.answer, deadline.elapsed_ms()), reply.explanation)

    def index_status(self, *, deadline_s: float | None = None) -> IndexStatus:
        deadline = Deadline(deadline_s or self.options.deadline_s)
        reply = self._retrying(
            deadline,
            lambda on, timeout: on.stub.IndexStatus(
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
            deadline, lambda on, timeout: on.stub.ApplyChanges(iter(messages), timeout=timeout, **metadata)
        )
        return applied_changes(reply, key)

    def health(self, service: str = "", *, deadline_s: float = 5.0) -> str:
        """The server's health status for `service` ("" = the whole server): SERVING, NOT_SERVING, …"""
        from grpc_health.v1 import health_pb2, health_pb2_grpc

        deadline = Deadline(deadline_s)
        reply = self._retrying(
            deadline,
            lambda on, timeout: health_pb2_grpc.HealthStub(on.calls_channel).Check(
                health_pb2.HealthCheckRequest(service=service), timeout=timeout, **self.options.call_metadata()
            ),
        )
        return str(health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status))

    # ----------------------------------------------------------------------------------------------- internals

    def _retrying(self, deadline: Deadline, call: Callable[[Lease, float], T], *, keep: bool = False) -> T:
        """`call` on the current channel, retried on UNAVAILABLE. With `keep`, the call's lease is the caller's to
        end when the call succeeds (a stream being read)."""
        for attempt in Retrying(**retry_policy(self.options, deadline)):
            with attempt:
                timeout = deadline.next_attempt()
                # no channel yet, or every call failing: wait for the names to resolve, within the deadline
                pending = self._channels.begin()
                if pending is not None:
                    wait([pending], timeout=timeout)
                lease = self._channels.lease(deadline.attempts)
                try:
                    result = call(lease, timeout)
                except BaseException as error:
                    failure = rpc_failure(error, deadline.attempts)
                    self._end(lease, failure)
                    if failure is None:
                        raise
                    raise failure from None
                if not keep:
                    self._end(lease, None)
                return result
        raise AssertionError("unreachable: tenacity returns or re-raises")

    def _end(self, lease: Lease, failure: ServerError | None) -> None:
        for channel in self._channels.end(lease, unavailable=failure is not None and failure.retryable):
            channel.close()  # a channel the names no longer resolve to, its last call ended
