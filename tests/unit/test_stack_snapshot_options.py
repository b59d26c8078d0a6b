"""`skbqa stack up --snapshots`: what the option takes and refuses (one line, exit 2, before anything starts), and
what each process is started with (the updater ships, every other process fetches into a directory of its own)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("kafka")

from skbqa.cli.main import _parser, main
from skbqa.common.errors import InvalidInputError
from skbqa.devstack import stack_snapshots
from skbqa.devstack.stack import LocalStack, StackOptions
from skbqa.devstack.stack_snapshots import OWN, OWN_URL, SnapshotStore, parse_snapshots
from tests.unit.test_stack_options import index  # noqa: F401 (a fixture: a directory with a manifest)


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--index", "I"], None),
        (["--snapshots", "--index", "I"], OWN),  # no value: the next option is not taken for one
        (["--index", "I", "--snapshots"], OWN),
        (["--index", "I", "--snapshots", "s3://bucket/kb"], "s3://bucket/kb"),
    ],
)
def test_the_option_alone_means_the_stacks_own_server(argv: list[str], expected: str | None) -> None:
    assert _parser().parse_args(["stack", "up", *argv]).snapshots == expected


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("", "--snapshots takes no value .* or s3://BUCKET/PREFIX, got ''"),
        ("minio:9000/kb", "--snapshots takes no value .* got 'minio:9000/kb'"),
        ("s3://", "object store URL has no bucket"),
        ("s3://bucket", "--snapshots needs a prefix under the bucket: s3://bucket/PREFIX"),
        ("s3://bucket/", "needs a prefix"),
    ],
)
def test_bad_values_are_refused_in_one_line(value: str, message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        parse_snapshots(value)


def test_the_cli_exits_2_with_one_line_before_starting_anything(index: Path, capsys) -> None:  # noqa: F811
    stack_dir = index / "stack"
    code = main(["stack", "up", "--index", str(index), "--dir", str(stack_dir), "--snapshots", "ftp://x/y"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and err.startswith("skbqa: error: --snapshots takes no value")
    assert not stack_dir.exists()  # refused before anything started


def test_the_updater_ships_and_every_other_process_fetches_into_its_own_directory(
    index: Path,  # noqa: F811
    monkeypatch,
) -> None:
    stack = LocalStack(StackOptions(index=index, directory=index / "stack", snapshots=OWN))
    stack.directory.mkdir()
    stack.ports["bus"] = "kafka://127.0.0.1:9"
    stack.snapshots = SnapshotStore(OWN_URL, "http://127.0.0.1:4568")
    stack._snapshot_version = "0123456789abcdef"
    pulled: list[tuple[str, str]] = []

    def pull(directory: Path, name: str, store: SnapshotStore, version: str) -> Path:
        pulled.append((name, version))
        return directory / "replicas" / name / "index"

    monkeypatch.setattr(stack_snapshots, "replica_index", pull)
    started: dict[str, tuple[list[str], dict[str, str]]] = {}
    monkeypatch.setattr(
        stack, "_start", lambda name, argv, ports, env=None: started.__setitem__(name, (argv, env))
    )
    for role in ("gateway", "ranking", "updater"):
        stack.start_service(role, wait=False)

    updater, updater_env = started["updater-0"]
    assert updater[updater.index("--index") + 1] == str(index)  # the one writer keeps the stack's index
    assert updater[updater.index("--snapshots") + 1] == OWN_URL
    assert updater[updater.index("--s3-endpoint-url") + 1] == "http://127.0.0.1:4568"
    for name in ("gateway-0", "ranking-0"):
        argv, env = started[name]
        assert argv[argv.index("--index") + 1] == str(stack.directory / "replicas" / name / "index")
        assert "--snapshots" not in argv  # the updater's setting alone; replicas fetch what its records name
        assert argv[argv.index("--s3-endpoint-url") + 1] == "http://127.0.0.1:4568"
        assert env["AWS_ACCESS_KEY_ID"]  # boto3 needs credentials even for the own server
    assert updater_env == started["ranking-0"][1]
    assert pulled == [("gateway-0", "0123456789abcdef"), ("ranking-0", "0123456789abcdef")]
    assert stack.ports.get("snapshots") is None  # recorded by _start_snapshots, which this test skips


def test_an_external_store_passes_no_endpoint_and_no_credentials() -> None:
    store = SnapshotStore("s3://bucket/kb")
    assert store.options("updater") == ["--snapshots", "s3://bucket/kb"]
    assert store.options("ranking") == [] and store.env == {}  # the AWS environment, inherited, decides
    assert SnapshotStore.from_state({"ports": {"snapshots": store.to_state()}}) == store
    assert SnapshotStore.from_state({"ports": {}}) is None


def test_without_snapshots_every_process_shares_the_stacks_index(index: Path, monkeypatch) -> None:  # noqa: F811
    stack = LocalStack(StackOptions(index=index, directory=index / "stack"))
    stack.directory.mkdir()
    stack.ports["bus"] = "kafka://127.0.0.1:9"
    started: dict[str, list[str]] = {}
    monkeypatch.setattr(stack, "_start", lambda name, argv, ports, env=None: started.__setitem__(name, argv))
    stack.start_service("ranking", wait=False)
    argv = started["ranking-0"]
    assert argv[argv.index("--index") + 1] == str(index) and "--s3-endpoint-url" not in argv
