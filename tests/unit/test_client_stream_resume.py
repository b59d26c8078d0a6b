"""A stream resumed on another gateway after its gateway died mid-stream, against the real gateway servicer
(gateway/api.py) on two real gRPC servers: the other gateway takes the same request id as a new call and computes
the answer again (its partial answer is not delivered twice), and a gateway that already answered the id replays
the final answer alone, which a resumed stream delivers as its end."""

from __future__ import annotations

from collections.abc import Iterator

import grpc
import pytest

from skbqa.client import ClientOptions, SkbqaClient
from skbqa.client.calls import StreamResume
from skbqa.serving.gateway.backends import Waiter
from skbqa.serving.grpc_server import RunningServer
from skbqa.serving.stages.core import AnswerEnvelope, StageMessage
from skbqa.v1 import api_pb2, api_pb2_grpc
from tests.fakes.backends import HOLD_S, GatedBackend, push_answer, start_api


class StreamingBackend(GatedBackend):
    """A partial answer at once, the final one when the gate opens; `messages` are the requests it was given."""

    def __init__(self) -> None:
        super().__init__(items=(7,))
        self.messages: list[StageMessage] = []

    def _answer(self, message: StageMessage, waiter: Waiter) -> None:
        self.messages.append(message)
        partial = api_pb2.AskResponse(request_id=message.request_id, question=message.question, partial=True)
        push_answer(waiter, message, AnswerEnvelope.PARTIAL, partial)
        self.entered.release()
        self.gate.wait(HOLD_S)
        self._push_final(message, waiter)


@pytest.fixture()
def gateways() -> Iterator[list[tuple[RunningServer, StreamingBackend]]]:
    running = []
    for _ in range(2):
        backend = StreamingBackend()
        running.append((start_api(backend), backend))
    yield running
    for server, backend in running:
        backend.close()
        server.server.stop(None)


def test_a_stream_is_resumed_on_the_other_gateway_which_answers_it_again(gateways) -> None:
    target = ",".join(f"localhost:{server.port}" for server, _ in gateways)
    with SkbqaClient(ClientOptions(target, deadline_s=20, backoff_max_s=0.2)) as client:
        stream = client.ask_stream("which genes?", request_id="client-id-1")
        first = next(stream)
        (dying, _), (_, survivor_backend) = sorted(gateways, key=lambda g: -len(g[1].messages))
        survivor_backend.gate.set()
        dying.server.stop(None)  # as a gateway killed: the stream ends UNAVAILABLE on the client
        rest = list(stream)
    assert first.kind == "partial" and [event.kind for event in rest] == ["final"]
    assert rest[0].answer.request_id == "client-id-1" and [i.node_id for i in rest[0].answer.items] == [7]
    # the other gateway computed it again: one new call on its bus, under the client's id and its own suffix
    assert [m.request_id.split("#")[0] for m in survivor_backend.messages] == ["client-id-1"]


def test_a_gateway_that_already_answered_replays_the_final_answer_alone(gateways) -> None:
    (server, backend), _ = gateways
    backend.gate.set()
    request = api_pb2.AskRequest(question="which genes?", k=5, request_id="client-id-2")
    with grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
        stub = api_pb2_grpc.SkbqaStub(channel)
        assert [e.WhichOneof("event") for e in stub.AskStream(request, timeout=10)] == ["partial", "final"]
        replayed = list(stub.AskStream(request, timeout=10))  # a retry reaching the same gateway
    assert [e.WhichOneof("event") for e in replayed] == ["final"] and len(backend.messages) == 1
    resume = StreamResume()
    resume.delivered = 1  # the caller had the partial answer before the first attempt failed
    resume.attempt()
    assert resume.fresh(replayed[0]) and resume.finished
