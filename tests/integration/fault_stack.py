"""What the fault modules share: a durable-broker stack, the embedded rankings to compare with, and a "storm"
of requests sent while a fault is injected."""

from __future__ import annotations

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import grpc

from skbqa.stack.stack import LocalStack, StackOptions
from skbqa.v1 import api_pb2, api_pb2_grpc
from tests.conftest import SAMPLE_BUNDLE
from tests.integration.fault_matrix import record

QUESTIONS = [json.loads(line)["question"] for line in (SAMPLE_BUNDLE / "qa.jsonl").read_text().splitlines()]
CLEAR = {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.RESOURCE_EXHAUSTED}


def durable_stack(index: Path, directory: Path) -> LocalStack:
    """A started stack on a durable (s3rver) broker; the caller stops it with `down()`."""
    options = StackOptions(
        index=index,
        directory=directory,
        gateway_port=0,
        ray=False,  # restarts in these tests should take seconds; Ray Serve is covered by test_distributed_stack
        broker_storage="s3",
        request_timeout_s=150.0,  # long enough to see a request through a broker restart and group rejoins
    )
    running = LocalStack(options)
    running.up()
    return running


def embedded_rankings(engine) -> dict[str, list[int]]:
    return {q: [i.node_id for i in engine.ask(q).items] for q in QUESTIONS}


def stub_for(stack: LocalStack) -> api_pb2_grpc.SkbqaStub:
    return api_pb2_grpc.SkbqaStub(grpc.insecure_channel(f"127.0.0.1:{stack.ports['gateway']}"))


def storm(stack: LocalStack, fault, questions: list[str], *, timeout_s: float = 120.0) -> dict:
    """Send `questions` from 4 client threads while `fault()` runs in another; collect every outcome."""
    stub = stub_for(stack)
    answers: dict[int, list[int]] = {}
    statuses: dict[int, grpc.StatusCode] = {}
    started = threading.Event()

    def ask(item: tuple[int, str]) -> None:
        index, question = item
        started.set()
        try:
            reply = stub.Ask(api_pb2.AskRequest(question=question), timeout=timeout_s)
            answers[index] = [i.node_id for i in reply.items]
        except grpc.RpcError as exc:
            statuses[index] = exc.code()

    def run_fault() -> None:
        started.wait(10)
        time.sleep(0.3)
        fault()

    injector = threading.Thread(target=run_fault)
    injector.start()
    began = time.monotonic()
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(ask, enumerate(questions)))
    injector.join()
    return {"answers": answers, "statuses": statuses, "seconds": round(time.monotonic() - began, 1)}


def check(result: dict, questions: list[str], expected: dict, fault: str, outcome: str) -> None:
    answers, statuses = result["answers"], result["statuses"]
    for index, ids in answers.items():
        assert ids == expected[questions[index]], f"request {index} answered wrongly after {fault}"
    assert all(code in CLEAR for code in statuses.values()), statuses
    record(fault, outcome, len(questions), len(answers), len(statuses), seconds=result["seconds"])
    assert len(answers) + len(statuses) == len(questions)
