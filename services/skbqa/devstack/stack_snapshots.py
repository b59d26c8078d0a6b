"""`skbqa stack up --snapshots`: the local stack with shipped snapshots (docs/updates.md, "Shipped snapshots").

Without it every process of the stack opens the one index directory the updater writes. With it the stack runs as
a deployment on block storage does: the updater ships each folded snapshot to an object store (`--snapshots`), and
every other process (the gateway, each stage replica) has an index directory of its own under
`STACK_DIR/replicas/<name>/index`, first pulled from the store as the chart's init container does, and fetches each
new version it is told of beside it (`ingest.snapshot_fetch`). So the path the chart uses is exercised locally.

Which store: `--snapshots` alone runs the stack's own S3 server (`devstack.s3_files`, the durable broker's object
store, as a recorded process of the stack, its objects in `STACK_DIR/snapshots-data`); `--snapshots
s3://BUCKET/PREFIX` uses an external store reached through the usual AWS environment (credentials, region and
`AWS_ENDPOINT_URL` for MinIO and the like), which every process of the stack inherits.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skbqa.common.errors import InvalidInputError, clip

OWN = "own"  # `--snapshots` without a value: the stack's own S3 server
OWN_BUCKET = "skbqa-snapshots"
OWN_URL = f"s3://{OWN_BUCKET}/kb"
S3_PROCESS = "snapshots-s3"  # the own server's name in the state file (`stack status`, `stack restart`)
# boto3 needs credentials even for a server that checks no signature; the own server listens on loopback only
OWN_CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "skbqa-local",
    "AWS_SECRET_ACCESS_KEY": "skbqa-local",
    "AWS_DEFAULT_REGION": "us-east-1",
}


def parse_snapshots(value: str | None) -> str | None:
    """The stack's snapshot store from the option's value: None (off), OWN, or an s3://BUCKET/PREFIX URL. A bad
    value is refused in one line (the CLI exits 2)."""
    if value is None or value == OWN:
        return value
    from skbqa.ingest.object_store import Location

    if not value.startswith("s3://"):
        raise InvalidInputError(
            f"--snapshots takes no value (the stack's own S3 server) or s3://BUCKET/PREFIX, got '{clip(value)}'"
        )
    location = Location.parse(value)
    if not location.prefix:  # the bucket's root would mix the versions with whatever else the bucket holds
        raise InvalidInputError(f"--snapshots needs a prefix under the bucket: s3://{location.bucket}/PREFIX")
    return value


@dataclass(frozen=True)
class SnapshotStore:
    """Where the stack ships: `url`, and `endpoint` (the own server's URL; None: the AWS environment decides)."""

    url: str
    endpoint: str | None = None

    @property
    def env(self) -> dict[str, str]:
        """What the stack's services get on top of the stack's environment (recorded: a restart gets it too)."""
        return dict(OWN_CREDENTIALS) if self.endpoint else {}

    def options(self, role: str) -> list[str]:
        """`skbqa serve` options for a process of `role`: the updater ships, every other fetches."""
        argv = ["--snapshots", self.url] if role == "updater" else []
        return argv + (["--s3-endpoint-url", self.endpoint] if self.endpoint else [])

    def to_state(self) -> dict[str, Any]:
        return {"url": self.url, "endpoint": self.endpoint}

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> SnapshotStore | None:
        found = state.get("ports", {}).get("snapshots")
        return cls(found["url"], found.get("endpoint")) if found else None

    def describe(self) -> str:
        """`stack status`'s line."""
        where = f"the stack's own S3 server at {self.endpoint}" if self.endpoint else "the AWS environment's S3"
        return f"snapshots: shipped to {self.url} ({where}); each process fetches into its own index directory"


def own_server_argv(python: str, port: int, directory: Path) -> list[str]:
    """The own S3 server's command: the durable broker's file-backed server (devstack.s3_files), on loopback."""
    from skbqa.devstack.s3_files import server_argv

    return server_argv(python, port, directory, OWN_BUCKET)


def seed(index: Path, store: SnapshotStore) -> str:
    """Ship the version `index` holds unless the store has it (the updater's own start-up check, reused), so every
    process's directory can be pulled from the store; returns that version's id."""
    from skbqa.changes.shipping import SnapshotShipper

    return SnapshotShipper(store.url, endpoint_url=store.endpoint, client=_client(store)).ensure(index).object_id


def replica_index(directory: Path, name: str, store: SnapshotStore, version: str) -> Path:
    """The index directory of process `name`: pulled from the store at `version` the first time (as a pod's init
    container pulls), kept as it is afterwards (a restarted replica catches up by fetching)."""
    from skbqa.ingest.object_store import pull_index

    target = directory / "replicas" / name / "index"
    if not (target / "manifest.json").is_file():
        target.parent.mkdir(parents=True, exist_ok=True)
        pull_index(store.url, target, client=_client(store), version=version)
    return target


def _client(store: SnapshotStore) -> Any:
    from skbqa.ingest.object_store import s3_client

    if not store.endpoint:
        return s3_client(None)
    s3_client(store.endpoint)  # refuses in one line when boto3 is missing
    import boto3

    # the own server: the stack's credentials, without touching this process's environment
    return boto3.client(
        "s3",
        endpoint_url=store.endpoint,
        aws_access_key_id=OWN_CREDENTIALS["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=OWN_CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
        region_name=OWN_CREDENTIALS["AWS_DEFAULT_REGION"],
    )
