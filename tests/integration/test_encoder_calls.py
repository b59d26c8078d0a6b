"""Encoder calls per `af` request through the distributed code path (`--role all`, in-memory bus, the real stage
cores over the biomed sample) with a counting encoder in the encoder's place (Triton's port): the question is
encoded once per request, by the parser, ahead of the parse (`ParseStage.encode_ahead`); no later stage encodes it
again; a stage thread waits on at most one encoder call per request; no call more than the sequential path made;
and the answers are the embedded engine's with and without encoding ahead. The same counts against a real Triton
server, with latencies: bench/triton_calls.py (docs/triton.md)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pytest

from skbqa.query.encoder import Encoder
from skbqa.serving import runtime as serving_runtime
from skbqa.serving.stages.parser import ParseStage
from skbqa.v1 import api_pb2, api_pb2_grpc
from tests.conftest import SAMPLE_BUNDLE
from tests.fakes.pipeline import serve_all_in_one

QUESTIONS = [json.loads(line)["question"] for line in (SAMPLE_BUNDLE / "qa.jsonl").read_text().splitlines()]
K = 20
AHEAD = "ahead"


class CountingEncoder:
    """The index's encoder, recording every call as (who, texts): `ahead` for QueryContext's background pool,
    else the stage whose worker thread (`skbqa-<role>-worker`) made it."""

    def __init__(self, inner: Encoder) -> None:
        self.inner = inner
        self.name, self.dim = inner.name, inner.dim
        self.calls: list[tuple[str, tuple[str, ...]]] = []
        self.lock = threading.Lock()

    def encode(self, texts: Sequence[str], *, progress: str | None = None) -> np.ndarray:
        thread = threading.current_thread().name
        who = AHEAD if thread.startswith("skbqa-encode-ahead") else thread.removeprefix("skbqa-").split("-")[0]
        with self.lock:
            self.calls.append((who, tuple(texts)))
        return self.inner.encode(texts, progress=progress)


@pytest.fixture(scope="module")
def counted(biomed_sample_engine) -> Iterator[tuple[api_pb2_grpc.SkbqaStub, CountingEncoder]]:
    encoder = CountingEncoder(biomed_sample_engine.encoder)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(serving_runtime, "build_encoder", lambda settings, stores: encoder)
        for stub in serve_all_in_one(biomed_sample_engine.stores.directory, "encoder-calls-test"):
            yield stub, encoder


def _ask(stub: Any, encoder: CountingEncoder, question: str, ahead: bool) -> tuple[list[int], list[Any]]:
    ParseStage.encode_ahead = ahead
    try:
        start = len(encoder.calls)
        reply = stub.Ask(api_pb2.AskRequest(question=question, strategy="af", k=K), timeout=60)
        # the parser waits for its question call before forwarding: every call of this request is recorded
        return [item.node_id for item in reply.items], encoder.calls[start:]
    finally:
        ParseStage.encode_ahead = True


def test_calls_per_request_are_bounded_and_answers_unchanged(counted, biomed_sample_engine) -> None:
    stub, encoder = counted
    totals = {False: 0, True: 0}
    waited = {False: 0, True: 0}
    for question in QUESTIONS:
        expected = [item.node_id for item in biomed_sample_engine.ask(question, strategy="af", k=K).items]
        for ahead in (False, True):
            ids, calls = _ask(stub, encoder, question, ahead)
            assert ids == expected, (ahead, question)
            totals[ahead] += len(calls)
            waited[ahead] += sum(who != AHEAD for who, _ in calls)
            question_calls = [who for who, texts in calls if texts == (question,)]
            assert len(question_calls) == 1, (ahead, question, calls)  # once per request, never re-encoded
            assert len(calls) <= 2, (ahead, question, calls)
            if ahead:
                assert question_calls == [AHEAD], (question, calls)
                # what a stage waits on in sequence: the phrases (parser) or unstored names (symbols), at most one
                assert sum(who != AHEAD for who, _ in calls) <= 1, (question, calls)
                assert {who for who, _ in calls} <= {AHEAD, "parser", "symbols"}, (question, calls)
    assert totals[True] == totals[False]  # no extra call: the question's call moved off the critical path
    assert waited[True] == waited[False] - len(QUESTIONS)
