from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from skbqa.common.errors import InvalidInputError
from skbqa.engine.answers import MAX_QUESTION_CHARS, clean_question
from skbqa.engine.embedded import EmbeddedEngine
from skbqa.ingest.builder import ingest
from skbqa.stages.ranking.fusion import min_max
from skbqa.stores.index import open_index
from tests.helpers import HashingEncoder


@pytest.fixture
def engine(tiny_bundle: Path, tmp_path: Path, hashing_encoder: HashingEncoder) -> EmbeddedEngine:
    ingest(tiny_bundle, tmp_path / "index", hashing_encoder, progress=False)
    return EmbeddedEngine(open_index(tmp_path / "index"), hashing_encoder)


def test_clean_question_normalises_and_refuses_bad_input() -> None:
    assert clean_question("  which\tpapers\x00 cite\n  it? ") == "which papers cite it?"
    for bad in ("", "   ", "\x00\x01", None, 42):
        with pytest.raises(InvalidInputError):
            clean_question(bad)
    with pytest.raises(InvalidInputError, match="limit"):
        clean_question("x" * (MAX_QUESTION_CHARS + 1))


@pytest.mark.parametrize("strategy", ["bm25", "vss", "hybrid"])
def test_every_strategy_answers_with_names_types_and_reasons(engine: EmbeddedEngine, strategy: str) -> None:
    result = engine.ask("retrieval over knowledge bases", strategy=strategy, k=3)
    found = {i.node_id: i for i in result.items}
    assert 11 in found  # the paper itself; vss may put its author first (its relation document names the paper)
    assert found[11].name == "Retrieval over knowledge bases" and found[11].type == "paper"
    assert all(i.why for i in result.items)
    assert [i.rank for i in result.items] == list(range(1, len(result.items) + 1))
    assert result.timings_ms["total"] >= 0 and len(result.items) <= 3


def test_question_embedding_is_computed_once_per_request(engine: EmbeddedEngine) -> None:
    encoder = engine.encoder
    assert isinstance(encoder, HashingEncoder)
    before = encoder.calls
    engine.ask("protein structure attention", strategy="hybrid", k=5)
    assert encoder.calls == before + 1


def test_bad_strategy_and_k_are_refused(engine: EmbeddedEngine) -> None:
    with pytest.raises(InvalidInputError, match="unknown strategy"):
        engine.ask("x", strategy="magic")
    for k in (0, -1, 10_000, True):
        with pytest.raises(InvalidInputError, match="k must be"):
            engine.ask("x", strategy="bm25", k=k)  # type: ignore[arg-type]


def test_hybrid_scores_combine_both_signals(engine: EmbeddedEngine) -> None:
    result = engine.ask("attention protein", strategy="hybrid", k=7)
    fused = [i.scores["fused"] for i in result.items]
    assert fused == sorted(fused, reverse=True)
    top = result.items[0]
    assert top.node_id == 12 and top.scores["bm25"] > 0 and top.scores["cosine"] > 0


def test_min_max_handles_constant_input() -> None:
    assert min_max(np.array([2.0, 2.0])).tolist() == [1.0, 1.0]
    assert min_max(np.array([0.0, 0.0])).tolist() == [0.0, 0.0]
    assert min_max(np.array([1.0, 3.0])).tolist() == [0.0, 1.0]
