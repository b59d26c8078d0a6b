"""`AsyncSkbqaClient`: the asyncio client of a deployed skbqa service, with the same calls, results, deadlines
and retries as `SkbqaClient`.

    async with AsyncSkbqaClient.connect("127.0.0.1:50051") as client:
        answers = await asyncio.gather(*(client.ask(q) for q in questions))
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from tenacity import AsyncRetrying
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


class AsyncSkbqaClient:
    """One grpc.aio channel; create it inside the event loop that uses it."""

    def __init__(
        self, options: ClientOptions, *, interceptors: Sequence[Any] = (), lookup: Lookup | None = None
    ) -> None:
        """`lookup`: how names in a list of addresses resolve (default: the system's resolver, in a thread)."""
        import grpc.aio

        from skbqa.v1 import api_pb2_grpc

        self.options = options
        credentials = options.credentials()
        extra = {"interceptors": list(interceptors)} if interceptors else {}

        def open_channel(target: str) -> tuple[Any, Any, Any]:
            channel = (
                grpc.aio.secure_channel(target, credentials, options=options.channel_options(), **extra)
                if credentials is not None
                else grpc.aio.insecure_channel(target, options=options.channel_options(), **extra)
            )
            return channel, channel, api_pb2_grpc.SkbqaStub(channel)

        self._channels = Channels(options.addresses, open_channel, lookup=lookup or system_lookup)

    @classmethod
    def connect(
        cls, target: str | None = None, *, interceptors: Sequence[Any] = (), **settings: Any
    ) -> AsyncSkbqaClient:
        return cls(ClientOptions.from_env(target, **settings), interceptors=interceptors)

    async def __aenter__(self) -> AsyncSkbqaClient:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()

    async def close(self) -> None:
        for channel in self._channels.close_all():
            await channel.close()

    async def ask(self, question: str, **settings: Unpack[AskSettings]) -> RemoteAnswer:
        request, deadline = prepare(question, settings, self.options)
        reply = await self._retrying(
            deadline, lambda on, timeout: on.stub.Ask(request, timeout=timeout, **self.options.call_metadata())
        )
        return remote_answer(reply, deadline.elapsed_ms())

    async def ask_stream(self, question: str, **settings: Unpack[AskSettings]) -> AsyncIterator[AskEvent]:
        """As `SkbqaClient.ask_stream`: resumed on another replica after UNAVAILABLE, each event delivered once."""
        request, deadline = prepare(question, settings, self.options)
        resume = StreamResume()

        async def next_fresh(call: Any) -> Any:
            while not _ended(message := await call.read()):
                if resume.fresh(message):
                    return message
            raise no_event_error(deadline.attempts)

        async def open_stream(on: Lease, timeout: float) -> tuple[Lease, Any, Any]:
            call = on.stub.AskStream(request, timeout=timeout, **self.options.call_metadata())
            resume.attempt()
            return on, call, await next_fresh(call)

        while True:
            lease, call, message = await self._retrying(deadline, open_stream, keep=True)
            failure: ServerError | None = None
            try:
                while True:
                    yield ask_event(message, deadline.elapsed_ms())
                    if resume.finished:  # read the call to its end: interceptors see it finish, not cancelled
                        while not _ended(await call.read()):
                            pass
                        return
                    message = await next_fresh(call)
            except Exception as error:
                if (failure := rpc_failure(error, deadline.attempts)) is None:
                    raise
                if not deadline.may_resume(failure, self.options):
                    raise failure from None
            finally:
                call.cancel()  # a caller that stops reading ends the call; after the final one it is a no-op
                await self._end(lease, failure)

    async def explain(self, question: str, **settings: Unpack[AskSettings]) -> Explained:
        ask, deadline = prepare(question, settings, self.options)
        request = api_pb2.ExplainRequest(ask=ask)
        reply = await self._retrying(
            deadline, lambda on, timeout: on.stub.Explain(request, timeout=timeout, **self.options.call_metadata())
        )
        return Explained(remote_answer(reply.answer, deadline.elapsed_ms()), reply.explanation)

    async def index_status(self, *, deadline_s: float | None = None) -> IndexStatus:
        deadline = Deadline(deadline_s or self.options.deadline_s)
        reply = await self._retrying(
            deadline,
            lambda on, timeout: on.stub.IndexStatus(
                api_pb2.IndexStatusRequest(), timeout=timeout, **self.options.call_metadata()
            ),
        )
        return index_status(reply)

    async def apply_changes(
        self,
        changes: Iterable[Mapping[str, Any]],
        *,
        deadline_s: float | None = None,
        idempotency_key: str | None = None,
    ) -> AppliedChanges:
        """As `SkbqaClient.apply_changes`: one batch, whole or not at all; the version at which it is visible;
        one idempotency key for every attempt (yours, or a fresh one)."""
        messages = [change_message(c) for c in changes]
        key, metadata = change_call(self.options, idempotency_key)
        deadline = Deadline(deadline_s or self.options.deadline_s)
        reply = await self._retrying(
            deadline, lambda on, timeout: on.stub.ApplyChanges(iter(messages), timeout=timeout, **metadata)
        )
        return applied_changes(reply, key)

    async def _retrying(
        self, deadline: Deadline, call: Callable[[Lease, float], Awaitable[T]], *, keep: bool = False
    ) -> T:
        """As `SkbqaClient._retrying`; a resolution is waited for without blocking the event loop."""
        async for attempt in AsyncRetrying(**retry_policy(self.options, deadline)):
            with attempt:
                timeout = deadline.next_attempt()
                # no channel yet, or every call failing: wait for the names to resolve, within the deadline
                pending = self._channels.begin()
                if pending is not None:
                    await asyncio.wait([asyncio.wrap_future(pending)], timeout=timeout)
                lease = self._channels.lease(deadline.attempts)
                try:
                    result = await call(lease, timeout)
                except BaseException as error:
                    failure = rpc_failure(error, deadline.attempts)
                    await self._end(lease, failure)
                    if failure is None:
                        raise
                    raise failure from None
                if not keep:
                    await self._end(lease, None)
                return result
        raise AssertionError("unreachable: tenacity returns or re-raises")

    async def _end(self, lease: Lease, failure: ServerError | None) -> None:
        for channel in self._channels.end(lease, unavailable=failure is not None and failure.retryable):
            await channel.close()  # a channel the names no longer resolve to, its last call ended


def _ended(message: Any) -> bool:
    import grpc.aio

    return message is grpc.aio.EOF
