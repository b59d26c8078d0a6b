from __future__ import annotations

import json
from pathlib import Path

import pytest

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
