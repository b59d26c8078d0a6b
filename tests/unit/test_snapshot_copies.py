"""Local copies of shipped versions do not pile up (docs/updates.md "What the store keeps"): a replica claims its
root when it starts and removes what earlier runs of it left there (work directories, copies older than the newest
one); a Ray replica also removes the roots of Ray replicas that died beside the same index, never a live one's,
and removes the copy of a version it let go as soon as no request answers at it (not at its next reopen). The store
is the stack's own S3 server (`devstack.s3_files`), in this process on 127.0.0.1, through boto3."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

pytest.importorskip("boto3")

from skbqa.changes.format import parse_change
from skbqa.changes.updater import IndexUpdater
from skbqa.ingest.object_store import push_index, version_of
from skbqa.ingest.snapshot_fetch import OWNER_LOCK, SnapshotFetcher, SnapshotLocation
from skbqa.serving import stage_versions
from skbqa.serving.stages.core import StageMessage
from skbqa.stages.rerank import ray_replica
from skbqa.stages.rerank.ray_serve import RayRerankerSettings, RerankerCore
from skbqa.stores.index import kb_version, open_index, read_manifest
from tests.helpers import HashingEncoder
from tests.unit.test_ray_versions import _candidates, _request, _wait_until, index  # noqa: F401
from tests.unit.test_s3_files import own_s3

URL = "s3://tansu/kb"
ID = "0123456789abcdef"


@pytest.fixture
def endpoint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    yield from own_s3(tmp_path / "objects", monkeypatch)


def _copy_at(root: Path, name: str, *, whole: bool = True) -> Path:
    (root / name).mkdir(parents=True)
    if whole:
        (root / name / "manifest.json").write_text("{}")
    return root / name


def _names(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir() if p.name != OWNER_LOCK)


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_replica_start_removes_what_its_earlier_runs_left_and_nothing_outside_its_root(tmp_path: Path) -> None:
    own = _copy_at(tmp_path / "replica", "index")
    beside = _copy_at(tmp_path / "replica", "index.other")  # not the root: never touched
    fetcher = SnapshotFetcher(own)
    for name in (f"v1-{ID}", f"v3-{ID}", f"v2-{ID}"):
        _copy_at(fetcher.root, name)
    _copy_at(fetcher.root, f"v4-{ID}", whole=False)  # not a complete copy
    _copy_at(fetcher.root, f".v5-{ID}.ingest-1@h-abc", whole=False)  # a fetch killed with its process
    fetcher.claim()
    assert _names(fetcher.root) == [f"v3-{ID}"]  # the newest whole copy, which a switch opens without a download
    assert (own / "manifest.json").is_file() and (beside / "manifest.json").is_file()
    assert (fetcher.root / OWNER_LOCK).is_file()


def test_a_ray_replica_removes_the_roots_of_dead_replicas_only(tmp_path: Path) -> None:
    shared = tmp_path / "index.ray-versions"
    live = SnapshotFetcher(tmp_path / "index", root=shared / "replica-999999999")
    live.claim()  # a live replica's root: its lock is held
    _copy_at(live.root, f"v2-{ID}")
    dead_locked = _copy_at(shared / f"replica-{_dead_pid()}", f"v1-{ID}")
    (dead_locked.parent / OWNER_LOCK).touch()  # its owner died: the lock is free
    _copy_at(shared / f"replica-{_dead_pid()}", f"v1-{ID}")  # an older run's, without a lock
    _copy_at(shared / "replica-1", f"v1-{ID}")  # no lock, but its process is running: maybe not locked yet
    _copy_at(shared / "someone-else-7", f"v1-{ID}")  # not a replica root
    me = SnapshotFetcher(tmp_path / "index", root=shared / "replica-12345")
    me.claim(siblings=True)
    assert _names(shared) == ["replica-1", "replica-12345", "replica-999999999", "someone-else-7"]
    assert _names(live.root) == [f"v2-{ID}"]


def test_a_ray_replica_start_removes_dead_replicas_copies(
    index: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    own = shutil.copytree(index, tmp_path / "ray-pod" / "index")
    dead = _copy_at(own.parent / "index.ray-versions" / f"replica-{_dead_pid()}", f"v1-{ID}")
    RerankerCore(own, RayRerankerSettings("local"), encoder=HashingEncoder())
    assert not dead.parent.exists()


def test_a_stage_replica_start_removes_its_earlier_runs_copies(tmp_path: Path, monkeypatch) -> None:
    """`VersionedCores` claims its fetcher's root on its own thread as it starts."""
    monkeypatch.setattr(stage_versions, "core_version", lambda core: 0)
    fetcher = SnapshotFetcher(tmp_path / "index")
    left = _copy_at(fetcher.root, f"v1-{ID}")  # newer than the version served (0): a sweep alone keeps both
    newest = _copy_at(fetcher.root, f"v2-{ID}")
    versions = stage_versions.VersionedCores(
        object(),  # type: ignore[arg-type]
        lambda where: object(),  # type: ignore[arg-type,return-value]
        index=tmp_path / "index",
        role="ranking",
        fetcher=fetcher,
    )
    try:
        assert _wait_until(lambda: not left.exists(), 5.0) and newest.exists()
    finally:
        versions.close()


class _Core:
    """A stage core at a version, as much of one as `VersionedCores` touches."""

    def __init__(self, version: int) -> None:
        self.version = version
        self.runtime = SimpleNamespace(stores=SimpleNamespace(vectors={}))

    def warm(self) -> None:
        pass


def test_a_stage_replica_keeps_a_replaced_versions_copy_while_a_request_given_it_may_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stage_versions, "core_version", lambda core: core.version)
    monkeypatch.setattr(stage_versions, "KEEP_PREVIOUS_S", 0.0)
    fetcher = SnapshotFetcher(tmp_path / "index")
    copies = {version: _copy_at(fetcher.root, f"v{version}-{ID}") for version in (1, 2)}
    versions = stage_versions.VersionedCores(
        _Core(0),  # type: ignore[arg-type]
        lambda where: _Core(int(where.name[1])),  # type: ignore[arg-type,return-value]
        index=tmp_path / "index",
        role="ranking",
        follows=False,  # switched here, not by its thread
        fetcher=fetcher,
    )
    versions._open_newer(copies[1])
    deadline = time.time() + 1.5
    request = StageMessage(deadline_unix_ms=int(deadline * 1000))
    assert versions.core_for(request).version == 1 and request.kb_version == 1  # type: ignore[attr-defined]
    versions._open_newer(copies[2])
    versions._retire()
    assert copies[1].is_dir() and versions.core_for(StageMessage(kb_version=1)).version == 1  # type: ignore
    time.sleep(max(0.0, deadline - time.time()) + 0.05)
    versions._retire()  # that request's deadline has passed: every stage drops it now
    assert not copies[1].exists() and copies[2].is_dir()
    with pytest.raises(stage_versions.VersionUnavailableError):
        versions.core_for(StageMessage(kb_version=1))


def _ship(updater_index: Path, endpoint: str, version: int) -> SnapshotLocation:
    """Version `version` folded into the updater's directory (an author renamed) and pushed."""
    change = {"op": "upsert_node", "node": {"id": 1, "type": "author", "name": f"Author {version}", "attrs": {}}}
    updater = IndexUpdater(updater_index, HashingEncoder())
    try:
        updater.submit([(1, parse_change(change, "test", 1))], "test")
        updater.snapshot()
    finally:
        updater.close()
    push_index(updater_index, URL, endpoint_url=endpoint)
    return SnapshotLocation(URL, version_of((updater_index / "manifest.json").read_bytes()), version)


def test_a_ray_replica_removes_a_copy_once_no_request_answers_at_its_version(
    index: Path,  # noqa: F811
    endpoint: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(ray_replica, "KEEP_PREVIOUS_S", 0.3)
    monkeypatch.setattr(ray_replica, "REOPEN_EVERY_S", 0.05)
    own = shutil.copytree(index, tmp_path / "ray-pod" / "index")
    core = RerankerCore(own, RayRerankerSettings("local", s3_endpoint_url=endpoint), encoder=HashingEncoder())
    candidates = _candidates(open_index(index))

    def at(location: SnapshotLocation) -> bool:
        request = _request(candidates, location.kb_version)
        shipped = type(request)(**{**request.__dict__, "snapshot": location})
        return core.rerank_one(shipped).kb_version == location.kb_version

    first = _ship(index, endpoint, 1)
    assert _wait_until(lambda: at(first), 20.0), core.last_error
    first_copy = Path(core.describe()["index"])
    with core._lock:  # a request still answering at version 1 when version 2 is opened
        core._in_use[1] = core._in_use.get(1, 0) + 1
    second = _ship(index, endpoint, 2)
    assert _wait_until(lambda: at(second), 20.0), core.last_error
    assert kb_version(read_manifest(Path(core.describe()["index"]))) == 2
    assert not _wait_until(lambda: not first_copy.exists(), 1.0)  # kept while that request runs
    with core._lock:
        core._in_use[1] -= 1
    # no further request or reopen: the copy goes once the request is done and the version let go
    assert _wait_until(lambda: not first_copy.exists(), 5.0)
    assert _names(first_copy.parent) == [f"v2-{second.object_id}"]
