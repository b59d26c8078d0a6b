"""Precomputed vectors (`skbqa synth --vectors`) through ingest and the ANN adapter, on a small synthetic bundle."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from skbqa.cli import main as cli
from skbqa.common.errors import IndexStoreError
from skbqa.engine.embedded import EmbeddedEngine
from skbqa.eval.runner import evaluate_strategy
from skbqa.ingest.builder import ingest
from skbqa.ingest.documents import embedded_texts
from skbqa.ingest.precomputed import open_precomputed, write_precomputed
from skbqa.skb.qa import load_qa
from skbqa.stores.index import load_exact_vectors, open_index
from skbqa.stores.lexicon import LEXICON_FILE
from skbqa.stores.vectors.ann import AnnIndex
from skbqa.synth.generator import generate
from tests.helpers import HashingEncoder


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("synth") / "bundle"
    generate(root, nodes=3000, seed=4, questions=30)
    write_precomputed(root)
    return root


def test_vectors_are_the_static_encoding_of_the_ingest_documents(bundle: Path) -> None:
    vectors = open_precomputed(bundle)
    manifest = vectors.manifest
    assert manifest["rows"] == 3000 and manifest["dtype"] == "float16"
    assert manifest["encoder"]["name"] == vectors.encoder.name
    index = open_index_for(bundle)
    positions = np.array([0, 1500, 2999])
    for name in ("name", "document", "relations"):
        texts = embedded_texts(name, index.nodes, index.graph, positions)
        stored = vectors.array(name)[positions].astype(np.float32)
        np.testing.assert_allclose(stored, vectors.encoder.encode(texts), atol=1e-3)  # float16 rounding only


def open_index_for(bundle: Path):  # type: ignore[no-untyped-def]
    """A quick exact index of the bundle (hashing encoder) to read its node table and graph."""
    target = bundle.parent / "hashing-index"
    if not target.exists():
        ingest(bundle, target, HashingEncoder(), progress=False)
    return open_index(target)


def test_ingest_takes_the_vectors_and_answers_with_their_encoder(bundle: Path, tmp_path: Path) -> None:
    vectors = open_precomputed(bundle)
    report = ingest(bundle, tmp_path / "idx", vectors.encoder, progress=False, precomputed=vectors, ann="always")
    assert report.texts_encoded == 0
    manifest = json.loads((tmp_path / "idx" / "manifest.json").read_text())
    assert manifest["vectors"]["source"] == "precomputed"
    assert manifest["encoder"]["name"] == vectors.encoder.name
    sets = manifest["vectors"]["sets"]
    assert {s["index"] for s in sets.values()} == {"ann"}
    assert all(0.0 < s["self_recall@20"] <= 1.0 for s in sets.values())
    assert (tmp_path / "idx" / "nodes" / LEXICON_FILE).is_file()
    engine = EmbeddedEngine.open(tmp_path / "idx")  # the static encoder is read back from the index
    assert engine.encoder.name == vectors.encoder.name
    assert isinstance(engine.stores.vectors["relations"], AnnIndex)
    stored = engine.stores.vectors["name"].vectors_for(np.array([7]))[0]
    np.testing.assert_array_equal(stored, vectors.array("name")[7].astype(np.float32))  # exact read-back
    items = load_qa(bundle / "qa.jsonl")
    af = evaluate_strategy(engine, items, "af", depth=20)
    assert af.metrics["hit@1"] >= 80.0  # the relational questions are grounded, not guessed
    # The exact fallback reads an ANN-only set back whole (loaders that need a dense copy).
    exact = load_exact_vectors(tmp_path / "idx" / "vectors" / "name")
    assert len(exact) == 3000 and not isinstance(exact, AnnIndex)


def test_vectors_for_other_nodes_or_documents_are_refused(bundle: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(bundle, copy)
    ids = np.load(copy / "vectors" / "ids.npy")
    np.save(copy / "vectors" / "ids.npy", ids[::-1])
    vectors = open_precomputed(copy)
    with pytest.raises(IndexStoreError, match="other nodes"):
        ingest(copy, tmp_path / "idx", vectors.encoder, progress=False, precomputed=vectors)
    np.save(copy / "vectors" / "ids.npy", ids)
    manifest = json.loads((copy / "vectors" / "manifest.json").read_text())
    (copy / "vectors" / "manifest.json").write_text(json.dumps(manifest | {"documents_version": 0}))
    vectors = open_precomputed(copy)
    with pytest.raises(IndexStoreError, match="documents version"):
        ingest(copy, tmp_path / "idx", vectors.encoder, progress=False, precomputed=vectors)
    with pytest.raises(IndexStoreError, match="made by"):
        ingest(copy, tmp_path / "idx", HashingEncoder(), progress=False, precomputed=vectors)
    assert not (tmp_path / "idx").exists()


def test_cli_synth_vectors_then_ingest(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "b"
    assert (
        cli.main(["synth", str(out), "--nodes", "500", "--questions", "5", "--avg-degree", "10", "--vectors"]) == 0
    )
    assert (out / "vectors" / "relations.npy").is_file()
    assert (
        cli.main(["ingest", str(out), "--index", str(tmp_path / "i"), "--precomputed-vectors", "--no-progress"])
        == 0
    )
    manifest = json.loads((tmp_path / "i" / "manifest.json").read_text())
    assert manifest["vectors"]["source"] == "precomputed" and manifest["counts"]["edges"] < 500 * 10
    assert cli.main(["ask", "--index", str(tmp_path / "i"), "Which papers cite nothing?", "--json"]) == 0
    assert "wrote" in capsys.readouterr().out
