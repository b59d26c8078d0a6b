"""The real local encoders: ONNX export matches the torch reference; int8 stays close; batching is invisible."""

from __future__ import annotations

import numpy as np
import pytest

from skbqa.common.errors import ModelError
from skbqa.models.local_encoder import DIM, encoder_from_name, load_encoder

SENTENCES = [
    "Which genes are located on chromosome 17?",
    "A disease with short stature and intellectual disability.",
    "mitochondrion inheritance",
    "",
    "The distribution of mitochondria, including the mitochondrial genome, into daughter cells " * 8,
]


@pytest.fixture(scope="module")
def torch_vectors() -> np.ndarray:
    return load_encoder("torch").encode(SENTENCES)


def test_onnx_fp32_matches_sentence_transformers(torch_vectors: np.ndarray) -> None:
    onnx = load_encoder("onnx").encode(SENTENCES)
    assert onnx.shape == (len(SENTENCES), DIM) and onnx.dtype == np.float32
    cosine = (onnx * torch_vectors).sum(axis=1)
    assert cosine.min() > 0.9999


def test_int8_stays_close_and_keeps_neighbours(torch_vectors: np.ndarray, onnx_encoder) -> None:
    int8 = onnx_encoder.encode(SENTENCES)
    assert ((int8 * torch_vectors).sum(axis=1) > 0.8).all()
    # Related sentences stay nearer to each other than unrelated ones.
    sims = int8 @ int8.T
    assert sims[2, 4] > sims[0, 2]


def test_vectors_are_unit_length_and_independent_of_batch_order(onnx_encoder) -> None:
    forward = onnx_encoder.encode(SENTENCES)
    backward = onnx_encoder.encode(SENTENCES[::-1])[::-1]
    np.testing.assert_allclose(forward, backward, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(forward, axis=1), 1.0, atol=1e-5)
    assert onnx_encoder.encode([]).shape == (0, DIM)


def test_names_round_trip_and_unknown_names_are_refused() -> None:
    assert encoder_from_name("all-MiniLM-L6-v2/onnx-int8/max128").name == "all-MiniLM-L6-v2/onnx-int8/max128"
    assert encoder_from_name("all-MiniLM-L6-v2/onnx/max64").name == "all-MiniLM-L6-v2/onnx/max64"
    for bad in ("bert/onnx/max128", "all-MiniLM-L6-v2/gpu/max128", "nonsense"):
        with pytest.raises(ModelError):
            encoder_from_name(bad)
    with pytest.raises(ModelError):
        load_encoder("tensorflow")


def test_chunked_tokenisation_gives_the_same_vectors(onnx_encoder, monkeypatch: pytest.MonkeyPatch) -> None:
    import skbqa.models.local_encoder as module

    fp32 = load_encoder("onnx")
    whole, whole_int8 = fp32.encode(SENTENCES), onnx_encoder.encode(SENTENCES)
    monkeypatch.setattr(module, "TOKENIZE_CHUNK", 2)
    np.testing.assert_allclose(fp32.encode(SENTENCES), whole, atol=1e-5)
    # Dynamic int8 quantisation scales activations per batch, so batch-mates move a vector slightly.
    cosine = (onnx_encoder.encode(SENTENCES) * whole_int8).sum(axis=1)
    assert (cosine[[0, 1, 2, 4]] > 0.99).all() and cosine[3] > 0.95  # [3] is the empty text


def test_a_cold_encoder_called_from_two_threads_loads_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The question's embedding starts on a background thread while the parser encodes its phrases: both first
    calls must get vectors, and the model is loaded once."""
    import threading

    from tokenizers import Tokenizer

    real_from_file = Tokenizer.from_file
    loads: list[str] = []

    def slow_from_file(path: str) -> Tokenizer:
        loads.append(path)
        threading.Event().wait(0.3)  # widen the window in which the other thread arrives
        return real_from_file(path)

    monkeypatch.setattr(Tokenizer, "from_file", staticmethod(slow_from_file))
    encoder = load_encoder("onnx-int8")
    results: dict[int, np.ndarray] = {}
    errors: list[BaseException] = []

    def call(slot: int) -> None:
        try:
            results[slot] = encoder.encode([SENTENCES[slot]])
        except BaseException as error:  # reported by the assertion below
            errors.append(error)

    threads = [threading.Thread(target=call, args=(slot,)) for slot in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors and sorted(results) == [0, 1]
    assert len(loads) == 1
    assert all(vectors.shape == (1, DIM) for vectors in results.values())
