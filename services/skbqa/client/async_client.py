"""`AsyncSkbqaClient`: the asyncio client of a deployed skbqa service, with the same calls, results, deadlines
and retries as `SkbqaClient`.

    async with AsyncSkbqaClient.connect("127.0.0.1:50051") as client:
        answers = await asyncio.gather(*(client.ask(q) for q in questions))
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from tenacity import AsyncRetrying
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


class AsyncSkbqaClient:
    """One grpc.aio channel; create it inside the event loop that uses it."""

    def __init__(self, options: ClientOptions, *, interceptors: Sequence[Any] = ()) -> None:
        import grpc.aio

        from skbqa.v1 import api_pb2_grpc

        self.options = options
        credentials = options.credentials()
        extra = {"interceptors": list(interceptors)} if interceptors else {}
        self._channel = (
            grpc.aio.secure_channel(
                options.channel_target, credentials, options=options.channel_options(), **extra
            )
            if credentials is not None
            else grpc.aio.insecure_channel(options.channel_target, options=options.channel_options(), **extra)
        )
        self._stub = api_pb2_grpc.SkbqaStub(self._channel)

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
        await self._channel.close()

    async def ask(self, question: str, **settings: Unpack[AskSettings]) -> RemoteAnswer:
        request, deadline = prepare(question, settings, self.options)
        reply = await self._retrying(
            deadline, lambda timeout: self._stub.Ask(request, timeout=timeout, **self.options.call_metadata())
        )
        return remote_answer(reply, deadline.elapsed_ms())

    async def ask_stream(self, question: str, **settings: Unpack[AskSettings]) -> AsyncIterator[AskEvent]:
        request, deadline = prepare(question, settings, self.options)

        async def open_stream(timeout: float) -> tuple[Any, Any]:
            call = self._stub.AskStream(request, timeout=timeout, **self.options.call_metadata())
            first = await call.read()
            if _ended(first):
                raise no_event_error(deadline.attempts)
            return call, first

        call, first = await self._retrying(deadline, open_stream)
        yield ask_event(first, deadline.elapsed_ms())
        try:
            while not _ended(message := await call.read()):
                yield ask_event(message, deadline.elapsed_ms())
        except Exception as error:
            if _is_rpc_error(error):
                raise server_error(error, deadline.attempts) from None
            raise

    async def explain(self, question: str, **settings: Unpack[AskSettings]) -> Explained:
        ask, deadline = prepare(question, settings, self.options)
        request = api_pb2.ExplainRequest(ask=ask)
        reply = await self._retrying(
            deadline, lambda timeout: self._stub.Explain(request, timeout=timeout, **self.options.call_metadata())
        )
        return Explained(remote_answer(reply.answer, deadline.elapsed_ms()), reply.explanation)

    async def index_status(self, *, deadline_s: float | None = None) -> IndexStatus:
        deadline = Deadline(deadline_s or self.options.deadline_s)
        reply = await self._retrying(
            deadline,
            lambda timeout: self._stub.IndexStatus(
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
            deadline, lambda timeout: self._stub.ApplyChanges(iter(messages), timeout=timeout, **metadata)
        )
        return applied_changes(reply, key)

    async def _retrying(self, deadline: Deadline, call: Callable[[float], Awaitable[T]]) -> T:
        async for attempt in AsyncRetrying(**retry_policy(self.options, deadline)):
            with attempt:
                timeout = deadline.next_attempt()
                try:
                    return await call(timeout)
                except Exception as error:
                    if _is_rpc_error(error):
                        raise server_error(error, deadline.attempts) from None
                    raise
        raise AssertionError("unreachable: tenacity returns or re-raises")


def _ended(message: Any) -> bool:
    import grpc.aio

    return message is grpc.aio.EOF


def _is_rpc_error(error: BaseException) -> bool:
    import grpc

    return isinstance(error, grpc.RpcError)
