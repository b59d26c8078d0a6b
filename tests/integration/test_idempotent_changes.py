"""ApplyChanges' idempotency key on the embedded server, over real gRPC with tokens: a resend under the same key
gets the first answer and changes nothing, also after a restart (the key is in the change log); the same key
with another batch is refused; each token's keys are its own; a bad key is INVALID_ARGUMENT without its value
echoed; `skbqa update --server` sends a key, prints it, and a resend with `--idempotency-key` applies nothing."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
import pytest

from skbqa.changes.log import ChangeLog
from skbqa.serving.run import start_embedded
from skbqa.serving.settings import ServiceSettings
from skbqa.v1 import api_pb2, api_pb2_grpc

ADMIN_A, ADMIN_B = "admin-a-0123456789", "admin-b-0123456789"
NEW_ID = 10_000_001
ADD = api_pb2.Change(
    upsert_node=api_pb2.NodeRecord(
        id=NEW_ID, type="disease", name="zorblaxic fever syndrome", text="A rare disorder with recurrent fevers."
    )
)
DELETE = api_pb2.Change(delete_node=NEW_ID)


@pytest.fixture
def settings(biomed_sample_engine, tmp_path: Path) -> ServiceSettings:
    index = tmp_path / "index"
    shutil.copytree(biomed_sample_engine.stores.directory, index)
    (tmp_path / "tokens").write_text("asker-token-0123456789\n")
    (tmp_path / "admins").write_text(f"{ADMIN_A}\n{ADMIN_B}\n")
    (tmp_path / "admin-a").write_text(ADMIN_A + "\n")
    return ServiceSettings(
        index=index, port=0, tokens_file=tmp_path / "tokens", admin_tokens_file=tmp_path / "admins"
    )


class Api:
    def __init__(self, port: int) -> None:
        self.port = port
        self._channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        self._stub = api_pb2_grpc.SkbqaStub(self._channel)

    def send(
        self, token: str, *changes: api_pb2.Change, keys: tuple[str, ...] = ()
    ) -> api_pb2.ApplyChangesResponse:
        metadata = [("authorization", f"Bearer {token}"), *(("idempotency-key", key) for key in keys)]
        return self._stub.ApplyChanges(iter(changes), timeout=60, metadata=metadata)

    def accepted(self) -> int:
        status = self._stub.IndexStatus(
            api_pb2.IndexStatusRequest(), timeout=10, metadata=[("authorization", f"Bearer {ADMIN_A}")]
        )
        return int(status.accepted_version)

    def close(self) -> None:
        self._channel.close()


@pytest.fixture
def serve(settings: ServiceSettings) -> Iterator[Callable[[], Api]]:
    """Start (or restart) the embedded server on the fixture's index; every server started is stopped."""
    running: list[tuple[Api, Callable[[], None]]] = []

    def stop_all() -> None:
        for api, stop in running:
            api.close()
            stop()
        running.clear()

    def start() -> Api:
        stop_all()  # a restart: the previous server first
        server, stop = start_embedded(settings)
        running.append((Api(server.port), stop))
        return running[0][0]

    yield start
    stop_all()


def test_a_resend_under_the_same_key_is_answered_as_the_first_and_applies_nothing(serve, settings, capsys) -> None:
    api = serve()
    first = api.send(ADMIN_A, ADD, keys=("batch-0001",))
    assert (first.version, first.changes, dict(first.outcome)) == (1, 1, {"nodes added": 1})
    assert api.send(ADMIN_A, DELETE, keys=("batch-0002",)).version == 2
    # the acknowledgement of batch-0001 was lost: its resend gets the same answer, and the node stays deleted
    assert api.send(ADMIN_A, ADD, keys=("batch-0001",)) == first
    assert api.accepted() == 2 and [v for v, _ in ChangeLog(settings.index).batches()] == [1, 2]

    with pytest.raises(grpc.RpcError) as reused:
        api.send(ADMIN_A, DELETE, ADD, keys=("batch-0001",))
    assert reused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert reused.value.details() == "idempotency key already used for another batch"

    # another token's batch under the same key is its own: applied, and not answered with a's response
    of_b = api.send(ADMIN_B, ADD, keys=("batch-0001",))
    assert (of_b.version, dict(of_b.outcome)) == (3, {"nodes added": 1})

    for keys in (("",), ("k" * 129,), ("twice", "twice")):
        with pytest.raises(grpc.RpcError) as refused:
            api.send(ADMIN_A, DELETE, keys=keys)
        assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "idempotency-key" in refused.value.details() and "kkkk" not in refused.value.details()
        assert "twice" not in refused.value.details()
    with pytest.raises(grpc.RpcError) as asker:  # the admin scope is checked before the key
        api.send("asker-token-0123456789", DELETE, keys=("",))
    assert asker.value.code() == grpc.StatusCode.PERMISSION_DENIED
    assert api.accepted() == 3

    # the CLI: a key of its own per invocation, printed; the same file resent under it applies nothing
    from skbqa.cli.main import main

    changes = settings.index.parent / "changes.jsonl"
    changes.write_text(json.dumps({"op": "delete_node", "id": NEW_ID}) + "\n")
    common = ["update", str(changes), "--server", f"127.0.0.1:{api.port}", "--token-file"]
    common += [str(settings.index.parent / "admin-a"), "--json"]
    assert main(common) == 0
    out, err = capsys.readouterr()
    summary = json.loads(out)
    assert summary["version"] == 4 and summary["idempotency_key"] in err
    assert main([*common, "--idempotency-key", summary["idempotency_key"]]) == 0
    assert json.loads(capsys.readouterr().out) == summary
    assert api.accepted() == 4


def test_a_key_is_honoured_after_a_restart(serve, settings) -> None:
    api = serve()
    of_a = api.send(ADMIN_A, ADD, keys=("batch-0001",))
    of_b = api.send(ADMIN_B, DELETE, keys=("batch-0001",))
    assert (of_a.version, of_b.version) == (1, 2)
    api = serve()  # a restart: the keys come back from the change log, and the tokens' scopes are the same
    assert api.send(ADMIN_A, ADD, keys=("batch-0001",)) == of_a
    assert api.send(ADMIN_B, DELETE, keys=("batch-0001",)) == of_b
    with pytest.raises(grpc.RpcError) as reused:
        api.send(ADMIN_B, ADD, keys=("batch-0001",))
    assert reused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert api.accepted() == 2 and [v for v, _ in ChangeLog(settings.index).batches()] == [1, 2]
