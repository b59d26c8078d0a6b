"""The bus shell around a stage core: consume → compute → produce → commit (at-least-once).

- Offsets are committed only after the outputs (next stage's message, answers) are durably published, so a worker
  killed mid-request leaves the request to another replica of the group (or itself after a restart).
- Idempotent by request id: a request this worker already published is committed and skipped when redelivered;
  anything else redelivered is simply computed again (stages are deterministic) and the gateway keeps the first
  answer.
- A request whose deadline has passed is answered DEADLINE_EXCEEDED without computing.
- Invalid input is answered at once (retrying cannot help); other failures are retried `max_attempts` times, then
  the request goes to the dead-letter topic with its error and the client gets the error as a status.

Every output carries the request's latency trace plus this stage's two hops (serving/latency_trace.py): queue
(until this worker takes the message) and compute (until right before its outputs are published).

Co-located stages (a `StageChain`, serving/stages/chain.py): the worker consumes the first stage's input topic in
its group and steps through the cores in process, each with the rules above (deadline check, retries, dead-letter
of that stage's own input with its stage and source topic, metrics under its own stage name, its queue hop ≈ 0
and its compute hop in the trace). Answers a core emits (a partial) are published as soon as it has run; only the
last core's forward is published; the input is committed after all of it, as for one stage.

Metrics besides the stage histograms: `skbqa_inflight{service=<role>}` while a message is handled, and the group's
lag on the input topic (`skbqa_kafka_lag`, serving/lag.py) every `lag_interval_s` while the worker runs.

Fault injection (for durability tests, off unless ``SKBQA_FAULT_DIR`` is set): while a file named
``hold-commit-<role>`` exists in that directory, a worker keeps a handled batch uncommitted after publishing its
outputs, so a test can kill it with work in flight at a known moment instead of racing its commit.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections import OrderedDict
from pathlib import Path

from google.protobuf.message import DecodeError

from skbqa.bus import topics
from skbqa.bus.base import Bus, Consumer, Message
from skbqa.observability import hops
from skbqa.observability.metrics import get_metrics
from skbqa.serving import latency_trace
from skbqa.serving.lag import DEFAULT_INTERVAL_S, DEFAULT_TIMEOUT_S, LagExporter
from skbqa.serving.stage_versions import VersionedCores, VersionUnavailableError
from skbqa.serving.stages.chain import members
from skbqa.serving.stages.core import AnswerEnvelope, StageCore, StageMessage, StageOutput
from skbqa.serving.stages.registry import run_stage
from skbqa.serving.status import DEADLINE_EXCEEDED, INVALID_ARGUMENT, PERMANENT, UNAVAILABLE, status_for

logger = logging.getLogger(__name__)


class _Recent:
    """The last `size` request ids this worker finished (bounded memory)."""

    def __init__(self, size: int = 4096) -> None:
        self._size = size
        self._ids: OrderedDict[str, None] = OrderedDict()

    def __contains__(self, key: str) -> bool:
        return key in self._ids

    def add(self, key: str) -> None:
        self._ids[key] = None
        while len(self._ids) > self._size:
            self._ids.popitem(last=False)


class StageWorker:
    def __init__(
        self,
        core: StageCore,
        bus: Bus,
        *,
        group: str | None = None,
        max_attempts: int = 3,
        retry_backoff_s: float = 0.2,
        poll_timeout_s: float = 0.1,
        max_records: int = 16,
        lag_interval_s: float = DEFAULT_INTERVAL_S,
        lag_timeout_s: float = DEFAULT_TIMEOUT_S,
        versions: VersionedCores | None = None,
    ) -> None:
        """`core`: one stage, or a `StageChain` of consecutive ones (in the first one's group, on its input).
        `lag_interval_s` <= 0 turns the lag exporter off. `versions`: the knowledge-base versions this replica
        follows (live updates): each message runs on the core of its pinned version."""
        self.core = core
        self._versions = versions
        self._cores = members(core)
        self._entry = self._cores[0].role  # the stage whose topic and group this worker consumes
        self._bus = bus
        self.group = group or f"skbqa-{self._entry}"
        self._max_attempts = max_attempts
        self._backoff = retry_backoff_s
        self._poll_timeout_s = poll_timeout_s
        self._max_records = max_records
        self._done = _Recent()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._metrics = get_metrics()
        self.lag = (
            LagExporter(
                bus,
                self.group,
                [core.input_topic],
                stage=self._entry,
                interval_s=lag_interval_s,
                timeout_s=lag_timeout_s,
            )
            if lag_interval_s > 0
            else None
        )
        self.processed = 0
        fault_dir = os.environ.get("SKBQA_FAULT_DIR")
        self._hold_commit_file = Path(fault_dir) / f"hold-commit-{self._entry}" if fault_dir else None
        # Set once the consumer owns partitions: a service reports SERVING only then, so whoever restarts it (the
        # stack, a rolling update) waits for the group join instead of stopping a member that is still joining,
        # which would leave the group in a rebalance waiting for it (up to max_poll_interval_ms on tansu).
        self.joined = threading.Event()

    # ------------------------------------------------------------------------------------------------ lifecycle

    def wait_joined(self, timeout_s: float) -> bool:
        return self.joined.wait(timeout_s)

    def start(self) -> StageWorker:
        self._thread = threading.Thread(target=self.run, name=f"skbqa-{self.core.role}-worker", daemon=True)
        self._thread.start()
        if self.lag is not None:
            self.lag.start()
        return self

    def stop(self, timeout_s: float = 5.0) -> None:
        self._stop.set()
        if self.lag is not None:
            self.lag.stop()
        if self._thread is not None:
            self._thread.join(timeout_s)

    def run(self) -> None:
        while not self._stop.is_set():
            consumer = self._bus.consumer([self.core.input_topic], group=self.group)
            try:
                self._consume(consumer)
            except Exception as exc:
                # Publishing an output failed (broker away): the batch stays uncommitted. Leaving the group hands
                # it back (to this worker when it rejoins, or to another replica), so nothing is skipped.
                logger.warning("%s: %s; rejoining the group", self.core.role, str(exc).splitlines()[0])
                self._metrics.count_error(self._entry, "bus")
                self._stop.wait(1.0)
            finally:
                consumer.close()

    def _consume(self, consumer: Consumer) -> None:
        while not self._stop.is_set():
            try:
                batch = consumer.poll(self._poll_timeout_s, self._max_records)
            except Exception as exc:  # broker away: wait for it rather than exit
                logger.warning("%s: poll failed: %s", self.core.role, exc)
                self._stop.wait(0.5)
                continue
            if not self.joined.is_set() and consumer.assignment():
                self.joined.set()
            done = []
            for message in batch:
                if self._stop.is_set():
                    break  # the rest of the batch goes to another replica
                self.handle(message)
                done.append(message)
            if done:
                self._hold_commit_while_asked()
                # one commit per batch, after every output of it is published (at-least-once)
                consumer.commit(done)

    def _hold_commit_while_asked(self) -> None:
        while self._hold_commit_file is not None and self._hold_commit_file.exists() and not self._stop.is_set():
            self._stop.wait(0.05)

    # ------------------------------------------------------------------------------------------------ one message

    def handle(self, message: Message) -> None:
        with self._metrics.inflight(self._entry):
            self._handle(message)

    def _handle(self, message: Message) -> None:
        role = self._entry
        taken_us = hops.now_us()  # ends this stage's queue hop in the request's latency trace
        if message.timestamp_ms:
            self._metrics.observe_queue_wait(role, max(0.0, time.time() - message.timestamp_ms / 1000))
        try:
            request = StageMessage.FromString(message.value)
        except DecodeError as exc:
            # Not a StageMessage at all: nothing to retry. Dead-letter it, and tell whichever gateway waits on
            # the message's key (an empty gateway_id reaches every gateway; only a waiting one keeps it).
            request = StageMessage(request_id=message.key)
            self._dead_letter(
                message,
                request,
                self._cores[0],
                INVALID_ARGUMENT,
                "the stage message could not be decoded",
                exc,
                1,
            )
            self._observe(role, request, time.perf_counter(), "undecodable")
            return
        if request.request_id in self._done:
            self._metrics.count_message(role, "duplicate")
            return
        cores = self._cores
        if self._versions is not None:
            try:  # the version the request is pinned to (the first stage pins it): never two in one answer
                cores = members(self._versions.core_for(request))
            except VersionUnavailableError as exc:
                self._answer_error(request, role, UNAVAILABLE, str(exc))
                self._metrics.count_message(role, "unavailable")
                return
        source = message
        for position, core in enumerate(cores):
            if position:  # handed over in process: this co-located stage's queue hop is the hand-over alone
                taken_us = hops.now_us()
                self._metrics.observe_queue_wait(core.role, 0.0)
                # what a failure of this stage dead-letters: its own input, as if read from its own topic
                source = Message(core.input_topic, request.request_id, request.SerializeToString(), {})
            last = position == len(cores) - 1
            with self._metrics.inflight(core.role) if position else contextlib.nullcontext():
                output = self._run(core, request, source, taken_us)
            if output is None:
                return  # answered with an error, expired or dead-lettered: the request ends here
            if last or output.forward is None:
                self._publish(output, core)
            else:
                # a co-located stage's answers (a partial) go out at once; its forward stays in process
                self._publish(StageOutput(None, output.answers), core)
            # counted once its outputs are on the bus (or handed on): an "ok" is a message others can read
            self._metrics.count_message(core.role, "ok")
            if output.forward is None or last:
                break
            request = output.forward
        self._done.add(request.request_id)
        self.processed += 1

    def _run(self, core: StageCore, request: StageMessage, source: Message, taken_us: int) -> StageOutput | None:
        """One stage on `request`: its deadline check, its retries, its dead-letter; the output with this
        stage's hops carried (None when the request ended here, its error already answered)."""
        role = core.role
        if request.deadline_unix_ms and time.time() * 1000 > request.deadline_unix_ms:
            self._answer_error(request, role, DEADLINE_EXCEEDED, f"deadline passed before the {role} stage")
            self._metrics.count_message(role, "expired")
            return None
        started = time.perf_counter()
        for attempt in range(1, self._max_attempts + 1):
            try:
                output = run_stage(core, request)
            except Exception as exc:
                code, text = status_for(exc, request.request_id)
                self._metrics.count_error(role, type(exc).__name__)
                if code in PERMANENT:
                    self._answer_error(request, role, code, text)
                    self._observe(role, request, started, "invalid")
                    return None
                if attempt < self._max_attempts:
                    self._metrics.count_message(role, "retried")
                    time.sleep(self._backoff * attempt)
                    continue
                self._dead_letter(source, request, core, code, text, exc)
                self._observe(role, request, started, "error")
                return None
            # the stage's own time ends here; the publish is its own figure, which overlaps the next stage's queue
            # wait (that starts at the record's produce timestamp, when the publish begins): the figures that add up
            # to the request's time are the hops of its trace (latency_trace), not stage + publish + queue wait
            self._metrics.observe_stage(role, request.strategy, time.perf_counter() - started, "ok")
            latency_trace.carry(request, output, role, taken_us)
            return output
        return None  # unreachable: the last attempt returns or dead-letters

    def _observe(self, role: str, request: StageMessage, started: float, status: str) -> None:
        self._metrics.observe_stage(role, request.strategy, time.perf_counter() - started, status)
        self._metrics.count_message(role, status)

    def _publish(self, output: StageOutput, core: StageCore) -> None:
        published = time.perf_counter()
        # This stage's answers (a partial) go before its forward: the final, made downstream from the forward,
        # then always reaches the answer topic after them, and a stream sees its partial before its final.
        for envelope in output.answers:
            self._bus.publish(topics.ANSWER, envelope.request_id, envelope.SerializeToString())
        if output.forward is not None:
            self._bus.publish(core.output_topic, output.forward.request_id, output.forward.SerializeToString())
        if output.answers or output.forward is not None:
            self._metrics.observe_publish(core.role, time.perf_counter() - published)

    def _answer_error(self, request: StageMessage, role: str, code: int, text: str) -> None:
        envelope = AnswerEnvelope(
            request_id=request.request_id,
            kind=AnswerEnvelope.ERROR,
            stage=role,
            status_code=code,
            status_message=text,
            gateway_id=request.gateway_id,
        )
        self._bus.publish(topics.ANSWER, request.request_id, envelope.SerializeToString())
        self._done.add(request.request_id)

    def _dead_letter(
        self,
        message: Message,
        request: StageMessage,
        core: StageCore,
        code: int,
        text: str,
        exc: Exception,
        attempts: int = 0,
    ) -> None:
        """`message`: the failing stage's input as read from (or, co-located, as it would be on) its topic."""
        role = core.role
        attempts = attempts or self._max_attempts
        # the error's class and text, not the question: logs at ERROR must not carry user text either
        logger.error(
            "%s: request %s dead-lettered after %d attempt(s): %s",
            role,
            request.request_id,
            attempts,
            type(exc).__name__,
        )
        headers = {
            "skbqa-stage": role,
            "skbqa-source-topic": message.topic,
            "skbqa-error": f"{type(exc).__name__}: {exc}"[:500],
            "skbqa-attempts": str(attempts),
        }
        self._bus.publish(topics.DEAD_LETTER, request.request_id, message.value, headers)
        self._answer_error(request, role, code, f"{text} (after {attempts} attempt(s) in the {role} stage)")
        self._metrics.count_message(role, "dead_lettered")
