"""Which Milvus collections the writer drops, and when: the served version and the previous one never; older ones
once `keep_s` has passed since a newer version replaced them; versions newer than the served one (a failed
load's leftovers) before the next load. A fake catalog and clock: no Milvus needed."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import pytest

from skbqa.stores.index import EMBEDDING_SETS
from skbqa.stores.vectors import milvus_versions
from skbqa.stores.vectors.milvus_catalog import collection_name
from skbqa.stores.vectors.milvus_versions import MilvusTarget, MilvusVersions

BASE = {"schema_name": "prime", "bundle": {"sha256": "ab"}, "encoder": {"name": "e", "dim": 4}, "created_unix": 7}


def manifest(version: int) -> dict[str, Any]:
    return {**BASE, "kb_version": version, "ingested_unix": 7, "created_unix": 7 + version} if version else BASE


class FakeCatalog:
    held: ClassVar[set[str]] = set()

    def __init__(self, *_: Any) -> None:
        pass

    def names(self) -> list[str]:
        return sorted(self.held)

    def drop(self, name: str) -> None:
        self.held.discard(name)

    def close(self) -> None:
        pass


def versions() -> set[int]:
    return {v for v in range(10) for s in EMBEDDING_SETS if collection_name(manifest(v), s) in FakeCatalog.held}


@pytest.fixture
def setup(monkeypatch: pytest.MonkeyPatch) -> tuple[MilvusVersions, list[float], dict[str, Any]]:
    FakeCatalog.held = {"someone_elses_collection"}
    served: dict[str, Any] = {"manifest": manifest(0)}
    now = [0.0]

    def load(work: Path, *_: Any, **__: Any) -> dict[str, dict[str, Any]]:
        version = int(work.name)
        FakeCatalog.held |= {collection_name(manifest(version), s) for s in EMBEDDING_SETS}
        return {}

    monkeypatch.setattr(milvus_versions, "_Catalog", FakeCatalog)
    monkeypatch.setattr(milvus_versions, "read_manifest", lambda _: served["manifest"])
    mirror = MilvusVersions(MilvusTarget("x.db"), keep_s=90.0, load=load, clock=lambda: now[0])
    load(Path("0"))
    return mirror, now, served


def fold(mirror: MilvusVersions, served: dict[str, Any], version: int) -> None:
    previous = int(served["manifest"].get("kb_version", 0))
    mirror.before_swap(Path(str(version)), served["manifest"])
    served["manifest"] = manifest(version)
    mirror.after_swap(Path("index"), previous)


def test_old_versions_go_only_after_the_grace_period(setup) -> None:
    mirror, now, served = setup
    fold(mirror, served, 1)
    assert versions() == {0, 1}
    now[0] = 10.0
    fold(mirror, served, 2)  # version 0 was replaced 10 s ago: a replica may still answer on it
    assert versions() == {0, 1, 2}
    now[0] = 100.0
    fold(mirror, served, 5)  # 0 replaced 100 s ago, 1 replaced 90 s ago: both go; 2, the previous, stays
    assert versions() == {2, 5}
    assert "someone_elses_collection" in FakeCatalog.held


def test_a_failed_loads_leftovers_are_dropped_before_the_next_load(setup) -> None:
    mirror, _, served = setup
    FakeCatalog.held |= {collection_name(manifest(3), s) for s in EMBEDDING_SETS[:1]}  # half of version 3
    calls: list[set[int]] = []
    mirror._load = lambda work, *a, **k: calls.append(versions()) or {}  # type: ignore[method-assign]
    mirror.before_swap(Path("3"), served["manifest"])
    assert calls == [{0}]  # the half-loaded version 3 was gone when the load began; the served 0 stays
