"""Slow suites (CI runs them with `-m slow`): larger generated SKBs through the real load, ingest and eval paths."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from skbqa.engine.embedded import EmbeddedEngine
from skbqa.eval.runner import evaluate_strategy
from skbqa.ingest.builder import ingest
from skbqa.skb.bundle import load_bundle
from skbqa.skb.qa import load_qa
from skbqa.stores.graph.csr import CsrGraph
from skbqa.stores.index import open_index
from skbqa.synth.generator import generate
from tests.helpers import HashingEncoder

pytestmark = pytest.mark.slow


def test_200k_node_bundle_loads_into_csr_that_agrees_with_the_edge_list(tmp_path: Path) -> None:
    generate(tmp_path / "b", nodes=200_000, seed=1, questions=50)
    skb = load_bundle(tmp_path / "b")
    assert skb.num_nodes == 200_000 and skb.num_edges > 1_500_000
    graph = CsrGraph.build(skb.num_nodes, skb.schema.edge_names, skb.edge_src, skb.edge_dst, skb.edge_type)
    rng = np.random.default_rng(0)
    sample = rng.choice(skb.num_edges, 2_000, replace=False)
    for i in sample[:200]:
        edge = skb.schema.edge_names[int(skb.edge_type[i])]
        assert int(skb.edge_dst[i]) in graph.neighbours(np.array([skb.edge_src[i]]), edge, "out")
        assert int(skb.edge_src[i]) in graph.neighbours(np.array([skb.edge_dst[i]]), edge, "in")
    per_type = np.bincount(skb.edge_type, minlength=len(skb.schema.edge_names))
    for code, name in enumerate(skb.schema.edge_names):
        assert graph.degree(np.arange(skb.num_nodes), name, "out").sum() == per_type[code]


def test_50k_node_ingest_and_eval_with_every_strategy(tmp_path: Path) -> None:
    generate(tmp_path / "b", nodes=50_000, seed=2, questions=40)
    report = ingest(tmp_path / "b", tmp_path / "idx", HashingEncoder(dim=128), progress=False)
    assert report.nodes == 50_000
    engine = EmbeddedEngine(open_index(tmp_path / "idx"), HashingEncoder(dim=128))
    items = load_qa(tmp_path / "b" / "qa.jsonl")
    results = {s: evaluate_strategy(engine, items, s) for s in ("bm25", "vss", "hybrid")}
    assert all(r.n == len(items) for r in results.values())
    # The questions are relational ("papers written by <author>"): only documents *with relations* name the
    # constants, so the dense strategies over relation documents must find answers that BM25 cannot.
    assert results["vss"].metrics["hit@20"] > results["bm25"].metrics["hit@20"]
    assert results["hybrid"].metrics["hit@20"] > 0


def test_real_encoder_ingest_of_a_5k_node_bundle(tmp_path: Path, onnx_encoder) -> None:
    generate(tmp_path / "b", nodes=5_000, seed=3, questions=30)
    report = ingest(tmp_path / "b", tmp_path / "idx", onnx_encoder, progress=False)
    assert report.texts_encoded == 15_000
    engine = EmbeddedEngine.open(tmp_path / "idx")
    items = load_qa(tmp_path / "b" / "qa.jsonl")
    vss = evaluate_strategy(engine, items, "vss")
    bm25 = evaluate_strategy(engine, items, "bm25")
    assert vss.n == bm25.n == 30
    assert vss.metrics["recall@20"] > 0 and bm25.metrics["recall@20"] > 0
