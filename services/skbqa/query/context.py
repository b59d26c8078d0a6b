"""The `Strategy` interface every retrieval method implements, and the per-request query context.

A strategy turns a question into a ranked list of candidates, each with where it came from and its scores.
Later stages (AF pipeline, SAGE, GRAPE) add strategies; they all share `QueryContext`, which embeds the
question once and records how long each stage took.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from skbqa.query.encoder import Encoder


@dataclass
class Candidate:
    position: int
    score: float
    source: str  # which retrieval produced it ("bm25", "vss", "hybrid", ...)
    scores: dict[str, float] = field(default_factory=dict)  # component scores, for evidence
    evidence: dict[str, Any] = field(default_factory=dict)


@dataclass
class QueryContext:
    question: str
    encoder: Encoder
    timings: dict[str, float] = field(default_factory=dict)
    # Per-request overrides of a strategy's settings (af: alpha, l_max, strict, reranker, steps); validated by
    # the strategy that reads them.
    options: dict[str, Any] = field(default_factory=dict)
    # What a strategy wants to report beside its candidates (the af strategy's parsed query and scope).
    notes: dict[str, Any] = field(default_factory=dict)
    _embedding: np.ndarray | None = None
    # The question's embedding while `encode_ahead` computes it in the background (resolved on first use).
    _pending: Future[np.ndarray] | None = None

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            self.timings[name] = self.timings.get(name, 0.0) + (time.perf_counter() - started)

    def encode_with_question(self, texts: list[str]) -> np.ndarray:
        """Embeddings of `texts`, after the question's own (computed once, always alone).

        The question is not batched with the texts: the int8 encoder quantises activations with one scale per
        batch, so a text's vector depends slightly on its batch mates, and the question must embed the same
        whichever strategy or step embeds it first (sage embeds it alone before af runs). When `encode_ahead`
        has the question under way, the texts go out meanwhile: two calls, one round trip of waiting."""
        if not texts:
            return np.zeros((0, 0), np.float32)
        if self._pending is None:
            self.embedding  # noqa: B018 - computed (alone) now if no step did yet
        with self.stage("encode"):
            vectors = self.encoder.encode(texts)
        self.embedding  # noqa: B018 - the question's call, in flight while the texts were encoded
        return vectors

    def encode_ahead(self) -> None:
        """Start the question's embedding in the background unless it is known or under way.

        The distributed parser calls this first: with a remote encoder (Triton) the question's round trip then
        overlaps the parse itself and the phrase batch of `encode_with_question`, instead of adding to them. The
        question still goes alone (its own `encode` call), so its vector is the one a sequential call gives."""
        if self._embedding is None and self._pending is None:
            self._pending = _background().submit(self.encoder.encode, [self.question])

    @property
    def embedding_if_computed(self) -> np.ndarray | None:
        """The question's embedding when some step computed it or started it (`encode_ahead`, then waited for):
        the distributed stages pass it on so that no later stage encodes the question again."""
        return self.embedding if self._pending is not None else self._embedding

    def reuse_embedding(self, vector: np.ndarray | None) -> None:
        """Adopt an embedding computed by an earlier stage of the same request (same question, same encoder)."""
        self._embedding = vector

    @property
    def embedding(self) -> np.ndarray:
        """The question's embedding, computed once per request and reused by every step."""
        if self._embedding is None:
            with self.stage("encode"):  # after `encode_ahead`: the time left waiting for it
                if self._pending is not None:
                    self._embedding = self._pending.result()[0]
                else:
                    self._embedding = self.encoder.encode([self.question])[0]
        return self._embedding


_POOL_LOCK = threading.Lock()
_POOL: list[ThreadPoolExecutor] = []


def _background() -> ThreadPoolExecutor:
    """One small pool per process for `encode_ahead`: its threads only wait on the encoder (a remote round trip
    or an ONNX run that releases the GIL), so a few serve every concurrent request without growing per call."""
    with _POOL_LOCK:
        if not _POOL:
            _POOL.append(ThreadPoolExecutor(max_workers=4, thread_name_prefix="skbqa-encode-ahead"))
        return _POOL[0]


class Strategy(Protocol):
    name: str

    def retrieve(self, query: QueryContext, k: int) -> list[Candidate]:
        """The top-k candidates, best first."""
        ...
