from __future__ import annotations

import json
from pathlib import Path

import pytest

from skbqa.changes.format import parse_change
from skbqa.changes.updater import IndexUpdater
from skbqa.cli import main as cli
from skbqa.common.errors import BundleError, IndexStoreError
from skbqa.engine.embedded import EmbeddedEngine
from skbqa.ingest.builder import bundle_checksum, ingest
from skbqa.stores.index import EMBEDDING_SETS, open_index
from tests.helpers import HashingEncoder, write_bundle


class ExplodingEncoder(HashingEncoder):
    def encode(self, texts, *, progress=None):  # type: ignore[no-untyped-def]
        raise RuntimeError("encoder died mid-ingest")


def test_index_has_every_store_and_a_manifest(tiny_bundle: Path, tmp_path: Path, hashing_encoder) -> None:
    report = ingest(tiny_bundle, tmp_path / "idx", hashing_encoder, progress=False)
    manifest = json.loads((tmp_path / "idx" / "manifest.json").read_text())
    assert manifest["encoder"] == {"name": "test-hashing/64", "dim": 64}
    assert manifest["counts"]["nodes"] == 7 and manifest["counts"]["edges"] == 7
    assert manifest["counts"]["nodes_by_type"] == {"paper": 3, "author": 2, "field": 2}
    assert manifest["bundle"]["sha256"] == bundle_checksum(tiny_bundle)
    assert report.texts_encoded == 7 * len(EMBEDDING_SETS)
    stores = open_index(tmp_path / "idx")
    assert all(len(stores.vectors[name]) == 7 for name in EMBEDDING_SETS)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")], "no temp directories left behind"


def test_failed_ingest_leaves_the_previous_index_intact(
    tiny_bundle: Path, tmp_path: Path, hashing_encoder
) -> None:
    ingest(tiny_bundle, tmp_path / "idx", hashing_encoder, progress=False)
    before = (tmp_path / "idx" / "manifest.json").read_bytes()
    with pytest.raises(RuntimeError, match="mid-ingest"):
        ingest(tiny_bundle, tmp_path / "idx", ExplodingEncoder(), progress=False)
    assert (tmp_path / "idx" / "manifest.json").read_bytes() == before
    assert EmbeddedEngine(open_index(tmp_path / "idx"), hashing_encoder).ask("chemistry", strategy="bm25").items
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_bad_bundle_writes_nothing(tmp_path: Path, hashing_encoder) -> None:
    bundle = write_bundle(tmp_path / "b", edges=[{"src": 10, "type": "written_by", "dst": 999}])
    with pytest.raises(BundleError, match=r"edges.jsonl:1: .*999"):
        ingest(bundle, tmp_path / "idx", hashing_encoder, progress=False)
    assert not (tmp_path / "idx").exists()
    assert list(tmp_path.iterdir()) == [bundle]


def test_reingest_with_another_model_is_refused_unless_forced(tiny_bundle: Path, tmp_path: Path) -> None:
    ingest(tiny_bundle, tmp_path / "idx", HashingEncoder(name="model-a"), progress=False)
    with pytest.raises(IndexStoreError, match="model-a"):
        ingest(tiny_bundle, tmp_path / "idx", HashingEncoder(name="model-b"), progress=False)
    ingest(tiny_bundle, tmp_path / "idx", HashingEncoder(name="model-b"), progress=False, force=True)
    assert json.loads((tmp_path / "idx" / "manifest.json").read_text())["encoder"]["name"] == "model-b"


def test_opening_with_a_different_encoder_is_refused(tiny_bundle: Path, tmp_path: Path) -> None:
    ingest(tiny_bundle, tmp_path / "idx", HashingEncoder(name="model-a"), progress=False)
    with pytest.raises(IndexStoreError, match="not comparable"):
        EmbeddedEngine.open(tmp_path / "idx", encoder=HashingEncoder(name="model-b"))


def test_missing_index_says_how_to_build_one(tmp_path: Path) -> None:
    with pytest.raises(IndexStoreError, match="skbqa ingest"):
        open_index(tmp_path / "nowhere")


def test_reingest_is_refused_while_another_process_changes_the_index(
    tiny_bundle: Path, tmp_path: Path, hashing_encoder, capsys: pytest.CaptureFixture[str], monkeypatch
) -> None:
    """A server or updater applying changes would fold its own knowledge base over the new index and lose the
    changes it acknowledged meanwhile: the ingest refuses at once and leaves the index as it was; once the writer
    has gone it replaces the index and says which KB version it replaced."""
    ingest(tiny_bundle, tmp_path / "idx", hashing_encoder, progress=False)
    updater = IndexUpdater(tmp_path / "idx", hashing_encoder)
    try:
        change = parse_change({"op": "delete_node", "id": 10}, "c", 1)
        version, _ = updater.submit([(1, change)], "c")
        before = (tmp_path / "idx" / "manifest.json").read_bytes()
        with pytest.raises(IndexStoreError, match=r"another process is changing .*stop it before re-ingesting"):
            ingest(tiny_bundle, tmp_path / "idx", hashing_encoder, progress=False)
        monkeypatch.setattr("skbqa.models.local_encoder.load_encoder", lambda *a, **k: hashing_encoder)
        status = cli.main(["ingest", str(tiny_bundle), "--index", str(tmp_path / "idx"), "--no-progress"])
        assert status == 1  # the index's state, as for an index built with another model: not bad input
        assert "another process is changing" in capsys.readouterr().err
        assert (tmp_path / "idx" / "manifest.json").read_bytes() == before
    finally:
        updater.close()
    assert cli.main(["ingest", str(tiny_bundle), "--index", str(tmp_path / "idx"), "--no-progress"]) == 0
    assert f"replaced an index at KB version {version}" in capsys.readouterr().out
    stores = open_index(tmp_path / "idx")
    assert len(stores.nodes) == 7  # the bundle's knowledge base, without the logged deletion
    assert not (tmp_path / "idx" / "changes" / "log.jsonl").exists()
