"""The static encoder distilled from MiniLM (precomputed vectors for scale runs)."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest

from skbqa.common.errors import ModelError
from skbqa.models.index_encoder import encoder_for_index, save_index_encoder
from skbqa.models.static_encoder import StaticEncoder
from skbqa.query.encoder import Encoder

SAMPLE = [
    "paper: Bratikon: Quantum Lattice for Plasma. A 2019 paper in English.",
    "author: Drevalia Stomuski. Relations: writes: Bratikon: Quantum Lattice for Plasma",
    "field: Applied Entropy. We study entropy in relation to plasma.",
    "gene: BRCA1 (17q21.31) — DNA_repair; café naïve x→y",
    "Hello,   World!! (x=1; y_2) [a] {b} ~`  \t tabs\nand lines",
    "",
    "   ",
    "a" * 400,
    "word " * 300,
]


@pytest.fixture(scope="module")
def encoder() -> StaticEncoder:
    return StaticEncoder.fit(SAMPLE * 3)


def test_reads_exactly_the_tokens_minilm_reads(encoder: StaticEncoder) -> None:
    """The per-word cache must reproduce the tokenizer, truncation included, for plain and non-ASCII texts."""
    lengths, ids = encoder.token_ids(SAMPLE)
    encodings = encoder._tok.encode_batch(SAMPLE, add_special_tokens=False)
    assert lengths.tolist() == [len(e.ids) for e in encodings]
    assert ids.tolist() == list(itertools.chain.from_iterable(e.ids for e in encodings))
    assert lengths.max() == 126  # MiniLM's 128 tokens minus [CLS] and [SEP]
    again, _ = encoder.token_ids(SAMPLE)  # now from the cache
    assert again.tolist() == lengths.tolist()


def test_unit_vectors_deterministic_and_meaningful(encoder: StaticEncoder) -> None:
    assert isinstance(encoder, Encoder)
    vectors = encoder.encode(SAMPLE)
    assert vectors.shape == (len(SAMPLE), 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    np.testing.assert_array_equal(encoder.encode(SAMPLE[:3]), vectors[:3])  # batch-independent
    np.testing.assert_array_equal(vectors[5], vectors[6])  # no token: the empty text's vector
    query, near, far = encoder.encode(["plasma physics lattice", "Quantum Lattice for Plasma", "dairy livestock"])
    assert query @ near > query @ far  # MiniLM's token meanings carry over
    assert StaticEncoder.fit(SAMPLE * 3).name == encoder.name  # same fit, same name


def test_saved_with_the_index_and_checked(encoder: StaticEncoder, tmp_path: Path) -> None:
    save_index_encoder(encoder, tmp_path)
    loaded = encoder_for_index(tmp_path, encoder.name)
    np.testing.assert_array_equal(loaded.encode(SAMPLE[:2]), encoder.encode(SAMPLE[:2]))
    with pytest.raises(ModelError, match="manifest says"):
        encoder_for_index(tmp_path, encoder.name[:-1] + "x")
    (tmp_path / "broken.npz").write_bytes(b"not a file")
    with pytest.raises(ModelError, match="not a static encoder"):
        StaticEncoder.load(tmp_path / "broken.npz")
