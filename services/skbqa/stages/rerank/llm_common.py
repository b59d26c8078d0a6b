"""What the three LLM rerankers share: settings, per-request limits, the deadline, usage counting, one prompt,
bounded fan-out.

Every prompt is a single user message (the A.2 templates), sent at temperature 0 with `max_tokens` = the reply
budget; the prompt itself must fit `context_window - reply budget` (see `descriptions.fit_prompt`). The reply
budget is sized to the answer each reranker expects (a score, an id, k ids), because a small model fills
whatever it is given: a 4096-token listwise budget let SmolLM2 ramble for 4,095 tokens (335 s of server time,
which llama.cpp keeps spending after the client gave up) and also pushed the prompt down to shorter
descriptions. Reasoning models need room to think first: `LlmRerankSettings.reply_tokens` overrides the budget.

Each call's timeout is the time left until the reranker's deadline, so no call outlives it by more than the
adapter's own slack. Fan-out uses a per-call ThreadPoolExecutor of `concurrency` workers: the bound holds per
rerank call, and no executor outlives a request (nothing to start or close).

A request may override the deadline and the fan-out through `QueryContext.options` (`rerank_deadline_s`,
`rerank_concurrency`); the af strategy passes them through unvalidated, so they are validated here.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from skbqa.common.errors import InvalidInputError, clip
from skbqa.models.chat import ChatMessage, ChatModel, LlmError, estimate_tokens
from skbqa.query.context import QueryContext
from skbqa.stages.rerank.descriptions import FittedPrompt, NodeDescriber
from skbqa.stores.index import IndexStores

T = TypeVar("T")

DEFAULT_DEADLINE_SECONDS = 30.0
DEFAULT_CONCURRENCY = 8
DEADLINE_NOTE = "deadline"
DEADLINE_OPTION = "rerank_deadline_s"
CONCURRENCY_OPTION = "rerank_concurrency"


@dataclass(frozen=True)
class LlmRerankSettings:
    deadline: float = DEFAULT_DEADLINE_SECONDS  # seconds per rerank call; then the best order so far is returned
    concurrency: int = DEFAULT_CONCURRENCY  # prompts in flight at once (pointwise, pairwise)
    # max_tokens of every reply, also kept free of prompt. None = sized to the expected answer (pointwise 64,
    # pairwise 32, listwise 8 per candidate + 32 up to 1024), at most half the context window. Those budgets
    # leave no room for reasoning: for a model that thinks before answering (<think>…</think>) set this higher
    # (e.g. 2048–4096), or its answer is cut off and the reply counts as unparsed.
    reply_tokens: int | None = None

    def validated(self, model: ChatModel) -> LlmRerankSettings:
        positive_seconds(self.deadline, "reranker deadline")
        at_least_one(self.concurrency, "reranker concurrency")
        if self.reply_tokens is not None and not 0 < self.reply_tokens < model.context_window:
            raise InvalidInputError(
                f"reply_tokens ({self.reply_tokens}) must be positive and below the model's context window "
                f"({model.context_window})"
            )
        return self


def positive_seconds(value: object, what: str) -> float:
    # bool is an int, and NaN / inf would reach wait() and the socket timeout: refuse them all here.
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
        raise InvalidInputError(f"{what} must be a positive number of seconds, got {clip(repr(value))}")
    return float(value)


def at_least_one(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidInputError(f"{what} must be an integer of at least 1, got {clip(repr(value))}")
    return value


def request_limits(settings: LlmRerankSettings, options: Mapping[str, Any]) -> tuple[float, int]:
    """(deadline seconds, concurrency) for one request: its options when given (None counts as not given),
    else the reranker's settings. Raises InvalidInputError for an unusable option."""
    deadline = options.get(DEADLINE_OPTION)
    concurrency = options.get(CONCURRENCY_OPTION)
    return (
        settings.deadline if deadline is None else positive_seconds(deadline, DEADLINE_OPTION),
        settings.concurrency if concurrency is None else at_least_one(concurrency, CONCURRENCY_OPTION),
    )


class NotSent(LlmError):
    """A prompt the meter refused to send because another call had failed (or the reranker had returned).
    `run_bounded` waits for that failure itself rather than reporting this one."""


class Deadline:
    def __init__(self, seconds: float) -> None:
        self._ends = time.monotonic() + seconds

    def remaining(self) -> float:
        return self._ends - time.monotonic()

    @property
    def passed(self) -> bool:
        return self.remaining() <= 0


class UsageMeter:
    """Thread-safe counters reported as `RerankOutcome.usage`, frozen by `close()`.

    - prompts / prompt_tokens / completion_tokens: answered calls only (the adapter's token counts, or
      estimates when it reports none);
    - failed: calls that raised (backend error, or cut off by the deadline);
    - skipped: queued prompts never sent (the deadline passed first, or a call had failed);
    - abandoned: calls still in flight when the reranker returned; whatever they cost is not counted;
    - fallback_<level>: sent prompts that needed a context-overflow fallback (Table 7's incidents); unparsed:
      replies that could not be used; and whatever a reranker adds (pairwise: rounds).

    At close, prompts + failed + skipped + abandoned = the prompts queued. Threads abandoned at the deadline
    keep running; once the meter is closed they may neither send (so the adapter is not asked either) nor
    count, and the dict `close()` returned is never touched again.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        keys = ("prompts", "prompt_tokens", "completion_tokens", "failed", "skipped", "abandoned")
        self._counts: dict[str, int] = dict.fromkeys(keys, 0)
        self._queued = self._sent = self._in_flight = 0
        self._closed = False  # the reranker has returned: nothing counts any more
        self._stopped = False  # nothing more may be sent (set on close and after a failed call)

    def add(self, key: str, amount: int = 1) -> None:
        with self._lock:
            if not self._closed:
                self._counts[key] = self._counts.get(key, 0) + amount

    def queue(self, prompts: int) -> None:
        """`prompts` are about to be asked; those never sent are reported as skipped."""
        with self._lock:
            self._queued += prompts

    def begin(self, fitted: FittedPrompt) -> bool:
        """A call is about to be sent; False (send nothing) once the reranker has returned or a call failed."""
        with self._lock:
            if self._stopped:
                return False
            self._sent += 1
            self._in_flight += 1
            if fitted.level != "full":
                self._counts[f"fallback_{fitted.level}"] = self._counts.get(f"fallback_{fitted.level}", 0) + 1
            return True

    def answered(self, prompt_tokens: int, completion_tokens: int) -> None:
        self._end({"prompts": 1, "prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens})

    def failed(self) -> None:
        """A call raised. Nothing more is sent: the adapter already retried, so the backend is failing (or the
        deadline cut the call off), and `run_bounded` abandons the batch anyway; a worker that picked up the
        next job before the abandonment would otherwise send one more request to a dead server."""
        self._end({"failed": 1}, stop=True)

    def _end(self, amounts: dict[str, int], *, stop: bool = False) -> None:
        with self._lock:
            self._in_flight -= 1
            self._stopped |= stop
            if not self._closed:  # a late completion must not change what was already reported
                for key, amount in amounts.items():
                    self._counts[key] += amount

    def close(self) -> dict[str, int]:
        """The final counts, as of the first close (a new dict each time, never touched again)."""
        with self._lock:
            if not self._closed:
                self._closed = self._stopped = True
                self._counts["skipped"] = self._queued - self._sent
                self._counts["abandoned"] = self._in_flight
            return dict(self._counts)


@dataclass(frozen=True)
class RerankRun:
    """One rerank call's limits and meter."""

    deadline: Deadline
    concurrency: int
    meter: UsageMeter


class LlmBase:
    """Constructor and prompt plumbing shared by the pointwise, listwise and pairwise rerankers."""

    def __init__(
        self,
        stores: IndexStores,
        model: ChatModel,
        settings: LlmRerankSettings | None = None,
        *,
        describer: NodeDescriber | None = None,
    ) -> None:
        self._model = model
        self._settings = (settings or LlmRerankSettings()).validated(model)
        self._describer = describer or NodeDescriber(stores.nodes, stores.graph)

    def default_reply_tokens(self, listed: int) -> int:
        """The reply budget this reranker's answer needs for a prompt listing `listed` candidates."""
        raise NotImplementedError

    def reply_tokens(self, listed: int) -> int:
        """max_tokens for a prompt listing `listed` candidates: the configured budget, else the default capped at
        half the context window so a small model still leaves room for the prompt."""
        if self._settings.reply_tokens is not None:
            return self._settings.reply_tokens
        return min(self.default_reply_tokens(listed), self._model.context_window // 2)

    def prompt_budget(self, reply_tokens: int) -> int:
        """Tokens a prompt may take: the context window minus the reply reserve."""
        return self._model.context_window - reply_tokens

    def start(self, query: QueryContext) -> RerankRun:
        """Validate the request's options and start its deadline (before any work, so a bad option fails
        however many candidates there are)."""
        seconds, concurrency = request_limits(self._settings, query.options)
        return RerankRun(Deadline(seconds), concurrency, UsageMeter())

    def ask(self, fitted: FittedPrompt, run: RerankRun, reply_tokens: int) -> str:
        """One completion; raises LlmError when the deadline has passed (nothing is sent) or the backend fails.
        The caller must have queued the prompt on `run.meter`."""
        remaining = run.deadline.remaining()
        if remaining <= 0:
            raise LlmError(DEADLINE_NOTE)
        if not run.meter.begin(fitted):
            raise NotSent("not sent: an earlier call failed or the reranker has returned")
        try:
            reply = self._model.chat(
                [ChatMessage("user", fitted.prompt)],
                max_tokens=reply_tokens,
                temperature=0.0,
                timeout=remaining,
            )
        except BaseException:
            run.meter.failed()
            raise
        content = reply.content or ""
        run.meter.answered(
            reply.prompt_tokens or estimate_tokens(fitted.prompt),
            reply.completion_tokens or estimate_tokens(content),
        )
        return content

    def fan_out(self, jobs: Sequence[Callable[[], T]], run: RerankRun) -> tuple[list[Done[T] | None], str]:
        """Run jobs (one prompt each) with at most `concurrency` in flight; see `run_bounded`.

        The bound is also cut to the adapter's own request slots when it has them (`OpenAIChatModel.concurrency`):
        a job beyond those would only wait inside the adapter, where it counts as a request (and, when the
        deadline passes there, a failure) without being sent; waiting here it is skipped, and never reaches it.
        """
        run.meter.queue(len(jobs))
        workers = run.concurrency
        slots = getattr(self._model, "concurrency", None)
        if isinstance(slots, int) and not isinstance(slots, bool) and slots >= 1:
            workers = min(workers, slots)
        return run_bounded(jobs, workers, run.deadline)


@dataclass(frozen=True)
class Done(Generic[T]):
    """A finished job's value: tells a job that returned None apart from one that never finished."""

    value: T


def run_bounded(
    jobs: Sequence[Callable[[], T]], concurrency: int, deadline: Deadline
) -> tuple[list[Done[T] | None], str]:
    """Results in job order (None for jobs that did not finish) and a note: "" when all finished,
    "deadline" when time ran out, "llm error: ..." when a job raised LlmError (the rest are then abandoned: the
    adapter already retried, so the backend is failing). Any other exception is a bug and propagates.

    Abandoned jobs that are already running finish in the background; their call timeouts end at the deadline.
    """
    results: list[Done[T] | None] = [None] * len(jobs)
    if not jobs:
        return results, ""
    executor = ThreadPoolExecutor(max_workers=min(concurrency, len(jobs)), thread_name_prefix="rerank")
    futures: list[Future[T]] = [executor.submit(job) for job in jobs]
    note = ""
    try:
        pending = set(futures)
        while pending and not note:
            remaining = deadline.remaining()
            if remaining <= 0:
                note = DEADLINE_NOTE
                break
            done, pending = wait(pending, timeout=remaining, return_when=FIRST_EXCEPTION)
            for future in done:
                error = future.exception()
                if isinstance(error, NotSent):
                    # Refused because another call failed: that call's future (not yet done, perhaps)
                    # carries the error worth reporting.
                    continue
                if isinstance(error, LlmError):
                    # A call cut short by the deadline surfaces as an adapter timeout: report the deadline.
                    note = DEADLINE_NOTE if deadline.passed else f"llm error: {error}"
                elif error is not None:
                    raise error
    finally:
        executor.shutdown(wait=False, cancel_futures=True)
    for i, future in enumerate(futures):
        if future.done() and not future.cancelled() and future.exception() is None:
            results[i] = Done(future.result())
    return results, note
