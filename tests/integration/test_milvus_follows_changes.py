"""Vectors served from Milvus follow live updates: the writer loads each snapshot's sets into collections of
their own (`_v<N>`) before the swap, answers at the new version read them, old versions' collections are
dropped, and a failed load leaves the index at its old version, serving, with the batch folded at the next try.

On the real sample (3,043 nodes) with the hashing encoder (instant) and Milvus Lite; the reference is an index
ingested fresh from the final bundle and searched in process (exact vectors)."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from skbqa.changes.format import parse_change
from skbqa.changes.updater import IndexUpdater
from skbqa.common.errors import BackendUnavailableError
from skbqa.engine.embedded import EmbeddedEngine
from skbqa.ingest.builder import ingest
from skbqa.skb.qa import load_qa
from skbqa.stores.index import EMBEDDING_SETS, open_index, read_manifest
from skbqa.stores.vectors.milvus_catalog import _Catalog, collection_name, collection_stem, collection_version
from skbqa.stores.vectors.milvus_sets import load_vectors_into_milvus, with_milvus_vectors
from skbqa.stores.vectors.milvus_versions import MilvusTarget, MilvusVersions
from tests.change_bundles import _write
from tests.conftest import SAMPLE_BUNDLE
from tests.helpers import HashingEncoder

pytestmark = pytest.mark.milvus

K = 20
NEW_ID = 10_000_001
NEW_TEXT = "quixotrel wombfever is a zorblaxic inherited disorder of recurrent quixotrel fevers"
GONE_ID, GONE_NAME = 85192, "Amelia and terminal transverse hemimelia"  # vss finds it first by its name
NEW_QUESTION = "quixotrel wombfever"  # its name: the hashing encoder (64 dims) collides on longer texts


def _read(path: Path) -> list[dict[str, Any]]:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


@pytest.fixture(scope="module")
def bundles(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]], int]:
    """(final bundle, the one batch that turns the sample into it, the deleted node's id)."""
    pytest.importorskip("pymilvus")
    pytest.importorskip("milvus_lite")
    nodes = _read(SAMPLE_BUNDLE / "nodes.jsonl.gz")
    edges = _read(SAMPLE_BUNDLE / "edges.jsonl.gz")
    gone = GONE_ID
    assert next(n for n in nodes if n["id"] == gone)["name"] == GONE_NAME
    new = {"id": NEW_ID, "type": "disease", "name": "quixotrel wombfever", "attrs": {}, "text": NEW_TEXT}
    final_nodes = [n for n in nodes if n["id"] != gone] + [new]
    final_edges = [e for e in edges if gone not in (e["src"], e["dst"])]
    final = _write(
        tmp_path_factory.mktemp("final") / "bundle", SAMPLE_BUNDLE / "schema.json", final_nodes, final_edges
    )
    batch = [{"op": "upsert_node", "node": new}, {"op": "delete_node", "id": gone}]
    return final, batch, gone


@pytest.fixture(scope="module")
def fresh(
    bundles: tuple[Path, list[dict[str, Any]], int], tmp_path_factory: pytest.TempPathFactory
) -> EmbeddedEngine:
    encoder = HashingEncoder()
    index = tmp_path_factory.mktemp("fresh") / "index"
    ingest(bundles[0], index, encoder, progress=False)
    return EmbeddedEngine.open(index, encoder=encoder)


@pytest.fixture
def live(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """The sample ingested, its vectors loaded into a Milvus Lite file of its own: (index, uri)."""
    index, uri = tmp_path / "live", str(tmp_path / "lite.db")
    ingest(SAMPLE_BUNDLE, index, HashingEncoder(), progress=False)
    load_vectors_into_milvus(index, uri)
    yield index, uri


def _parsed(changes: list[dict[str, Any]]) -> list[tuple[int, Any]]:
    return [(i, parse_change(c, "stream", i)) for i, c in enumerate(changes, start=1)]


def _versions_in_milvus(uri: str, manifest: dict[str, Any]) -> dict[int, int]:
    """kb_version → how many of the index's collections Milvus holds for it."""
    catalog = _Catalog(uri, "", None)
    try:
        found: dict[int, int] = {}
        for name in catalog.names():
            version = collection_version(name, collection_stem(manifest))
            if version is not None:
                found[version] = found.get(version, 0) + 1
        return found
    finally:
        catalog.close()


def _vss(engine: EmbeddedEngine, question: str) -> list[int]:
    return [item.node_id for item in engine.ask(question, strategy="vss", k=K).items]


def test_collection_names_change_with_the_version_and_keep_their_stem() -> None:
    v0 = {
        "schema_name": "prime",
        "bundle": {"sha256": "ab"},
        "encoder": {"name": "e", "dim": 4},
        "created_unix": 7,
    }
    v3 = {**v0, "kb_version": 3, "created_unix": 99, "ingested_unix": 7}
    name0, name3 = collection_name(v0, "name"), collection_name(v3, "name")
    assert name0 == f"{collection_stem(v0)}_name" and "_v" not in name0  # version 0: the name it always had
    assert name3 == f"{collection_stem(v0)}_v3_name"  # same stem: the writer finds every version's collections
    assert collection_version(name0, collection_stem(v0)) == 0
    assert collection_version(name3, collection_stem(v3)) == 3
    assert collection_version("skbqa_other_123_v3_name", collection_stem(v3)) is None


def test_milvus_answers_at_the_new_version_like_a_fresh_ingest(
    live: tuple[Path, str], bundles: tuple[Path, list[dict[str, Any]], int], fresh: EmbeddedEngine
) -> None:
    index, uri = live
    _, batch, gone = bundles
    encoder = HashingEncoder()
    updater = IndexUpdater(index, encoder, mirror=MilvusVersions(MilvusTarget(uri), keep_s=0.0))
    engines: list[EmbeddedEngine] = [EmbeddedEngine(with_milvus_vectors(open_index(index), uri), encoder)]
    try:
        assert _vss(engines[0], GONE_NAME)[0] == gone and NEW_ID not in _vss(engines[0], NEW_QUESTION)
        assert updater.submit(_parsed(batch), "stream")[0] == 1
        report = updater.snapshot()
        assert report is not None and report.version == 1
        # measured for docs/milvus.md: the load beside the snapshot's own time, in this process
        print(f"\nsnapshot {report.seconds['snapshot_total']} s, Milvus load {report.seconds['mirror_load']} s")
        manifest = read_manifest(index)
        engines.append(EmbeddedEngine(with_milvus_vectors(open_index(index), uri), encoder))
        milvus = engines[1]
        assert type(milvus.stores.vectors["document"]).__name__ == "MilvusIndex"
        questions = [item.question for item in load_qa(SAMPLE_BUNDLE / "qa.jsonl")] + [NEW_QUESTION]
        assert _vss(milvus, NEW_QUESTION)[0] == NEW_ID
        for question in questions:
            got = _vss(milvus, question)
            assert gone not in got, question
            assert got == _vss(fresh, question), question
        assert _versions_in_milvus(uri, manifest) == {0: 3, 1: 3}  # the previous version is kept

        # two more versions: each fold drops what is older than the version it replaces
        for version, node_id in ((2, 10_000_002), (3, 10_000_003)):
            node = {"id": node_id, "type": "disease", "name": f"added {node_id}", "attrs": {}, "text": "added"}
            updater.submit(_parsed([{"op": "upsert_node", "node": node}]), "stream")
            assert updater.snapshot() is not None
            assert _versions_in_milvus(uri, read_manifest(index)) == {version - 1: 3, version: 3}
    finally:
        updater.close()
        for engine in engines:
            _closing(engine)


def _closing(engine: EmbeddedEngine) -> None:
    for vectors in engine.stores.vectors.values():
        vectors.close()  # type: ignore[attr-defined]


def test_a_failed_load_leaves_the_old_version_serving(
    live: tuple[Path, str], bundles: tuple[Path, list[dict[str, Any]], int]
) -> None:
    index, uri = live
    _, batch, gone = bundles
    encoder = HashingEncoder()
    calls: list[int] = []

    def load_then_fail(work: Path, *args: Any, **kwargs: Any) -> dict[str, dict[str, Any]]:
        calls.append(1)
        if len(calls) == 1:  # the first load dies halfway: one set copied, then the backend is gone
            load_vectors_into_milvus(work, *args, **{**kwargs, "sets": EMBEDDING_SETS[:1]})
            raise BackendUnavailableError("Milvus went away")
        return load_vectors_into_milvus(work, *args, **kwargs)

    updater = IndexUpdater(index, encoder, mirror=MilvusVersions(MilvusTarget(uri), load=load_then_fail))
    try:
        updater.submit(_parsed(batch), "stream")
        with pytest.raises(BackendUnavailableError):
            updater.snapshot()
        # not swapped, no work directory left, the batch still pending; version 0 answers from its collections
        assert read_manifest(index).get("kb_version", 0) == 0 and updater.pending == 1
        assert sorted(p.name for p in index.parent.iterdir()) == ["lite.db", "live"]
        engine = EmbeddedEngine(with_milvus_vectors(open_index(index), uri), encoder)
        assert _vss(engine, GONE_NAME)[0] == gone and NEW_ID not in _vss(engine, NEW_QUESTION)
        _closing(engine)

        # the next fold folds the same batch again, replacing the half-loaded version's collections
        report = updater.snapshot()
        assert report is not None and report.version == 1 and len(calls) == 2
        assert _versions_in_milvus(uri, read_manifest(index)) == {0: 3, 1: 3}
        engine = EmbeddedEngine(with_milvus_vectors(open_index(index), uri), encoder)
        assert _vss(engine, NEW_QUESTION)[0] == NEW_ID and gone not in _vss(engine, GONE_NAME)
        _closing(engine)
    finally:
        updater.close()


def test_takes_changes_allows_milvus_not_nebula() -> None:
    from skbqa.serving.run import takes_changes
    from skbqa.serving.settings import ServiceSettings

    assert takes_changes(ServiceSettings(index=Path("i"), vectors_url="milvus://127.0.0.1:19530"))
    assert not takes_changes(ServiceSettings(index=Path("i"), vectors_url="x.db", graph_url="nebula://h:9669/s"))
    assert takes_changes(ServiceSettings(index=Path("i"), vectors_url="x.db", ray_address="local"))


def test_the_embedded_server_with_milvus_follows_a_change(
    biomed_sample_engine: EmbeddedEngine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the public API, with the real encoder and the fold in its child process: the first Milvus load
    fails (the server keeps answering at version 0), the fold is retried, and `min_version` answers read the new
    version's collections."""
    import shutil
    import threading

    from skbqa.client import SkbqaClient
    from skbqa.serving import runtime
    from skbqa.serving.run import start_embedded
    from skbqa.serving.settings import ServiceSettings

    index, uri = tmp_path / "index", str(tmp_path / "lite.db")
    shutil.copytree(biomed_sample_engine.stores.directory, index)
    load_vectors_into_milvus(index, uri)
    failed = threading.Event()

    def fail_once(work: Path, *args: Any, **kwargs: Any) -> dict[str, dict[str, Any]]:
        if not failed.is_set():
            failed.set()
            raise BackendUnavailableError("Milvus went away")
        return load_vectors_into_milvus(work, *args, **kwargs)

    monkeypatch.setattr(
        runtime, "snapshot_mirror", lambda settings: MilvusVersions(MilvusTarget(uri), load=fail_once)
    )
    server, stop = start_embedded(ServiceSettings(index=index, port=0, host="127.0.0.1", vectors_url=uri))
    try:
        with SkbqaClient.connect(f"127.0.0.1:{server.port}", deadline_s=60) as client:
            assert client.ask(GONE_NAME, strategy="vss", k=K).items[0].node_id == GONE_ID
            new = {"id": NEW_ID, "type": "disease", "name": "quixotrel wombfever", "attrs": {}, "text": NEW_TEXT}
            applied = client.apply_changes(
                [{"op": "upsert_node", "node": new}, {"op": "delete_node", "id": GONE_ID}]
            )
            assert applied.version == 1
            assert failed.wait(60)
            answer = client.ask(GONE_NAME, strategy="vss", k=K)  # the failed fold left version 0 serving
            assert answer.kb_version == 0 and answer.items[0].node_id == GONE_ID
            # the fold is retried (after 5 s) and its load succeeds
            found = client.ask("quixotrel wombfever", strategy="vss", k=K, min_version=applied.version)
            assert found.kb_version == 1 and found.items[0].node_id == NEW_ID
            answer = client.ask(GONE_NAME, strategy="vss", k=K, min_version=applied.version)
            assert answer.kb_version == 1 and GONE_ID not in [item.node_id for item in answer.items]
    finally:
        stop()
