"""The gateway's backend: publish each request to skbqa.query, and route answers from skbqa.answer back.

Every gateway replica reads the whole answer topic in a consumer group of its own (so each replica sees every
answer) and keeps those addressed to it (`gateway_id`) that a call is waiting for. Answers arrive at least once:
a request's first final (or error) ends its call, later copies are counted as duplicates and dropped. Answers are
matched to calls by the request id on the bus, which is the call's own (the client's id with a fresh suffix), so
two clients — or two calls of one client — that send one request_id never receive each other's answers.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout

from skbqa.bus import topics
from skbqa.bus.base import Bus, Consumer, unreachable
from skbqa.common.errors import BackendUnavailableError, InvalidInputError
from skbqa.observability import hops
from skbqa.observability.metrics import get_metrics
from skbqa.serving import latency_trace
from skbqa.serving.gateway.backends import Waiter
from skbqa.serving.gateway.resends import RESEND_AFTER_S, ResendingWaiter
from skbqa.serving.gateway.stage_liveness import DEFAULT_STALL_S, StageLiveness, watched_stages
from skbqa.serving.settings import ServiceSettings
from skbqa.serving.stages.core import AnswerEnvelope, StageMessage

logger = logging.getLogger(__name__)

# Publishes run on threads of their own, so a call waits for its publish only as long as its deadline allows: a
# broker that is down (the producer's first connect alone may take its whole connect timeout) never holds a call,
# or the calls queued behind it, past their deadlines. Beyond PUBLISH_BACKLOG waiting publishes a call is refused
# at once (UNAVAILABLE): the bus is not taking work, and waiting would only pile calls up.
PUBLISH_THREADS = 4
PUBLISH_BACKLOG = 64
BUS_DOWN = "the message bus is unreachable; retry shortly"
# Request ids of calls that ended without their final answer (deadline passed), remembered so that an answer
# arriving after them is counted as late rather than as a duplicate; the oldest are forgotten first.
ENDED_UNANSWERED = 4096
STAGE_WATCH_INTERVAL_S = 2.0  # how often the stages' lag is read (the health probe's own period)


class BusBackend:
    def __init__(
        self,
        bus: Bus,
        *,
        gateway_id: str | None = None,
        poll_timeout_s: float = 0.05,
        stall_s: float = DEFAULT_STALL_S,
        colocated: Sequence[str] = (),
        resend_after_s: float = RESEND_AFTER_S,
    ) -> None:
        """`stall_s`: how long messages may wait for a stage without progress before the gateway reports it
        (NOT_SERVING; <= 0: stages are not watched). `colocated`: the deployment's co-located stage groups
        ("parser+symbols+grounding"), watched as one service each. `resend_after_s`: how long a request may go
        without word while no stage holds it before it is sent again (`resends`; <= 0, or stages not watched:
        never)."""
        self.gateway_id = gateway_id or uuid.uuid4().hex[:12]
        self._bus = bus
        self._answered_at: float | None = None  # time.monotonic() of the last answer routed
        self._liveness = (
            StageLiveness(
                bus,
                stages=watched_stages(colocated),
                stall_s=stall_s,
                last_answer=lambda: self._answered_at,
            )
            if stall_s > 0
            else None
        )
        self._waiters: dict[str, Waiter] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._poll_timeout_s = poll_timeout_s
        self._resend_after_s = resend_after_s
        # latest: a new replica has no business with answers to requests made before it existed
        self._consumer: Consumer = bus.consumer(
            [topics.ANSWER], group=f"skbqa-gateway-{self.gateway_id}", from_beginning=False
        )
        # Record where this replica starts reading, so a rejoin after a broker restart resumes there rather than
        # at the then log end (which would skip the answers published while it was away).
        commit_positions = getattr(self._consumer, "commit_positions", None)
        if commit_positions is not None:
            commit_positions()
        self._assigned = threading.Event()
        self._publisher = ThreadPoolExecutor(max_workers=PUBLISH_THREADS, thread_name_prefix="skbqa-publish")
        self._backlog = threading.BoundedSemaphore(PUBLISH_BACKLOG)
        self._down = ""  # why the bus cannot be reached ("" = it can), from the last `probe`
        self._unanswered: OrderedDict[str, None] = OrderedDict()
        self._thread = threading.Thread(target=self._route, name="skbqa-answers", daemon=True)
        self._thread.start()
        # The stages are watched on a thread of their own: their lag calls go to the broker and can block for
        # their timeouts when it dies mid-call, and the health probe must still see a lost broker at once.
        self._stalled = ""  # the stage watch's last verdict ("" = every stage takes work)
        if self._liveness is not None:
            interval = min(STAGE_WATCH_INTERVAL_S, stall_s / 2)
            threading.Thread(
                target=self._watch_stages, args=(self._liveness, interval), name="skbqa-stage-watch", daemon=True
            ).start()

    def submit(self, message: StageMessage, timeout_s: float | None = None) -> Waiter:
        """Publish the request and return its waiter; TimeoutError when the publish does not finish within
        `timeout_s` (the call's deadline), BackendUnavailableError when the bus refuses it or is not taking work."""
        message.gateway_id = self.gateway_id
        if message.hops:  # the trace's first hop ends as the request leaves for the bus
            latency_trace.mark(message, hops.GATEWAY_ACCEPT)
        waiter = Waiter(message.request_id)
        liveness = self._liveness
        if liveness is not None and self._resend_after_s > 0:
            waiter = ResendingWaiter(
                message.request_id,
                lambda again: self._send_again(again, message),
                lambda: liveness.idle_at,
                after_s=self._resend_after_s,
            )
        return self._register(topics.QUERY, waiter, message.SerializeToString(), timeout_s)

    def request(self, topic: str, request_id: str, value: bytes, timeout_s: float | None = None) -> Waiter:
        """Publish `value` to `topic` under `request_id` and return the waiter for the answers addressed to this
        gateway under that id (a stage's answer, or the updater's to a change batch); errors as `submit`."""
        return self._register(topic, Waiter(request_id), value, timeout_s)

    def _register(self, topic: str, waiter: Waiter, value: bytes, timeout_s: float | None) -> Waiter:
        request_id = waiter.request_id
        with self._lock:
            # One waiter per id: another call's waiter is never replaced (its answers would reach this call). The
            # servicer gives every call an id of its own (requests.new_request), so this is a guard, not a path.
            if request_id in self._waiters:
                raise InvalidInputError("a request with this id is already in flight on this gateway")
            self._waiters[request_id] = waiter
        try:
            self._publish(topic, request_id, value).result(timeout=timeout_s)
        except FutureTimeout:
            self.forget(waiter)
            raise TimeoutError(request_id) from None
        except Exception:
            self.forget(waiter)
            raise
        return waiter

    def _publish(self, topic: str, request_id: str, value: bytes) -> Future[None]:
        if not self._backlog.acquire(blocking=False):
            raise BackendUnavailableError(BUS_DOWN if self._down else "too many requests waiting for the bus")
        future = self._publisher.submit(self._bus.publish, topic, request_id, value)
        future.add_done_callback(lambda _: self._backlog.release())
        return future

    def _send_again(self, waiter: ResendingWaiter, message: StageMessage) -> None:
        """Publish the request again under a new alias id of its waiter (`resends`); a failed publish is logged
        and the call waits on (it may be sent again later)."""
        alias = f"{message.request_id}~{waiter.resends}"
        with self._lock:
            if self._waiters.get(waiter.request_id) is not waiter:
                return  # the call has ended meanwhile
            self._waiters[alias] = waiter
            waiter.ids.add(alias)
        again = StageMessage()
        again.CopyFrom(message)
        again.request_id = alias
        get_metrics().count_message("gateway", "resent")
        logger.warning(
            "request %s had no answer and no stage held it: sent again as %s", message.request_id, alias
        )
        try:
            self._publish(topics.QUERY, alias, again.SerializeToString()).add_done_callback(_log_failed_resend)
        except BackendUnavailableError as exc:
            logger.warning("sending request %s again failed: %s", message.request_id, exc)

    def forget(self, waiter: Waiter) -> None:
        with self._lock:
            if self._waiters.get(waiter.request_id) is waiter:  # still waiting: the call ended unanswered
                self._drop(waiter)
                for request_id in waiter.ids:
                    self._unanswered[request_id] = None
                while len(self._unanswered) > ENDED_UNANSWERED:
                    self._unanswered.popitem(last=False)

    def _drop(self, waiter: Waiter) -> None:
        """Unregister every id of `waiter` (under `_lock`)."""
        for request_id in waiter.ids:
            if self._waiters.get(request_id) is waiter:
                del self._waiters[request_id]

    def ready(self) -> bool:
        """Serving only once the answer consumer holds its partitions (earlier answers would be missed), and
        while the bus was reachable at the last probe."""
        return self._assigned.is_set() and not self._down

    def probe(self) -> str:
        """ "" when the gateway can serve; otherwise why not (for the health watcher, every few seconds)."""
        self._down = BUS_DOWN if unreachable(self._bus) else ""
        if self._down:
            return self._down
        if not self._assigned.is_set():
            return "the answer consumer has no partitions yet"
        return self._stalled

    def _watch_stages(self, liveness: StageLiveness, interval_s: float) -> None:
        while not self._stop.is_set():
            if not self._down:  # a broker that is away has no lag to tell
                try:
                    self._stalled = liveness.check()
                except Exception as exc:  # keep the last verdict; the probe reports the broker itself
                    logger.warning("stage watch: %s", str(exc).splitlines()[0] if str(exc) else exc)
            self._stop.wait(interval_s)

    def wait_ready(self, timeout_s: float) -> bool:
        return self._assigned.wait(timeout_s)

    def _has_partitions(self) -> bool:
        assignment = getattr(self._consumer, "assignment", None)
        return True if assignment is None else bool(assignment())

    def _route(self) -> None:
        metrics = get_metrics()
        while not self._stop.is_set():
            try:
                messages = self._consumer.poll(self._poll_timeout_s, max_records=256)
                if not self._assigned.is_set() and self._has_partitions():
                    self._assigned.set()
            except Exception as exc:  # the broker is away: keep trying, calls time out meanwhile
                logger.warning("answer consumer: %s", exc)
                self._stop.wait(0.5)
                continue
            for message in messages:
                read_us = hops.now_us()  # ends the answer's hop in the request's latency trace
                if message.timestamp_ms:  # the last hop: answer published → read by this gateway
                    metrics.observe_queue_wait("gateway", time.time() - message.timestamp_ms / 1000)
                envelope = AnswerEnvelope.FromString(message.value)
                if envelope.hops:
                    latency_trace.mark(envelope, hops.ANSWER_QUEUE, read_us)
                self._answered_at = time.monotonic()  # the pipeline answers (`StageLiveness`)
                if envelope.gateway_id and envelope.gateway_id != self.gateway_id:
                    continue
                with self._lock:
                    waiter = self._waiters.get(envelope.request_id)
                    if waiter is not None and envelope.kind != AnswerEnvelope.PARTIAL:
                        self._drop(waiter)
                    late = waiter is None and self._unanswered.pop(envelope.request_id, 0) is None
                if waiter is None:
                    metrics.count_message("gateway", "late" if late else "duplicate")
                    continue
                waiter.push(envelope)
            if messages:
                try:
                    self._consumer.commit(messages)
                except Exception as exc:  # a lost commit only means these answers may arrive again: dropped
                    logger.warning("answer consumer commit: %s", str(exc).splitlines()[0])

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._publisher.shutdown(wait=False, cancel_futures=True)
        self._consumer.close()


def _log_failed_resend(future: Future[None]) -> None:
    error = future.exception()
    if error is not None:
        logger.warning("sending a request again failed: %s", str(error).splitlines()[0] if str(error) else error)


def backend_for(bus: Bus, settings: ServiceSettings) -> BusBackend:
    """The gateway's backend with the service settings' stage watch and resend delay."""
    return BusBackend(
        bus, stall_s=settings.stage_stall_s, colocated=settings.colocated, resend_after_s=settings.resend_after_s
    )
