"""Shipped snapshots' small parts (docs/updates.md "Shipped snapshots"): the location a version record carries
(backward compatible: none means the shared directory; an unreadable one is skipped, never guessed at), the
replica's sweep of local copies, and the `--snapshots` setting's one-line refusals."""

from __future__ import annotations

import pytest

from skbqa.cli.main import main
from skbqa.ingest.snapshot_fetch import SnapshotFetcher, SnapshotLocation

GOOD = {"url": "s3://kb/live", "id": "0123456789abcdef", "kb_version": 3}


def test_a_location_round_trips_and_a_record_without_one_means_the_shared_directory() -> None:
    location = SnapshotLocation.from_record({"kind": "updater", "published": 3, "snapshot": GOOD})
    assert location == SnapshotLocation("s3://kb/live", "0123456789abcdef", 3)
    assert SnapshotLocation.from_record({"snapshot": location.to_record()}) == location
    assert SnapshotLocation.from_record({"kind": "updater", "accepted": 3, "published": 3}) is None


@pytest.mark.parametrize(
    "bad",
    [
        {**GOOD, "url": "http://kb/live"},
        {**GOOD, "id": "../../etc"},
        {**GOOD, "kb_version": "three"},
        {"url": "s3://kb/live"},
        "s3://kb/live",
    ],
)
def test_an_unreadable_location_is_skipped(bad: object) -> None:
    assert SnapshotLocation.from_record({"snapshot": bad}) is None


def test_the_sweep_keeps_held_and_newer_copies_only(tmp_path) -> None:
    fetcher = SnapshotFetcher(tmp_path / "index")
    names = ["v1-0123456789abcdef", "v2-0123456789abcdef", "v3-0123456789abcdef", ".v4-x.ingest-1@h-abc", "junk"]
    for name in names:
        (fetcher.root / name).mkdir(parents=True)
    fetcher.sweep({fetcher.root / "v2-0123456789abcdef"}, current=2)
    assert sorted(p.name for p in fetcher.root.iterdir()) == ["v2-0123456789abcdef", "v3-0123456789abcdef"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--role", "ranking", "--snapshots", "s3://kb/live"], "--snapshots is the updater's setting"),
        (["--role", "updater", "--snapshots", "http://kb/live"], "must be s3://BUCKET[/PREFIX]"),
    ],
)
def test_bad_snapshot_settings_are_one_line_with_exit_2(tmp_path, capsys, argv: list[str], message: str) -> None:
    assert main(["serve", "--index", str(tmp_path), "--bus", "kafka://127.0.0.1:1", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err
