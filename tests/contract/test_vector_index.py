"""The `VectorIndex` contract: every adapter must pass this one suite.

Adapters: `ExactIndex` (float32, float16), `AnnIndex` (faiss, float16: flat partitions, and inverted files probed
exhaustively so the IVF code path must give exact answers) and `MilvusIndex` on Milvus Lite (FLAT). The Milvus cases share one
Milvus Lite directory per module (startup cost) with a fresh collection per test, and are skipped only when
pymilvus / milvus-lite are not importable. An HNSW smoke test checks recall against the exact index.

Ranking data is built so the order is unambiguous for every adapter: the queries are basis vectors, so a score
is one stored coordinate, and those coordinates are distinct and 0.009 apart (float16 rounding is monotonic,
so it cannot swap them).
"""

from __future__ import annotations

import importlib
import itertools
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from skbqa.common.errors import BackendUnavailableError, IndexStoreError
from skbqa.stores.vectors.base import Hits, VectorIndex
from skbqa.stores.vectors.exact import ExactIndex


def _importable(*modules: str) -> bool:
    try:
        for module in modules:
            importlib.import_module(module)
    except ImportError:
        return False
    return True


HAVE_MILVUS = _importable("pymilvus", "milvus_lite")
HAVE_FAISS = _importable("faiss")
needs_faiss = pytest.mark.skipif(not HAVE_FAISS, reason="faiss not installed (pip install faiss-cpu)")
skip_without_milvus = pytest.mark.skipif(
    not HAVE_MILVUS, reason="pymilvus / milvus-lite not installed (pip install skbqa[milvus])"
)
needs_milvus = [pytest.mark.milvus, skip_without_milvus]

DIM = 32
N = 120
N_TYPES = 4


# -- adapters ---------------------------------------------------------------------------------------------------


@dataclass
class Adapter:
    name: str
    make: Callable[[], VectorIndex]
    load: Callable[[Path], VectorIndex]
    score_atol: float  # how far a returned score may sit from the float64 dot product


@pytest.fixture(scope="module")
def milvus_uri(tmp_path_factory: pytest.TempPathFactory) -> str:
    """One Milvus Lite directory for the whole module; each test gets its own collection in it."""
    return str(tmp_path_factory.mktemp("milvus") / "lite.db")


_collection_ids = itertools.count()


@pytest.fixture(
    params=[
        pytest.param("exact-float32"),
        pytest.param("exact-float16"),
        pytest.param("ann-flat", marks=needs_faiss),
        pytest.param("ann-ivf", marks=needs_faiss),
        pytest.param("milvus-flat", marks=needs_milvus),
    ]
)
def adapter(request: pytest.FixtureRequest) -> Iterator[Adapter]:
    opened: list[VectorIndex] = []

    def track(index: VectorIndex) -> VectorIndex:
        opened.append(index)
        return index

    name = request.param
    if name.startswith("exact"):
        dtype = name.split("-")[1]
        yield Adapter(
            name,
            make=lambda: track(ExactIndex(DIM, dtype=dtype)),
            load=lambda d: track(ExactIndex.load(d)),
            score_atol=1e-5 if dtype == "float32" else 2e-3,
        )
    elif name.startswith("ann"):
        from skbqa.stores.vectors.ann import AnnIndex

        # ann-ivf: every partition an inverted file, probed exhaustively (nprobe ≥ lists), so answers are exact.
        ivf_min_rows = 1 if name == "ann-ivf" else 10**9
        yield Adapter(
            name,
            make=lambda: track(AnnIndex(DIM, nprobe=10_000, ivf_min_rows=ivf_min_rows)),
            load=lambda d: track(AnnIndex.load(d)),
            score_atol=2e-3,
        )
    else:
        from skbqa.stores.vectors.milvus import MilvusIndex

        uri = request.getfixturevalue("milvus_uri")
        # Small thresholds so the tests reach both keys paths: fetch-and-rescore (≤ 16 keys) and chunked
        # filtered search (> 16 keys, 40 keys per `key in [..]` chunk).
        yield Adapter(
            name,
            make=lambda: track(
                MilvusIndex(uri, f"c{next(_collection_ids)}", DIM, rescore_max_keys=16, filter_chunk_keys=40)
            ),
            load=lambda d: track(MilvusIndex.load(d)),
            score_atol=1e-5,
        )
    for index in opened:
        index.close()


# -- data and the oracle ----------------------------------------------------------------------------------------


def unit(rng: np.random.Generator, n: int, dim: int = DIM) -> np.ndarray:
    vectors = rng.normal(size=(n, dim))
    return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


@dataclass
class Data:
    keys: np.ndarray
    vectors: np.ndarray
    types: np.ndarray


@pytest.fixture(scope="module")
def data() -> Data:
    """N unit vectors whose first three coordinates are distinct, well-separated values (see module doc)."""
    rng = np.random.default_rng(7)
    grid = np.linspace(-0.55, 0.55, N)  # spacing ≈ 0.0092
    head = np.stack([rng.permutation(grid) for _ in range(3)], axis=1)
    tail = unit(rng, N, DIM - 3) * np.sqrt(1.0 - (head**2).sum(axis=1, keepdims=True))
    vectors = np.concatenate([head, tail], axis=1).astype(np.float32)
    keys = rng.permutation(np.arange(1000, 1000 + 3 * N, 3))[:N].astype(np.int64)  # unordered, gapped keys
    types = (np.arange(N) % N_TYPES).astype(np.int16)
    return Data(keys, vectors, types)


QUERIES = np.eye(3, DIM, dtype=np.float32)  # basis vectors: score = a stored coordinate


def oracle(data: Data, query: np.ndarray, k: int, node_types=None, keys=None) -> tuple[np.ndarray, np.ndarray]:
    """Brute-force float64 cosine top-k with the same filters and ordering (score desc, key asc)."""
    keep = np.ones(len(data.keys), bool)
    if node_types is not None:
        keep &= np.isin(data.types, list(node_types))
    if keys is not None:
        keep &= np.isin(data.keys, keys)
    cand_keys = data.keys[keep]
    scores = data.vectors[keep].astype(np.float64) @ query.astype(np.float64)
    order = np.lexsort((cand_keys, -scores))[:k]
    return cand_keys[order], scores[order]


def filled(adapter: Adapter, data: Data) -> VectorIndex:
    index = adapter.make()
    index.add(data.keys, data.vectors, data.types)
    return index


def assert_matches_oracle(adapter: Adapter, hits: Hits, data: Data, query: np.ndarray, k: int, **filters) -> None:
    want_keys, want_scores = oracle(data, query, k, **filters)
    np.testing.assert_array_equal(hits.keys, want_keys)
    np.testing.assert_allclose(hits.scores, want_scores, atol=adapter.score_atol)
    assert hits.keys.dtype == np.int64 and hits.scores.dtype == np.float32


def assert_well_ordered(hits: Hits) -> None:
    """Score descending, ties by key ascending."""
    for i in range(len(hits) - 1):
        assert hits.scores[i] > hits.scores[i + 1] or (
            hits.scores[i] == hits.scores[i + 1] and hits.keys[i] < hits.keys[i + 1]
        )


# -- the contract -----------------------------------------------------------------------------------------------


def test_is_a_vector_index(adapter: Adapter) -> None:
    index = adapter.make()
    assert isinstance(index, VectorIndex)
    assert index.dim == DIM


def test_len(adapter: Adapter, data: Data) -> None:
    index = adapter.make()
    assert len(index) == 0
    index.add(data.keys, data.vectors, data.types)
    assert len(index) == N


def test_topk_order_equals_brute_force(adapter: Adapter, data: Data) -> None:
    index = filled(adapter, data)
    for query in QUERIES:
        (hits,) = index.search(query, 10)
        assert_matches_oracle(adapter, hits, data, query, 10)


def test_random_unit_vectors_within_tolerance(adapter: Adapter) -> None:
    """On unstructured data the returned set is the true top-k up to score tolerance, best first."""
    rng = np.random.default_rng(3)
    vectors, queries = unit(rng, 400), unit(rng, 5)
    index = adapter.make()
    index.add(np.arange(400), vectors, np.zeros(400, np.int16))
    truth = vectors.astype(np.float64) @ queries.astype(np.float64).T  # (n, q)
    for q, hits in enumerate(index.search(queries, 20)):
        assert len(hits) == 20
        assert_well_ordered(hits)
        np.testing.assert_allclose(hits.scores, truth[hits.keys, q], atol=adapter.score_atol)
        kth_best = np.sort(truth[:, q])[-20]
        assert truth[hits.keys, q].min() >= kth_best - 2 * adapter.score_atol


def test_k_larger_than_collection(adapter: Adapter, data: Data) -> None:
    index = filled(adapter, data)
    (hits,) = index.search(QUERIES[0], N + 50)
    assert len(hits) == N
    assert_matches_oracle(adapter, hits, data, QUERIES[0], N + 50)


def test_node_types_filter(adapter: Adapter, data: Data) -> None:
    index = filled(adapter, data)
    for query in QUERIES:
        (hits,) = index.search(query, 7, node_types=[1, 3])
        assert set(data.types[np.isin(data.keys, hits.keys)].tolist()) <= {1, 3}
        assert_matches_oracle(adapter, hits, data, query, 7, node_types=[1, 3])


@pytest.mark.parametrize("n_keys", [10, 90], ids=["few-keys", "many-keys"])
def test_keys_filter(adapter: Adapter, data: Data, n_keys: int) -> None:
    index = filled(adapter, data)
    rng = np.random.default_rng(n_keys)
    wanted = rng.choice(data.keys, n_keys, replace=False)
    wanted_with_noise = np.concatenate([wanted, wanted[:3], [5, 99_999]])  # duplicates and unknown keys are fine
    for query in QUERIES:
        (hits,) = index.search(query, 8, keys=wanted_with_noise)
        assert set(hits.keys.tolist()) <= set(wanted.tolist())
        assert_matches_oracle(adapter, hits, data, query, 8, keys=wanted)
    # k above the number of matching keys: every match comes back
    (hits,) = index.search(QUERIES[1], 500, keys=wanted)
    assert_matches_oracle(adapter, hits, data, QUERIES[1], 500, keys=wanted)
    assert len(hits) == n_keys


@pytest.mark.parametrize("n_keys", [12, 80], ids=["few-keys", "many-keys"])
def test_both_filters(adapter: Adapter, data: Data, n_keys: int) -> None:
    index = filled(adapter, data)
    wanted = np.random.default_rng(n_keys).choice(data.keys, n_keys, replace=False)
    for query in QUERIES:
        (hits,) = index.search(query, 5, node_types=[0, 2], keys=wanted)
        assert_matches_oracle(adapter, hits, data, query, 5, node_types=[0, 2], keys=wanted)
    (hits,) = index.search(QUERIES[2], 500, node_types=[2], keys=wanted)
    assert len(hits) == int(np.sum(np.isin(data.keys, wanted) & (data.types == 2)))


def test_empty_results_when_nothing_matches(adapter: Adapter, data: Data) -> None:
    index = filled(adapter, data)
    type2_keys = data.keys[data.types == 2][:5]
    cases = [
        {"node_types": [N_TYPES + 5]},  # unknown type
        {"node_types": []},
        {"keys": np.array([1, 2, 3])},  # unknown keys
        {"keys": np.zeros(0, np.int64)},
        {"keys": type2_keys, "node_types": [0]},  # both filters match, just not together
        {"keys": data.keys[:30], "node_types": [N_TYPES + 5]},
    ]
    for filters in cases:
        results = index.search(QUERIES[:2], 5, **filters)
        assert len(results) == 2, filters
        for hits in results:
            assert len(hits) == 0, filters
            assert hits.keys.dtype == np.int64 and hits.scores.dtype == np.float32
    assert all(len(h) == 0 for h in index.search(QUERIES, 0))
    assert all(len(h) == 0 for h in adapter.make().search(QUERIES, 5))  # empty index


def test_multiple_queries_in_one_call(adapter: Adapter, data: Data) -> None:
    index = filled(adapter, data)
    queries = np.concatenate([QUERIES, QUERIES[::-1]])
    for filters in ({}, {"node_types": [1]}, {"keys": data.keys[::2]}):
        batched = index.search(queries, 6, **filters)
        assert len(batched) == len(queries)
        for query, hits in zip(queries, batched, strict=True):
            assert_matches_oracle(adapter, hits, data, query, 6, **filters)
            (single,) = index.search(query, 6, **filters)
            np.testing.assert_array_equal(hits.keys, single.keys)


def test_add_in_two_batches(adapter: Adapter, data: Data) -> None:
    index = adapter.make()
    cut = 47
    index.add(data.keys[:cut], data.vectors[:cut], data.types[:cut])
    assert len(index) == cut
    index.add(data.keys[cut:], data.vectors[cut:], data.types[cut:])
    assert len(index) == N
    for query in QUERIES:
        (hits,) = index.search(query, 12)
        assert_matches_oracle(adapter, hits, data, query, 12)
        (hits,) = index.search(query, 4, keys=data.keys[cut - 3 : cut + 3])  # straddles the two batches
        assert_matches_oracle(adapter, hits, data, query, 4, keys=data.keys[cut - 3 : cut + 3])


def test_duplicate_keys_rejected(adapter: Adapter, data: Data) -> None:
    index = adapter.make()
    index.add(data.keys[:50], data.vectors[:50], data.types[:50])
    with pytest.raises(ValueError, match="unique"):  # a key already stored
        index.add(data.keys[45:60], data.vectors[45:60], data.types[45:60])
    with pytest.raises(ValueError, match="unique"):  # a key repeated within the batch
        index.add(data.keys[[60, 61, 60]], data.vectors[[60, 61, 62]], data.types[[60, 61, 62]])
    assert len(index) == 50  # a rejected add changes nothing
    (hits,) = index.search(QUERIES[0], 100)
    assert set(hits.keys.tolist()) == set(data.keys[:50].tolist())


def test_rejects_misshapen_input(adapter: Adapter, data: Data) -> None:
    index = adapter.make()
    with pytest.raises(ValueError):
        index.add(data.keys[:5], data.vectors[:4], data.types[:5])
    with pytest.raises(ValueError):
        index.add(data.keys[:5], data.vectors[:5, :-1], data.types[:5])
    with pytest.raises(ValueError):
        index.add(data.keys[:5], data.vectors[:5], data.types[:4])
    assert len(index) == 0


def test_save_load_round_trip(adapter: Adapter, data: Data, tmp_path: Path) -> None:
    index = filled(adapter, data)
    queries = np.concatenate([QUERIES, unit(np.random.default_rng(11), 4)])
    filter_sets = [
        {},
        {"node_types": [3]},
        {"keys": data.keys[:10]},
        {"keys": data.keys[:70], "node_types": [0, 1]},
    ]
    before = [index.search(queries, 9, **f) for f in filter_sets]
    index.save(tmp_path / "saved")
    index.close()
    reopened = adapter.load(tmp_path / "saved")
    assert len(reopened) == N
    assert reopened.dim == DIM
    for filters, old in zip(filter_sets, before, strict=True):
        for a, b in zip(old, reopened.search(queries, 9, **filters), strict=True):
            np.testing.assert_array_equal(a.keys, b.keys)
            np.testing.assert_array_equal(a.scores, b.scores)


# -- Milvus-specific --------------------------------------------------------------------------------------------


@pytest.mark.milvus
@skip_without_milvus
def test_milvus_hnsw_recall(milvus_uri: str) -> None:
    from skbqa.stores.vectors.milvus import MilvusIndex

    rng = np.random.default_rng(5)
    dim, n = 64, 2_000
    vectors, queries = unit(rng, n, dim), unit(rng, 50, dim)
    types = rng.integers(0, 3, n)
    exact = ExactIndex(dim)
    exact.add(np.arange(n), vectors, types)
    hnsw = MilvusIndex(milvus_uri, "hnsw_smoke", dim, index_type="HNSW")
    # Same collection, tiny ef: its recall drops below 1 once the HNSW graph (not brute force) answers.
    probe = MilvusIndex(milvus_uri, "hnsw_smoke", dim, index_type="HNSW", search_params={"ef": 10})

    def recall(index: MilvusIndex, **filters) -> float:
        truth = exact.search(queries, 10, **filters)
        got = index.search(queries, 10, **filters)
        assert all(len(g) == 10 for g in got)
        for g in got:
            assert_well_ordered(g)
        return float(
            np.mean(
                [len(set(t.keys.tolist()) & set(g.keys.tolist())) / 10 for t, g in zip(truth, got, strict=True)]
            )
        )

    try:
        hnsw.add(np.arange(n), vectors, types)
        assert recall(hnsw) >= 0.9  # growing segment: searched by brute force
        hnsw.flush()  # seal it; Milvus builds the graph in the background
        deadline = time.monotonic() + 60
        while recall(probe) == 1.0:
            assert time.monotonic() < deadline, "the HNSW index never started serving searches"
            time.sleep(0.1)
        for filters in ({}, {"node_types": [1]}):
            assert recall(hnsw, **filters) >= 0.9, filters
    finally:
        hnsw.close()
        probe.close()


def test_milvus_module_is_lazy() -> None:
    """Importing and constructing the adapter touches neither pymilvus nor the disk."""
    code = (
        "import sys\n"
        "from skbqa.stores.vectors.milvus import MilvusIndex\n"
        "MilvusIndex('/nonexistent/dir/x.db', 'c', 8, index_type='HNSW')\n"
        "assert 'pymilvus' not in sys.modules, 'pymilvus imported eagerly'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.milvus
@skip_without_milvus
def test_milvus_unreachable_server_is_backend_unavailable() -> None:
    from skbqa.stores.vectors.milvus import MilvusIndex

    index = MilvusIndex("http://127.0.0.1:1", "c", 8, timeout=5)
    with pytest.raises(BackendUnavailableError, match="Milvus connect failed"):
        len(index)


def test_milvus_missing_pymilvus_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    from skbqa.stores.vectors.milvus import MilvusIndex

    monkeypatch.setitem(sys.modules, "pymilvus", None)  # makes `import pymilvus` raise ImportError
    with pytest.raises(BackendUnavailableError, match=r"pip install skbqa\[milvus\]"):
        len(MilvusIndex("/tmp/never.db", "c", 8))


@pytest.mark.milvus
@skip_without_milvus
def test_milvus_existing_collection_with_other_dim_is_refused(milvus_uri: str) -> None:
    from skbqa.stores.vectors.milvus import MilvusIndex

    first = MilvusIndex(milvus_uri, "dim_check", 8)
    first.add(np.arange(3), unit(np.random.default_rng(0), 3, 8), np.zeros(3, np.int16))
    first.close()
    with pytest.raises(IndexStoreError, match="dim 8 != 16"):
        len(MilvusIndex(milvus_uri, "dim_check", 16))
