"""Slow: the scale machinery on a 150k-node synthetic SKB (≈ 3M edges) in a few minutes — canonical edges on the
fast reader, precomputed vectors, the ANN adapter with a recall floor on real question vectors, the memory report
of ingest, and af answering through all of it. bench/scale.py runs the same path at 1M and 2M nodes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from skbqa.engine.embedded import EmbeddedEngine
from skbqa.eval.runner import evaluate_strategy
from skbqa.ingest.builder import ingest
from skbqa.ingest.precomputed import open_precomputed, write_precomputed
from skbqa.skb.fast_edges import read_canonical_edges
from skbqa.skb.qa import load_qa
from skbqa.stores.vectors.ann import AnnIndex
from skbqa.synth.generator import generate

pytestmark = pytest.mark.slow

NODES = 150_000
RECALL_FLOOR = 0.85  # recall@20 of the IVF search (default nprobe) against the exact scan, question vectors
INGEST_RSS_BUDGET_MIB = 3 * 1024  # measured ≈ 0.8 GiB; a regression to per-node Python objects would blow it


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("scale")
    bundle = root / "bundle"
    stats = generate(bundle, nodes=NODES, seed=5, questions=60, edges_per_node=40)
    assert stats.edges > 2_500_000  # ≈ 20 edges per node
    write_precomputed(bundle)
    vectors = open_precomputed(bundle)
    ingest(bundle, root / "index", vectors.encoder, progress=False, precomputed=vectors, ann="always")
    return bundle, root / "index"


def test_edges_take_the_fast_reader(index: tuple[Path, Path]) -> None:
    bundle, _ = index
    names = [e["name"] for e in json.loads((bundle / "schema.json").read_text())["edge_types"]]
    assert read_canonical_edges(bundle / "edges.jsonl.gz", list(dict.fromkeys(names))) is not None


def test_ingest_reports_memory_and_uses_the_precomputed_vectors(index: tuple[Path, Path]) -> None:
    _, directory = index
    manifest = json.loads((directory / "manifest.json").read_text())
    assert manifest["counts"]["nodes"] == NODES and manifest["counts"]["texts_encoded"] == 0
    assert 0 < manifest["peak_rss_mib"] < INGEST_RSS_BUDGET_MIB
    assert set(manifest["disk_bytes"]) >= {"bm25", "graph", "nodes", "vectors"}
    sets = manifest["vectors"]["sets"]
    assert all(s["index"] == "ann" and s["self_recall@20"] > 0.5 for s in sets.values())
    assert sets["relations"]["partitions"]["0"]["kind"] == "ivf"  # papers: an inverted file


def test_ann_recall_floor_on_question_vectors(index: tuple[Path, Path]) -> None:
    bundle, directory = index
    engine = EmbeddedEngine.open(directory)
    ann = engine.stores.vectors["relations"]
    assert isinstance(ann, AnnIndex)
    queries = engine.encoder.encode([item.question for item in load_qa(bundle / "qa.jsonl")])
    keys = ann._sorted_keys
    scores = queries @ ann.vectors_for(keys).T  # exact scan over every stored vector
    truth = [set(keys[np.argsort(-row)[:20]].tolist()) for row in scores]
    found = ann.search(queries, 20)
    recall = np.mean([len(set(h.keys.tolist()) & t) / 20 for h, t in zip(found, truth, strict=True)])
    assert recall >= RECALL_FLOOR
    ann.nprobe = 1  # one list per query: recall must drop, or the IVF path is not being exercised
    low = np.mean(
        [len(set(h.keys.tolist()) & t) / 20 for h, t in zip(ann.search(queries, 20), truth, strict=True)]
    )
    assert low < recall


def test_af_answers_through_the_scale_path(index: tuple[Path, Path]) -> None:
    bundle, directory = index
    engine = EmbeddedEngine.open(directory).warm("af")
    items = load_qa(bundle / "qa.jsonl")
    af = evaluate_strategy(engine, items, "af", depth=20)
    vss = evaluate_strategy(engine, items, "vss", depth=20)
    assert af.metrics["hit@1"] >= 90.0
    assert af.metrics["recall@20"] > vss.metrics["recall@20"]
