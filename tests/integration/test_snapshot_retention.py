"""Retention of shipped snapshots (docs/updates.md "What the store keeps"), against the stack's own S3 server
(`devstack.s3_files`, in this process on 127.0.0.1) and moto's, through boto3.

The updater ships a version per fold; with `keep=K` the store holds only the newest K after each ship, never the
one served or LATEST's, and nothing outside `PREFIX/versions/<id>/`. A replica fetching a version that retention
deletes (before or during its fetch) gets a one-line `VersionGoneError` and its fetcher moves to the newest.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("boto3")

from skbqa.changes.format import parse_change
from skbqa.changes.retention import prune_versions
from skbqa.changes.shipping import SnapshotShipper
from skbqa.changes.updater import IndexUpdater
from skbqa.cli.main import main
from skbqa.common.errors import InvalidInputError
from skbqa.ingest.builder import ingest
from skbqa.ingest.object_store import VersionGoneError, pull_index, s3_client
from skbqa.ingest.snapshot_fetch import SnapshotFetcher, SnapshotLocation
from skbqa.stores.index import kb_version, read_manifest, verify_files
from tests.helpers import HashingEncoder, write_bundle
from tests.integration.moto_s3 import moto_s3
from tests.unit.test_s3_files import own_s3

BUCKET = "tansu"
URL = f"s3://{BUCKET}/kb"
KEEP = 3
# objects retention must never touch: the pointer, other prefixes (one sharing the first letters), keys under
# versions/ that are not a version's, and a version-shaped key of another prefix
FOREIGN = (
    "kb/notes.txt",
    "kb/versions/readme.txt",
    "kb-other/versions/0123456789abcdef/manifest.json",
    "kbx/versions/0123456789abcdef/graph.bin",
    "other/file",
)


@pytest.fixture(params=["files", "moto"])
def endpoint(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    if request.param == "files":
        yield from own_s3(tmp_path / "objects", monkeypatch)
    else:
        with moto_s3(BUCKET) as url:
            client = s3_client(url)  # moto's servers in one process share their objects: start empty
            for key in _objects(client):
                client.delete_object(Bucket=BUCKET, Key=key)
            yield url


@pytest.fixture
def own_endpoint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    yield from own_s3(tmp_path / "objects", monkeypatch)


@pytest.fixture
def index(tmp_path: Path) -> Path:
    target = tmp_path / "updater" / "index"
    ingest(write_bundle(tmp_path / "bundle"), target, HashingEncoder(), progress=False)
    return target


def _fold(updater: IndexUpdater, n: int) -> None:
    """One batch (a renamed author), folded: the shipper pushes before the swap and prunes after it."""
    change = {"op": "upsert_node", "node": {"id": 1, "type": "author", "name": f"Author {n}", "attrs": {}}}
    updater.submit([(1, parse_change(change, "test", 1))], "test")
    updater.snapshot()


def _objects(client: Any, prefix: str = "") -> dict[str, int]:
    found: dict[str, int] = {}
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix):
        found.update({entry["Key"]: int(entry["Size"]) for entry in page.get("Contents", [])})
    return found


def _versions(client: Any) -> set[str]:
    return {key.split("/")[2] for key in _objects(client, "kb/versions/") if len(key.split("/")) > 3}


def _ship(index: Path, client: Any, folds: int, keep: int = KEEP) -> tuple[SnapshotShipper, list[str], int]:
    """Ship the index's version and `folds` more; (the shipper, every version id shipped in order, the bytes all
    of them would hold without retention)."""
    shipper = SnapshotShipper(URL, client=client, keep=keep)
    shipped = [shipper.ensure(index).object_id]
    total = sum(_objects(client, "kb/versions/").values())
    updater = IndexUpdater(index, HashingEncoder(), mirror=shipper)
    try:
        for n in range(folds):
            before = _objects(client, "kb/versions/")
            _fold(updater, n)
            assert shipper.shipped is not None
            shipped.append(shipper.shipped.object_id)
            total += sum(size for key, size in _objects(client, "kb/versions/").items() if key not in before)
    finally:
        updater.close()
    return shipper, shipped, total


def test_after_k_plus_2_ships_only_the_newest_k_are_kept_and_nothing_else_is_touched(
    index: Path, endpoint: str, capsys: pytest.CaptureFixture[str]
) -> None:
    client = s3_client(endpoint)
    for key in FOREIGN:
        client.put_object(Bucket=BUCKET, Key=key, Body=b"not a shipped version")
    shipper, shipped, total = _ship(index, client, KEEP + 2)

    assert len(set(shipped)) == KEEP + 3  # version 0 and K + 2 folds
    assert _versions(client) == set(shipped[-KEEP:])  # the oldest three are gone, the newest K whole
    assert shipper.shipped is not None and shipper.shipped.object_id == shipped[-1]  # served = just shipped
    assert kb_version(read_manifest(index)) == KEEP + 2
    for key in FOREIGN:
        assert client.get_object(Bucket=BUCKET, Key=key)["Body"].read() == b"not a shipped version"
    for version in shipped[-KEEP:]:  # each kept version is whole: a fresh pull verifies every file
        pull_index(URL, index.parent.parent / "pulled" / version, client=client, version=version)
    kept = sum(_objects(client, "kb/versions/").values())
    with capsys.disabled():
        print(f"\nretention keep={KEEP}, {len(shipped)} ships: {total} bytes without retention, {kept} kept")


def test_the_served_version_and_latests_are_never_deleted_even_when_older_than_the_newest_k(
    index: Path, endpoint: str
) -> None:
    client = s3_client(endpoint)
    _, shipped, _ = _ship(index, client, 2, keep=5)
    # a served version older than the newest one (as for an updater that restarted behind the store's LATEST)
    pruned = prune_versions(client, URL, 1, protect={shipped[0]})
    assert set(pruned.deleted) == {shipped[1]} and _versions(client) == {shipped[0], shipped[2]}
    client.put_object(Bucket=BUCKET, Key="kb/LATEST", Body=f'{{"version": "{shipped[0]}"}}'.encode())
    pruned = prune_versions(client, URL, 1, protect=())
    assert _versions(client) == {shipped[0], shipped[2]} and pruned.deleted == ()


def test_a_reingest_published_to_the_same_prefix_is_newer_than_every_fold_before_it(
    index: Path, endpoint: str, tmp_path: Path
) -> None:
    """A re-ingest starts again at knowledge-base version 0: ordered by version alone, the old ingest's folds
    would be kept and the new one's deleted."""
    client = s3_client(endpoint)
    _, old, _ = _ship(index, client, 3, keep=10)
    time.sleep(1.1)  # manifests carry the ingest's time in whole seconds
    again = tmp_path / "reingest" / "index"
    ingest(write_bundle(tmp_path / "bundle-again"), again, HashingEncoder(), progress=False)
    _, new, _ = _ship(again, client, 1, keep=3)
    assert _versions(client) == {*new, old[-1]}  # the newest of the old ingest is the third kept


@pytest.mark.parametrize("keep", [0, -1, 2.5, True])
def test_keeping_fewer_than_one_version_is_refused(keep: Any) -> None:
    with pytest.raises(InvalidInputError, match="--snapshots-keep must be an integer of at least 1"):
        SnapshotShipper(URL, keep=keep)


def test_the_keep_setting_is_refused_in_one_line_with_exit_2(tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("SKBQA_SNAPSHOTS_KEEP", "0")
    argv = ["serve", "--index", str(tmp_path), "--bus", "kafka://127.0.0.1:1", "--role", "updater"]
    assert main([*argv, "--snapshots", URL]) == 2
    err = capsys.readouterr().err.strip()
    assert (
        len(err.splitlines()) == 1
        and "--snapshots-keep must be an integer of at least 1" in err
        and err.endswith("got 0")
    )


class _DeletingMidFetch:
    """A boto3 client whose second file download first lets retention delete the version being fetched."""

    def __init__(self, client: Any, prune: Any) -> None:
        self._client, self._prune, self.downloads = client, prune, 0

    def download_file(self, *args: Any, **kwargs: Any) -> None:
        self.downloads += 1
        if self.downloads == 2:
            self._prune()
        self._client.download_file(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


def test_a_version_deleted_before_or_during_its_fetch_is_a_clear_error_and_the_newest_is_fetched(
    index: Path, endpoint: str, tmp_path: Path
) -> None:
    client = s3_client(endpoint)
    shipper, shipped, _ = _ship(index, client, 2, keep=5)
    fetcher = SnapshotFetcher(tmp_path / "replica" / "index", endpoint_url=endpoint)
    old, newest = SnapshotLocation(URL, shipped[0], 0), SnapshotLocation(URL, shipped[2], 2)
    # during: the version is deleted after its first file came down
    fetcher._client = _DeletingMidFetch(client, lambda: prune_versions(client, URL, 1, protect={shipped[2]}))
    copy = fetcher.fetch(old)
    assert fetcher._client.downloads > 2  # the old version's pull was cut short, then the newest came down
    assert copy == fetcher.target(newest) and kb_version(read_manifest(copy)) == 2
    verify_files(copy, read_manifest(copy))
    assert sorted(p.name for p in fetcher.root.iterdir()) == [copy.name]  # no half-made work directory left
    # before: the version is gone already; the pull says so in one line, naming what is gone and what to do
    with pytest.raises(VersionGoneError) as refused:
        pull_index(URL, tmp_path / "other", client=client, version=shipped[1])
    message = str(refused.value)
    assert len(message.splitlines()) == 1
    assert f"version {shipped[1]} is no longer in the store" in message and "fetch the newest version" in message
    assert fetcher.fetch(SnapshotLocation(URL, shipped[1], 1)) == copy  # the fetcher takes the newest instead
    assert shipper.shipped is not None and shipper.shipped.object_id == shipped[2]


def test_the_own_server_deletes_in_batches(own_endpoint: str) -> None:
    client = s3_client(own_endpoint)
    for n in range(5):
        client.put_object(Bucket=BUCKET, Key=f"a/{n}", Body=b"x")
    reply = client.delete_objects(
        Bucket=BUCKET, Delete={"Objects": [{"Key": "a/0"}, {"Key": "a/1"}, {"Key": "a/absent"}], "Quiet": False}
    )
    assert {d["Key"] for d in reply.get("Deleted", [])} == {"a/0", "a/1", "a/absent"}
    assert not reply.get("Errors")
    reply = client.delete_objects(Bucket=BUCKET, Delete={"Objects": [{"Key": "a/2"}], "Quiet": True})
    assert not reply.get("Deleted") and not reply.get("Errors")
    assert sorted(_objects(client, "a/")) == ["a/3", "a/4"]


def test_concurrent_readers_see_whole_versions_or_a_clear_error(
    index: Path, endpoint: str, tmp_path: Path
) -> None:
    """Pulls of the oldest version racing its deletion: each ends with a verified copy or VersionGoneError."""
    client = s3_client(endpoint)
    _, shipped, _ = _ship(index, client, 1, keep=5)
    outcomes: list[str] = []

    def pull(n: int) -> None:
        try:
            pull_index(URL, tmp_path / "race" / str(n), client=s3_client(endpoint), version=shipped[0])
            outcomes.append("whole")
        except VersionGoneError:
            outcomes.append("gone")

    threads = [threading.Thread(target=pull, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    prune_versions(client, URL, 1, protect={shipped[1]})
    for thread in threads:
        thread.join(30)
    assert len(outcomes) == 4 and set(outcomes) <= {"whole", "gone"}
    for n in range(4):
        copy = tmp_path / "race" / str(n)
        if copy.exists():
            verify_files(copy, read_manifest(copy))
