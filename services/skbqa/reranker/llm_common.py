"""What the three LLM rerankers share: settings, the deadline, usage counting, one prompt, bounded fan-out.

Every prompt is a single user message (the A.2 templates), sent at temperature 0 with `max_tokens` =
`reply_tokens`; the prompt itself must fit `context_window - reply_tokens` (see `descriptions.fit_prompt`).
Each call's timeout is the time left until the reranker's deadline, so no call outlives it by more than the
adapter's own slack. Fan-out uses a per-call ThreadPoolExecutor of `concurrency` workers: the bound holds per
rerank call, and no executor outlives a request (nothing to start or close).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, replace
from typing import Generic, TypeVar

from skbqa.common.errors import InvalidInputError
from skbqa.models.chat import ChatMessage, ChatModel, LlmError, estimate_tokens
from skbqa.reranker.descriptions import Level, NodeDescriber
from skbqa.stores.index import IndexStores

T = TypeVar("T")

DEFAULT_DEADLINE_SECONDS = 30.0
DEFAULT_CONCURRENCY = 8
DEFAULT_REPLY_TOKENS = 1024
DEADLINE_NOTE = "deadline"


@dataclass(frozen=True)
class LlmRerankSettings:
    deadline: float = DEFAULT_DEADLINE_SECONDS  # seconds per rerank call; then the best order so far is returned
    concurrency: int = DEFAULT_CONCURRENCY  # prompts in flight at once (pointwise, pairwise)
    # Reserved for the reply (reasoning models spend it on thinking); None = the reranker's own default, capped
    # at half the context window so a small model still leaves room for the prompt.
    reply_tokens: int | None = None

    def validated(self, model: ChatModel, default_reply_tokens: int) -> LlmRerankSettings:
        if self.reply_tokens is None:
            reply = min(default_reply_tokens, model.context_window // 2)
            return replace(self, reply_tokens=reply).validated(model, default_reply_tokens)
        if self.deadline <= 0:
            raise InvalidInputError(f"reranker deadline must be positive, got {self.deadline}")
        if self.concurrency < 1:
            raise InvalidInputError(f"reranker concurrency must be at least 1, got {self.concurrency}")
        if not 0 < self.reply_tokens < model.context_window:
            raise InvalidInputError(
                f"reply_tokens ({self.reply_tokens}) must be positive and below the model's context window "
                f"({model.context_window})"
            )
        return self


class Deadline:
    def __init__(self, seconds: float) -> None:
        self._ends = time.monotonic() + seconds

    def remaining(self) -> float:
        return self._ends - time.monotonic()

    @property
    def passed(self) -> bool:
        return self.remaining() <= 0


class UsageMeter:
    """Thread-safe counters reported as `RerankOutcome.usage`.

    prompts / prompt_tokens / completion_tokens (the adapter's counts, or estimates when it reports none),
    fallback_<level> (prompts that needed a context-overflow fallback: Table 7's incidents), unparsed (replies
    that could not be used), and whatever a reranker adds (pairwise: rounds).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[str, int] = {"prompts": 0, "prompt_tokens": 0, "completion_tokens": 0}

    def add(self, key: str, amount: int = 1) -> None:
        with self._lock:
            self._counts[key] = self._counts.get(key, 0) + amount

    def level(self, level: Level) -> None:
        if level != "full":
            self.add(f"fallback_{level}")

    def as_dict(self) -> dict[str, int]:
        with self._lock:
            return dict(self._counts)


class LlmBase:
    """Constructor and prompt plumbing shared by the pointwise, listwise and pairwise rerankers."""

    default_reply_tokens = DEFAULT_REPLY_TOKENS

    def __init__(
        self,
        stores: IndexStores,
        model: ChatModel,
        settings: LlmRerankSettings | None = None,
        *,
        describer: NodeDescriber | None = None,
    ) -> None:
        self._model = model
        self._settings = (settings or LlmRerankSettings()).validated(model, self.default_reply_tokens)
        self._describer = describer or NodeDescriber(stores.nodes, stores.graph)

    @property
    def reply_tokens(self) -> int:
        assert self._settings.reply_tokens is not None  # resolved by validated()
        return self._settings.reply_tokens

    @property
    def prompt_budget(self) -> int:
        """Tokens a prompt may take: the context window minus the reply reserve."""
        return self._model.context_window - self.reply_tokens

    def ask(self, prompt: str, deadline: Deadline, meter: UsageMeter) -> str:
        """One completion; raises LlmError when the deadline has passed or the backend fails."""
        remaining = deadline.remaining()
        if remaining <= 0:
            raise LlmError(DEADLINE_NOTE)
        meter.add("prompts")
        reply = self._model.chat(
            [ChatMessage("user", prompt)],
            max_tokens=self.reply_tokens,
            temperature=0.0,
            timeout=remaining,
        )
        content = reply.content or ""
        meter.add("prompt_tokens", reply.prompt_tokens or estimate_tokens(prompt))
        meter.add("completion_tokens", reply.completion_tokens or estimate_tokens(content))
        return content

    def fan_out(self, jobs: Sequence[Callable[[], T]], deadline: Deadline) -> tuple[list[Done[T] | None], str]:
        """Run jobs with at most `concurrency` in flight; see `run_bounded`."""
        return run_bounded(jobs, self._settings.concurrency, deadline)


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
