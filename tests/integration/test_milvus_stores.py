"""An index's vectors served from Milvus Lite give the same answers as the in-process exact index.

The biomed sample (3,043 nodes, three embedding sets) is loaded once per module into a Milvus Lite directory;
an `EmbeddedEngine` over `with_milvus_vectors(stores, uri)` then answers the sample's QA questions with `vss`,
`hybrid` and `af`, and every top-10 must match the exact engine's.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from skbqa.common.errors import BackendUnavailableError, IndexStoreError
from skbqa.engine.answers import AnswerItem
from skbqa.engine.embedded import EmbeddedEngine
from skbqa.stores.index import EMBEDDING_SETS, read_manifest
from skbqa.stores.vectors.milvus_catalog import AUTO_FLAT_MAX_ROWS, choose_index_type, collection_name
from skbqa.stores.vectors.milvus_sets import load_vectors_into_milvus, open_milvus_vector_sets, with_milvus_vectors
from tests.conftest import SAMPLE_BUNDLE

pytestmark = pytest.mark.milvus

K = 10
SCORE_ATOL = 1e-6


@dataclass
class Loaded:
    index_dir: Path
    uri: str
    report: dict[str, dict[str, Any]]
    exact: EmbeddedEngine
    milvus: EmbeddedEngine


@pytest.fixture(scope="module")
def loaded(biomed_sample_engine: EmbeddedEngine, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Loaded]:
    pytest.importorskip("pymilvus")
    pytest.importorskip("milvus_lite")
    index_dir = biomed_sample_engine.stores.directory
    uri = str(tmp_path_factory.mktemp("milvus-stores") / "lite.db")
    report = load_vectors_into_milvus(index_dir, uri)
    stores = with_milvus_vectors(biomed_sample_engine.stores, uri)
    yield Loaded(
        index_dir, uri, report, biomed_sample_engine, EmbeddedEngine(stores, biomed_sample_engine.encoder)
    )
    for index in stores.vectors.values():
        index.close()


def _questions() -> list[str]:
    with (SAMPLE_BUNDLE / "qa.jsonl").open(encoding="utf-8") as handle:
        return [json.loads(line)["question"] for line in handle if line.strip()]


def test_load_report(loaded: Loaded) -> None:
    nodes = read_manifest(loaded.index_dir)["counts"]["nodes"]
    assert set(loaded.report) == set(EMBEDDING_SETS)
    for entry in loaded.report.values():
        assert entry["rows"] == entry["inserted"] == nodes
        assert entry["index_type"] == "FLAT"  # 3,043 rows: far below the AUTO threshold
        assert entry["seconds"] > 0


def test_the_engine_really_reads_milvus(loaded: Loaded) -> None:
    from skbqa.stores.vectors.milvus import MilvusIndex

    for name in EMBEDDING_SETS:
        assert isinstance(loaded.milvus.stores.vectors[name], MilvusIndex), name
        assert type(loaded.exact.stores.vectors[name]).__name__ == "ExactIndex"  # replace() left it alone


def _assert_same_ranking(exact: list[AnswerItem], milvus: list[AnswerItem], label: str) -> None:
    """Same node ids in the same order; only nodes with equal scores may swap places.

    Milvus FLAT computes the same float32 inner products as ExactIndex (measured: bit-identical scores on this
    sample) and both break ties by key, so no wider relaxation is needed; a tolerance of 1e-6 absorbs a BLAS
    summing in a different order."""
    assert len(exact) == len(milvus), label
    exact_scores = np.array([i.score for i in exact])
    np.testing.assert_allclose([i.score for i in milvus], exact_scores, atol=SCORE_ATOL, err_msg=label)
    for rank, (e, m) in enumerate(zip(exact, milvus, strict=True)):
        if e.node_id != m.node_id:
            tied = np.abs(exact_scores - e.score) <= SCORE_ATOL
            tied_ids = {exact[i].node_id for i in np.flatnonzero(tied)}
            assert m.node_id in tied_ids, f"{label}: rank {rank + 1} {m.node_id} != {e.node_id}, not a tie"


@pytest.mark.parametrize("strategy", ["vss", "hybrid", "af"])
def test_same_top_k_as_the_exact_index(loaded: Loaded, strategy: str) -> None:
    questions = _questions()
    assert len(questions) >= 10
    for question in questions:
        exact = loaded.exact.ask(question, strategy=strategy, k=K).items
        milvus = loaded.milvus.ask(question, strategy=strategy, k=K).items
        assert exact, f"{strategy}: no answer for {question!r}"
        _assert_same_ranking(exact, milvus, f"{strategy}: {question!r}")


def test_adapter_methods_match_the_exact_index(loaded: Loaded) -> None:
    """What the strategies call on a vector set: len, dim, vectors_for, search with type and key filters (both the
    re-scoring path for ≤ 256 keys and the chunked filtered search beyond)."""
    rng = np.random.default_rng(3)
    types = loaded.exact.stores.nodes.types
    queries = loaded.exact.encoder.encode(["methylation of genes on chromosome 8", "preeclampsia"])
    for name in EMBEDDING_SETS:
        exact, milvus = loaded.exact.stores.vectors[name], loaded.milvus.stores.vectors[name]
        assert len(milvus) == len(exact) and milvus.dim == exact.dim
        some = rng.choice(len(exact), 40, replace=False)
        np.testing.assert_array_equal(milvus.vectors_for(some), exact.vectors_for(some))
        for filters in (
            {},
            {"node_types": [int(types[0])]},
            {"keys": some},
            {"keys": np.arange(0, len(exact), 3), "node_types": [1, 3]},  # ~1,000 keys: the chunked path
        ):
            for e, m in zip(
                exact.search(queries, K, **filters), milvus.search(queries, K, **filters), strict=True
            ):
                np.testing.assert_array_equal(m.keys, e.keys, err_msg=f"{name} {list(filters)}")
                np.testing.assert_allclose(m.scores, e.scores, atol=SCORE_ATOL)


def test_reload_is_a_no_op(loaded: Loaded) -> None:
    again = load_vectors_into_milvus(loaded.index_dir, loaded.uri)
    for name, entry in again.items():
        assert entry["inserted"] == 0, name
        assert entry["collection"] == loaded.report[name]["collection"]
        assert len(loaded.milvus.stores.vectors[name]) == entry["rows"]


def test_reload_with_another_index_type_is_refused(loaded: Loaded) -> None:
    with pytest.raises(IndexStoreError, match="indexed FLAT, not HNSW"):
        load_vectors_into_milvus(loaded.index_dir, loaded.uri, sets=["name"], index_type="HNSW")


def test_partial_collection_is_a_clear_mismatch(loaded: Loaded) -> None:
    """A collection under the set's name with the wrong row count (an interrupted load) is neither reused nor
    topped up, when loading or when opening."""
    from skbqa.stores.vectors.milvus import MilvusIndex

    manifest = read_manifest(loaded.index_dir)
    name = collection_name(manifest, "name", "partial")
    partial = MilvusIndex(loaded.uri, name, manifest["encoder"]["dim"])
    partial.add(np.arange(3), loaded.exact.stores.vectors["name"].vectors_for(np.arange(3)), np.zeros(3, np.int16))
    partial.close()
    with pytest.raises(IndexStoreError, match=r"holds 3 rows, the index has 3043.*drop"):
        load_vectors_into_milvus(loaded.index_dir, loaded.uri, sets=["name"], collection_prefix="partial")
    with pytest.raises(IndexStoreError, match="holds 3 rows, the index manifest 3043"):
        open_milvus_vector_sets(loaded.index_dir, loaded.uri, sets=["name"], collection_prefix="partial")


def test_opening_sets_that_were_never_loaded(loaded: Loaded) -> None:
    with pytest.raises(IndexStoreError, match="load them first with load_vectors_into_milvus"):
        open_milvus_vector_sets(loaded.index_dir, loaded.uri, collection_prefix="never")


def test_missing_pymilvus_says_how_to_install(
    biomed_sample_engine: EmbeddedEngine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "pymilvus", None)  # makes `import pymilvus` raise ImportError
    uri = str(tmp_path / "never.db")
    with pytest.raises(BackendUnavailableError, match=r"pip install skbqa\[milvus\]"):
        load_vectors_into_milvus(biomed_sample_engine.stores.directory, uri)
    with pytest.raises(BackendUnavailableError, match=r"pip install skbqa\[milvus\]"):
        with_milvus_vectors(biomed_sample_engine.stores, uri)
    assert not Path(uri).exists()


def test_index_type_choice_and_names() -> None:
    assert choose_index_type(AUTO_FLAT_MAX_ROWS) == "FLAT"
    assert choose_index_type(AUTO_FLAT_MAX_ROWS + 1) == "HNSW"
    assert choose_index_type(10, "ivf_flat") == "IVF_FLAT"
    with pytest.raises(ValueError, match="index_type"):
        choose_index_type(10, "ANNOY")
    manifest = {"schema_name": "bio-med v2", "bundle": {"sha256": "ab"}, "created_unix": 1}
    name = collection_name(manifest, "relations", "9 tenant")
    assert name.startswith("_9_tenant_bio_med_v2_") and name.endswith("_relations")
    assert collection_name({**manifest, "created_unix": 2}, "relations", "9 tenant") != name  # a rebuild
