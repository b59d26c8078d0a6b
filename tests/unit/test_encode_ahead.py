"""`QueryContext.encode_ahead`: the question's embedding computed in the background, alone (its own `encode`
call, so the numbers a sequential call gives), overlapping the caller's work and `encode_with_question`'s phrase
batch; without it, the previous sequential order. Through the stages: tests/integration/test_encoder_calls.py."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np
import pytest

from skbqa.common.errors import BackendUnavailableError
from skbqa.query.context import QueryContext

DIM = 4


class RecordingEncoder:
    """Vectors derived from the text alone; records each call's texts and thread. `gate`: the question's call
    waits until another call arrives, which only happens if the two are in flight at once."""

    name = "fake/recording"
    dim = DIM

    def __init__(self, question: str = "", gate: bool = False, fail: bool = False) -> None:
        self.calls: list[tuple[tuple[str, ...], str]] = []
        self.question = question
        self.gate = gate
        self.fail = fail
        self.other_call = threading.Event()

    def encode(self, texts: Sequence[str], *, progress: str | None = None) -> np.ndarray:
        self.calls.append((tuple(texts), threading.current_thread().name))
        if list(texts) == [self.question]:
            if self.fail:
                raise BackendUnavailableError("encoder down")
            if self.gate:
                assert self.other_call.wait(5), "the phrases were not sent while the question was in flight"
        else:
            self.other_call.set()
        return np.array([[len(t), t.count(" "), ord(t[0]), 1.0] for t in texts], np.float32)


QUESTION = "which genes are related to asthma"
PHRASES = ["related to", "genes"]


def test_ahead_and_phrases_are_in_flight_together_with_the_same_vectors() -> None:
    sequential = RecordingEncoder(QUESTION)
    plain = QueryContext(QUESTION, sequential)
    expected = plain.encode_with_question(PHRASES)
    assert [texts for texts, _ in sequential.calls] == [(QUESTION,), tuple(PHRASES)]

    overlapped = RecordingEncoder(QUESTION, gate=True)
    query = QueryContext(QUESTION, overlapped)
    query.encode_ahead()
    got = query.encode_with_question(PHRASES)
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(query.embedding, plain.embedding)
    # two calls, each as a sequential one would make it: the question alone, the phrases as one batch
    assert sorted(texts for texts, _ in overlapped.calls) == sorted([(QUESTION,), tuple(PHRASES)])
    threads = dict((texts, thread) for texts, thread in overlapped.calls)
    assert threads[(QUESTION,)].startswith("skbqa-encode-ahead")
    assert threads[tuple(PHRASES)] == threading.current_thread().name
    assert query.timings["encode"] > 0


def test_ahead_is_started_once_and_carried_on() -> None:
    encoder = RecordingEncoder(QUESTION)
    query = QueryContext(QUESTION, encoder)
    query.encode_ahead()
    query.encode_ahead()
    carried = query.embedding_if_computed  # waits for the call under way: the next stage must not encode again
    assert carried is not None and len(encoder.calls) == 1
    assert query.embedding is carried and len(encoder.calls) == 1

    later = QueryContext(QUESTION, encoder)
    later.reuse_embedding(carried)
    later.encode_ahead()  # known already: no call
    later.encode_with_question(PHRASES)
    assert [texts for texts, _ in encoder.calls] == [(QUESTION,), tuple(PHRASES)]


def test_without_ahead_nothing_runs_in_the_background() -> None:
    encoder = RecordingEncoder(QUESTION)
    query = QueryContext(QUESTION, encoder)
    assert query.embedding_if_computed is None and not encoder.calls
    query.encode_with_question(PHRASES)
    assert [thread for _, thread in encoder.calls] == [threading.current_thread().name] * 2


def test_a_failed_ahead_call_raises_where_the_embedding_is_used() -> None:
    query = QueryContext(QUESTION, RecordingEncoder(QUESTION, fail=True))
    query.encode_ahead()  # does not raise: nothing is waited for yet
    with pytest.raises(BackendUnavailableError, match="encoder down"):
        query.encode_with_question(PHRASES)
    with pytest.raises(BackendUnavailableError):
        query.embedding_if_computed  # noqa: B018
