"""What the distributed fault modules share: a stack on a durable broker, the embedded rankings to compare with,
a "storm" of AskStream calls sent while a fault is injected, and readers for the evidence (service metrics, the
broker's processes).

Calls go through AskStream, not Ask: a stream shows every event the gateway sends, so a second final answer to one
call would be seen by the client (and counted in the matrix), not hidden by a unary call's single reply.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import threading
import time
import urllib.request
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from prometheus_client.parser import text_string_to_metric_families

from skbqa.bus import topics
from skbqa.devstack.stack import LocalStack, StackOptions
from skbqa.v1 import api_pb2, api_pb2_grpc
from tests.conftest import SAMPLE_BUNDLE
from tests.integration.fault_matrix import Call

QUESTIONS = [json.loads(line)["question"] for line in (SAMPLE_BUNDLE / "qa.jsonl").read_text().splitlines()]


def durable_stack(index: Path, directory: Path, broker_storage: str = "s3") -> LocalStack:
    """A started stack, by default on a durable broker (s3 storage on moto); the caller stops it with `down()`.
    Faults that leave the broker running can take ``broker_storage="memory"``: moto serves every fetch of every
    consumer as object-store listings and reads, which on two cores stalls fetches for tens of seconds."""
    options = StackOptions(
        index=index,
        directory=directory,
        gateway_port=0,
        ray=False,  # restarts in these tests should take seconds; Ray Serve is covered by test_distributed_stack
        broker_storage=broker_storage,
        request_timeout_s=150.0,  # long enough to see a request through a broker restart and group rejoins
    )
    running = LocalStack(options)
    running.up()
    return running


def embedded_rankings(engine: Any) -> dict[str, list[int]]:
    return {q: [i.node_id for i in engine.ask(q).items] for q in QUESTIONS}


def stub_for(stack: LocalStack) -> api_pb2_grpc.SkbqaStub:
    return api_pb2_grpc.SkbqaStub(grpc.insecure_channel(f"127.0.0.1:{stack.ports['gateway']}"))


def wait_gateway_serving(stack: LocalStack, timeout_s: float = 120.0) -> float:
    """Poll the gateway's health until it reads SERVING again (its watcher probes the broker every few seconds);
    returns the moment it did. Calls begun after it must be answered; calls before it may be refused UNAVAILABLE."""
    deadline = time.monotonic() + timeout_s
    with grpc.insecure_channel(f"127.0.0.1:{stack.ports['gateway']}") as channel:
        health = health_pb2_grpc.HealthStub(channel)
        while time.monotonic() < deadline:
            with contextlib.suppress(grpc.RpcError):
                reply = health.Check(health_pb2.HealthCheckRequest(), timeout=5)
                if reply.status == health_pb2.HealthCheckResponse.SERVING:
                    return time.monotonic()
            time.sleep(0.2)
    raise AssertionError(f"the gateway did not report SERVING within {timeout_s:.0f} s of the broker's restart")


def ask_stream(stub: api_pb2_grpc.SkbqaStub, index: int, question: str, timeout_s: float) -> Call:
    """One AskStream call, every event counted; a non-OK end is kept as its status name (never raised)."""
    call = Call(index, request_id=f"fault-{uuid.uuid4().hex[:10]}-{index}", began=time.monotonic())
    request = api_pb2.AskRequest(question=question, request_id=call.request_id)
    try:
        for event in stub.AskStream(request, timeout=timeout_s):
            if event.HasField("final"):
                call.finals.append([i.node_id for i in event.final.items])
                call.notes.append(json.loads(event.final.notes_json) if event.final.notes_json else {})
                call.degraded.append(event.final.degraded)
            else:
                call.partials += 1
    except grpc.RpcError as exc:
        call.status = exc.code().name
        call.detail = (exc.details() or "")[:200]
    call.ended = time.monotonic()
    return call


def storm(
    stack: LocalStack,
    questions: list[str],
    fault: Callable[[], None] | None = None,
    *,
    timeout_s: float = 120.0,
    concurrency: int = 4,
    fault_after_answers: int = 0,
) -> tuple[list[Call], float]:
    """Send `questions` from `concurrency` client threads; `fault()` runs in another thread once
    `fault_after_answers` calls have ended (0: once the first call has started). Returns every call's outcome
    (in question order) and the wall time. An exception in `fault` is raised here, after the calls end."""
    stub = stub_for(stack)
    ended = threading.Semaphore(0)
    started = threading.Event()
    failure: list[BaseException] = []

    def ask(item: tuple[int, str]) -> Call:
        started.set()
        try:
            return ask_stream(stub, item[0], item[1], timeout_s)
        finally:
            ended.release()

    def run_fault() -> None:
        try:
            started.wait(30)
            for _ in range(fault_after_answers):
                ended.acquire(timeout=timeout_s)
            if fault is not None:
                fault()
        except BaseException as exc:  # re-raised in the test's thread
            failure.append(exc)

    injector = threading.Thread(target=run_fault, name="fault-injector")
    injector.start()
    began = time.monotonic()
    with ThreadPoolExecutor(concurrency) as pool:
        calls = list(pool.map(ask, enumerate(questions)))
    seconds = time.monotonic() - began
    injector.join(timeout_s)
    if failure:
        raise failure[0]
    return calls, seconds


def expected_by_index(questions: list[str], expected: dict[str, list[int]]) -> dict[int, list[int]]:
    return {index: expected[question] for index, question in enumerate(questions)}


# ---------------------------------------------------------------------------------------------------- evidence


def metrics_port(stack: LocalStack, name: str) -> int:
    return int(stack.ports["services"][name]["metrics"])


def counter(port: int, name: str, **labels: str) -> float:
    """The sum of a metric's samples whose labels include `labels`, read from a service's /metrics (0 when the
    series does not exist yet: a counter appears on its first increment)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        text = response.read().decode()
    total = 0.0
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                total += sample.value
    return total


def messages(stack: LocalStack, name: str, outcome: str) -> int:
    """skbqa_messages_total{stage=<role>, outcome=...} of one service process (the gateway's stage is "gateway")."""
    role = name.rsplit("-", 1)[0]
    return int(counter(metrics_port(stack, name), "skbqa_messages_total", stage=role, outcome=outcome))


def signal_service(stack: LocalStack, name: str, signum: int) -> None:
    """Signal one recorded process group (each service runs in a session of its own)."""
    record = next(r for r in stack.records if r.name == name)
    os.killpg(record.pid, signum)


PIPELINE = [topics.QUERY, topics.PARSED, topics.SYMBOLS, topics.GROUNDED, topics.RANKED, topics.ANSWER]


def trace(stack: LocalStack, request_ids: list[str]) -> dict[str, dict[str, int]]:
    """How many records each request id has on each pipeline topic (read from the beginning, in a throwaway
    group): where a lost request stopped. For failure messages and the matrix's evidence."""
    if not request_ids:
        return {}
    from skbqa.bus.kafka import KafkaBus

    bus = KafkaBus(stack.ports["bus"].removeprefix("kafka://"), session_timeout_ms=2000, heartbeat_interval_ms=500)
    seen = {rid: dict.fromkeys(PIPELINE, 0) for rid in request_ids}
    try:
        consumer = bus.consumer(PIPELINE, group=f"fault-trace-{uuid.uuid4().hex[:8]}")
        quiet_since = time.monotonic()
        deadline = time.monotonic() + 30
        while time.monotonic() - quiet_since < 3 and time.monotonic() < deadline:
            batch = consumer.poll(0.5, 500)
            if batch:
                quiet_since = time.monotonic()
            for message in batch:
                # the bus key is the call's own id: the client's id, "#", a suffix the gateway adds
                client_id = message.key.partition("#")[0]
                if client_id in seen:
                    seen[client_id][message.topic] += 1
        consumer.close()
    finally:
        bus.close()
    return seen


def crash_broker(stack: LocalStack, *, timeout_s: float = 60.0) -> dict[str, Any]:
    """SIGKILL Tansu itself (a crash: no shutdown, no flush) and wait until its launcher has restarted it on the
    same port and the same object store (moto, which outlives Tansu as S3 would)."""
    pids_file = stack.directory / "broker-data" / "pids.json"
    pids = json.loads(pids_file.read_text())
    crashed = time.monotonic()
    os.kill(pids["tansu"], signal.SIGKILL)
    deadline = crashed + timeout_s
    restarted: dict[str, int] = {}
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError, ValueError):
            restarted = json.loads(pids_file.read_text())
        if restarted.get("tansu") not in (None, pids["tansu"]):
            break
        assert stack.processes["broker"].poll() is None, "the broker launcher exited instead of restarting tansu"
        time.sleep(0.1)
    else:
        raise AssertionError(f"tansu was not restarted within {timeout_s:.0f} s")
    status = {
        "relaunched_tansu_pid": restarted["tansu"],
        "object_store_pid_kept": restarted.get("s3") == pids["s3"],
    }
    status["down_s"] = round(time.monotonic() - crashed, 1)
    return {"killed_tansu_pid": pids["tansu"], **status}
