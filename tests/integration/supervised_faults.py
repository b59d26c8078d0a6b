"""The fault matrix under the stack's own supervision (docs/faults.md): one row per fault, measured on a stack
started by `skbqa stack up` while a bounded load runs, with nothing restarted by this code.

A row: the load (a fixed number of AskStream calls from a few client threads, at a fixed pace, each with a client
deadline) starts; `fault_at_s` later the target is killed by the PID the stack reports; the fault thread then
waits for the supervisor (the target's pid changes in the state file), for the new process to be healthy, and for
a probe call to be answered normally — that moment, counted from the kill, is "recovered after". Each call is
sorted as in the other matrix (tests/integration/fault_matrix.py): answered with the reference ranking, a clear
status within its deadline + slack, or lost; a clear status that came later than that counts as lost too.

The reference of an answer: the embedded engine's ranking for its question and options; an answer flagged
`degraded` by the BM25 fallback (the encoder server down) must be the embedded BM25 ranking; one flagged degraded
by step 8 (Ray down or starting: the reranker ran in process) must be the reranked ranking itself, which the
in-process reranker gives as Ray does; a reranked answer whose notes say Ray failed without that fallback must be
the ranking without the reranker (what a failed reranker returns: its input order).
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import grpc

from skbqa.v1 import api_pb2, api_pb2_grpc
from tests.integration.fault_matrix import CLEAR_STATUSES, Call
from tests.integration.fault_stack import ask_stream
from tests.integration.supervised_clients import ClientAsker, balanced_client, client_asker
from tests.integration.supervised_stack import SupervisedStack, dropped_between, wait_for
from tests.integration.supervisor_fault import supervisor_killed, supervisor_outcome

RAY_FAILED = ("ray error", "ray timeout", "ray: invalid")
RAY_PROCESSES = ("gcs_server", "raylet")


@dataclass
class References:
    """Embedded rankings per question: `af` (the default), `bm25` (a degraded answer), `reranked` (af with
    reranker=local, step 8 on Ray in the stack)."""

    af: dict[str, list[int]]
    bm25: dict[str, list[int]]
    reranked: dict[str, list[int]]
    llm: dict[str, list[int]] = field(default_factory=dict)  # af parsed by the LLM row's endpoint (while it is up)

    @classmethod
    def of(cls, engine: Any, questions: list[str]) -> References:
        def ids(question: str, **kwargs: Any) -> list[int]:
            return [item.node_id for item in engine.ask(question, **kwargs).items]

        return cls(
            af={q: ids(q) for q in questions},
            bm25={q: ids(q, strategy="bm25") for q in questions},
            reranked={q: ids(q, options={"reranker": "local"}) for q in questions},
        )


@dataclass
class Fault:
    label: str  # the row's "fault" column
    target: str  # the process the supervisor must start again ("grounding-0", "triton", "broker", …)
    ray: bool = False  # kill Ray's gcs_server and raylet under the target instead of the target itself
    # the target is the supervisor: nothing restarts it (supervisor_fault.py says what the row checks instead)
    supervisor: bool = False
    options: dict[str, str] = field(default_factory=dict)  # the load's request options
    # the load and probes go through the project's client (SkbqaClient) on every gateway address, balanced
    balanced: bool = False
    llm: bool = False  # the parser service has an LLM endpoint: answers without a fallback note use `refs.llm`
    # a fault the stack does not restart (an endpoint outside it): its own kill and wait, given the normal-answer
    # probe; returns the row's evidence (`supervised_endpoints.py`)
    recovery: Callable[[SupervisedStack, Callable[[], bool]], dict[str, Any]] | None = None

    @property
    def reranked(self) -> bool:
        return self.options.get("reranker") == "local"


@dataclass
class Load:
    """Calls start at a fixed pace from `clients` threads (a thread waits for its call: a stalled pipeline holds
    at most `clients` calls) until `tail_s` after the stack answered normally again, or `max_calls`."""

    rate_per_s: float = 2.0  # call i is started at i / rate, or as soon as a client thread is free after that
    clients: int = 6
    max_calls: int = 400
    deadline_s: float = 30.0  # the client's deadline (= the stack gateway's --request-timeout)
    slack_s: float = 1.0
    fault_at_s: float = 5.0
    tail_s: float = 10.0
    restart_within_s: float = 120.0
    recover_within_s: float = 240.0


def ray_failed(notes: dict[str, Any]) -> bool:
    text = json.dumps(notes)
    return any(marker in text for marker in RAY_FAILED)


def degraded_by(notes: dict[str, Any]) -> str:
    """Who answered a degraded call: "bm25" (a lost encoder or vector store), "rerank" (step 8 in process while
    Ray was not answering), "" when the notes do not say."""
    degraded = notes.get("degraded")
    if not isinstance(degraded, dict):
        return ""
    return "rerank" if degraded.get("stage") == "rerank" else str(degraded.get("answered_by", ""))


def reference(call: Call, question: str, fault: Fault, refs: References) -> list[int]:
    notes = call.notes[0] if call.notes else {}
    if fault.llm and "parser_fallback" not in notes:
        return refs.llm[question]
    if call.degraded and call.degraded[0]:
        if degraded_by(notes) == "rerank":
            return refs.reranked[question] if fault.reranked else refs.af[question]
        return refs.bm25[question]
    if fault.reranked and not ray_failed(notes):
        return refs.reranked[question]
    return refs.af[question]


class _WithOptions:
    """A stub whose AskStream adds request options (fault_stack.ask_stream sends none)."""

    def __init__(self, stub: api_pb2_grpc.SkbqaStub, options: dict[str, str]) -> None:
        self._stub, self._options = stub, options

    def AskStream(self, request: api_pb2.AskRequest, timeout: float) -> Any:  # the gRPC method name
        request.options.update(self._options)
        return self._stub.AskStream(request, timeout=timeout)


# One AskStream call (question index, question, deadline) with the row's options, every event counted; a non-OK
# end is kept as its status name.
Asker = Callable[[int, str, float], Call]


def stub_asker(stub: api_pb2_grpc.SkbqaStub, options: dict[str, str]) -> Asker:
    def ask(index: int, question: str, deadline_s: float) -> Call:
        return ask_stream(_WithOptions(stub, options), index, question, deadline_s)  # type: ignore[arg-type]

    return ask


def answered_normally(call: Call, question: str, fault: Fault, refs: References) -> bool:
    """Answered as with nothing down: the reference ranking, not degraded, Ray's rerank applied when asked for."""
    if call.status is not None or len(call.finals) != 1 or call.degraded[0]:
        return False
    if fault.reranked and ray_failed(call.notes[0]):
        return False
    if fault.llm:  # the LLM parsed it: no fallback note, the ranking of its parse
        return "parser_fallback" not in call.notes[0] and call.finals[0] == refs.llm[question]
    return call.finals[0] == (refs.reranked if fault.reranked else refs.af)[question]


def probe(ask: Asker, fault: Fault, refs: References) -> Callable[[], bool]:
    """One call answered normally (`answered_normally`)?"""
    question = next(iter(refs.af))
    return lambda: answered_normally(ask(-1, question, 10.0), question, fault, refs)


def settle(stack: SupervisedStack, ask: Asker, fault: Fault, refs: References, within_s: float) -> bool:
    """Every process healthy and a probe answered normally: the stack is where a row may start."""
    return wait_for(stack.all_healthy, within_s, every_s=1.0) and wait_for(
        probe(ask, fault, refs), within_s, every_s=1.0
    )


def classify(
    calls: list[Call], questions: list[str], fault: Fault, refs: References, load: Load
) -> dict[str, Any]:
    answered, lost = 0, 0
    clear: Counter[str] = Counter()
    reasons: Counter[str] = Counter()
    duplicates = degraded = in_process = ray_fallback = parser_fallback = 0
    for call in calls:
        question = questions[call.index]
        took = call.ended - call.began
        duplicates += max(0, len(call.finals) - 1)
        if call.status is not None:
            if call.status in CLEAR_STATUSES and took <= load.deadline_s + load.slack_s:
                clear[call.status] += 1
            else:
                lost += 1
                why = "deadline (no answer in time)" if call.status == "DEADLINE_EXCEEDED" else call.status
                reasons[why if call.status not in CLEAR_STATUSES else f"{call.status} after the deadline"] += 1
        elif not call.finals:
            lost += 1
            reasons["stream ended without a final answer"] += 1
        elif call.finals[0] != reference(call, question, fault, refs):
            lost += 1
            reasons["wrong ranking"] += 1
        else:
            answered += 1
            by_rerank = bool(call.degraded[0]) and degraded_by(call.notes[0]) == "rerank"
            in_process += by_rerank
            degraded += bool(call.degraded[0]) and not by_rerank
            ray_fallback += fault.reranked and not by_rerank and ray_failed(call.notes[0])
            parser_fallback += "parser_fallback" in call.notes[0]
    return {
        "sent": len(calls),
        "answered": answered,
        "clear_status": dict(clear),
        "lost": lost,
        "lost_reasons": dict(reasons),
        "duplicates_delivered": duplicates,
        "answered_degraded_bm25": degraded,
        "answered_degraded_rerank_in_process": in_process,
        "answered_without_ray_rerank": ray_fallback,
        "answered_by_parser_fallback": parser_fallback,
        "max_call_s": round(max((c.ended - c.began for c in calls), default=0.0), 2),
        "max_past_deadline_s": round(max((c.ended - c.began - load.deadline_s for c in calls), default=0.0), 2),
        "over_deadline_plus_slack": sum(1 for c in calls if c.ended - c.began > load.deadline_s + load.slack_s),
        "clear_status_details": sorted({f"{c.status}: {c.detail}" for c in calls if c.status in CLEAR_STATUSES}),
    }


def _recovery(stack: SupervisedStack, ask: Asker, fault: Fault, refs: References, load: Load) -> dict[str, Any]:
    """Kill the target, then time the supervisor's restart, the new process's health and the first normal answer
    (a probe sent after the restarted process is healthy). Runs beside the load."""
    if fault.supervisor:
        return supervisor_killed(stack, probe(ask, fault, refs), load.recover_within_s)
    if fault.recovery is not None:
        return fault.recovery(stack, probe(ask, fault, refs))
    evidence: dict[str, Any] = {"restarts_before": stack.restarts(fault.target)}
    old_pid = int(stack.record(fault.target)["pid"])
    killed_at = evidence["killed_at"] = time.monotonic()
    if fault.ray:
        evidence["killed_ray_pids"] = stack.kill_descendants(fault.target, RAY_PROCESSES)
    else:
        evidence["killed_pid"] = stack.kill(fault.target)

    def since() -> float:
        return round(time.monotonic() - killed_at, 1)

    restarted = wait_for(lambda: int(stack.record(fault.target)["pid"]) != old_pid, load.restart_within_s)
    evidence["restarted_after_s"] = since() if restarted else None
    evidence["new_pid"] = int(stack.record(fault.target)["pid"]) if restarted else None
    if restarted:
        healthy = wait_for(lambda: stack.healthy(fault.target), load.recover_within_s)
        evidence["healthy_after_s"] = since() if healthy else None
    remaining = max(1.0, load.recover_within_s - (time.monotonic() - killed_at))
    normal = wait_for(probe(ask, fault, refs), remaining, every_s=0.5)
    if fault.balanced and restarted:
        # the balancer sends the restarted replica calls again: it counts AskStream calls from its start
        used = wait_for(
            lambda: (stack.counter(fault.target, "skbqa_request_seconds_count", rpc="askstream") or 0) > 0,
            max(1.0, load.recover_within_s - (time.monotonic() - killed_at)),
        )
        evidence["balancer_used_it_after_s"] = since() if used else None
        normal = normal and used
    evidence["recovered_after_s"] = since() if normal and restarted else None
    evidence["answering_normally_after_s"] = since() if normal else None
    return evidence


def run_row(
    stack: SupervisedStack, fault: Fault, refs: References, load: Load, questions: list[str]
) -> dict[str, Any]:
    """One row: settle, drive the load with the fault injected at `fault_at_s`, wait for the supervisor; the
    row's counts and evidence (nothing is asserted here)."""
    # A channel whose server went away (the gateway killed) waits out a reconnect backoff that grows to 120 s by
    # default, failing calls UNAVAILABLE meanwhile: capped at 1 s, so the row times the gateway, not the backoff.
    # A balanced row's client caps it itself (skbqa.client.addresses).
    channel = grpc.insecure_channel(
        stack.gateway,
        options=[("grpc.initial_reconnect_backoff_ms", 200), ("grpc.max_reconnect_backoff_ms", 1000)],
    )
    sdk = balanced_client(stack, load.deadline_s) if fault.balanced else None
    ask: Asker = (
        client_asker(sdk, fault.options)
        if sdk is not None
        else stub_asker(api_pb2_grpc.SkbqaStub(channel), fault.options)
    )
    try:
        if not settle(stack, ask, fault, refs, 240.0):
            raise RuntimeError(f"the stack did not settle before {fault.label}: {stack.status()}")
        status_before = stack.status()
        load_average = os.getloadavg()  # the machine is shared: a busy one restarts processes slower
        dropped_before = stack.duplicates_dropped()
        evidence: dict[str, Any] = {}
        failure: list[BaseException] = []
        began = time.monotonic()

        def inject() -> None:
            try:
                time.sleep(load.fault_at_s)
                evidence.update(_recovery(stack, ask, fault, refs, load))
            except BaseException as exc:  # reported in the row's thread
                failure.append(exc)
            finally:
                evidence["done_at"] = time.monotonic()  # the load runs `tail_s` more, then stops

        injector = threading.Thread(target=inject, name="fault", daemon=True)
        injector.start()

        calls: list[Call] = []
        taken = iter(range(load.max_calls))
        lock = threading.Lock()

        def client() -> None:
            while True:
                with lock:
                    index = next(taken, None)
                if index is None or (not injector.is_alive() and time.monotonic() > done_at() + load.tail_s):
                    return
                delay = began + index / load.rate_per_s - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                question = questions[index % len(questions)]
                call = ask(index % len(questions), question, load.deadline_s)
                with lock:
                    calls.append(call)

        def done_at() -> float:
            return float(evidence.get("done_at", time.monotonic()))

        clients = [threading.Thread(target=client, name=f"client-{n}") for n in range(load.clients)]
        for thread in clients:
            thread.start()
        for thread in clients:
            thread.join()
        seconds = time.monotonic() - began
        injector.join(load.restart_within_s + load.recover_within_s + 30)
        if failure:
            raise failure[0]
        status_after = stack.status()
        counts = classify(calls, questions, fault, refs, load)
        before, after = status_before.get(fault.target, ("?", 0)), status_after.get(fault.target, ("?", 0))
        evidence.update(
            status_restarts_before=before[1],
            status_restarts_after=after[1],
            status_health_after=after[0],
            load_average_1m_before_and_after=[round(load_average[0], 1), round(os.getloadavg()[0], 1)],
            calls_ended_after_the_kill=sum(1 for c in calls if c.ended - began > load.fault_at_s),
            calls_started_after_the_kill=sum(1 for c in calls if c.began - began > load.fault_at_s),
        )
        killed_at = float(evidence.pop("killed_at", began + load.fault_at_s))
        evidence["refused_calls_started_after_the_kill"] = sum(
            1 for c in calls if c.status in CLEAR_STATUSES and c.began > killed_at
        )
        if isinstance(ask, ClientAsker):
            evidence["calls_retried_by_the_client"] = ask.retried()
            evidence["calls_served_by_replica_since_start"] = {
                r: stack.counter(r, "skbqa_request_seconds_count", rpc="askstream") for r in stack.gateway_names()
            }
        return {
            "fault": fault.label,
            "target": fault.target,
            "outcome": outcome(counts, evidence, fault),
            **counts,
            "duplicates_dropped": dropped_between(dropped_before, stack.duplicates_dropped()),
            "seconds": round(seconds, 1),
            "recovered_after_s": evidence.get("recovered_after_s"),
            "load": {**vars(load), "options": fault.options},
            "evidence": {k: v for k, v in evidence.items() if k != "done_at"},
        }
    finally:
        channel.close()
        if sdk is not None:
            sdk[0].close()


def outcome(counts: dict[str, Any], evidence: dict[str, Any], fault: Fault) -> str:
    """The row's outcome column, from what was measured."""
    parts = []
    if fault.supervisor:
        parts.append(supervisor_outcome(evidence))
    elif fault.recovery is not None:
        parts.append(str(evidence.get("outcome", "")))
    elif evidence.get("restarted_after_s") is None:
        parts.append(f"{fault.target} NOT restarted by the supervisor")
    else:
        parts.append(f"restarted by the supervisor after {evidence['restarted_after_s']} s")
    if counts["answered_degraded_bm25"]:
        parts.append(f"{counts['answered_degraded_bm25']} answered degraded (BM25), flagged")
    if counts.get("answered_degraded_rerank_in_process"):
        parts.append(
            f"{counts['answered_degraded_rerank_in_process']} answered degraded (step 8 in process), flagged"
        )
    if counts["answered_without_ray_rerank"]:
        parts.append(f"{counts['answered_without_ray_rerank']} answered without step 8 (Ray failed, in notes)")
    if counts["answered_by_parser_fallback"]:
        parts.append(f"{counts['answered_by_parser_fallback']} answered by the encoder parser (fallback in notes)")
    if counts["clear_status"]:
        parts.append("refused " + ", ".join(f"{n} {code}" for code, n in sorted(counts["clear_status"].items())))
    if counts["lost"]:
        parts.append(f"{counts['lost']} LOST")
    return "; ".join(parts)
