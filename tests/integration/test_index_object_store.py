"""`skbqa index push|pull` against a real S3 server (moto's, over HTTP): the fetched index answers exactly as the
published one, an unchanged version is not fetched again, damage is refused by file name with the previous
index left serving, and a missing publication is a one-line error."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from skbqa.cli.main import main
from skbqa.common.errors import IndexStoreError
from skbqa.engine.embedded import EmbeddedEngine
from skbqa.ingest.object_store import pull_index, push_index, s3_client
from tests.conftest import SAMPLE_BUNDLE
from tests.integration.moto_s3 import moto_s3

QUESTIONS = [json.loads(line)["question"] for line in (SAMPLE_BUNDLE / "qa.jsonl").read_text().splitlines()]


@pytest.fixture()
def s3() -> Iterator[str]:
    with moto_s3("indexes") as endpoint:
        yield endpoint


def test_a_pulled_index_answers_as_the_published_one(s3, biomed_sample_engine, tmp_path) -> None:
    source = biomed_sample_engine.stores.directory
    pushed = push_index(source, "s3://indexes/biomed/sample", endpoint_url=s3)
    target = tmp_path / "pod" / "index"
    pulled = pull_index("s3://indexes/biomed/sample", target, endpoint_url=s3)
    assert pulled.version == pushed.version and pulled.files == pushed.files and not pulled.skipped
    engine = EmbeddedEngine.open(target)
    for question in QUESTIONS[:5]:
        assert [i.node_id for i in engine.ask(question, k=10).items] == [
            i.node_id for i in biomed_sample_engine.ask(question, k=10).items
        ]
    again = pull_index("s3://indexes/biomed/sample", target, endpoint_url=s3)
    assert again.skipped and again.files == 0
    # the CLI: the same, as a pod's init container runs it
    assert (
        main(
            ["index", "pull", "--from", "s3://indexes/biomed/sample", "--index", str(target), "--endpoint-url", s3]
        )
        == 0
    )


def test_damage_is_refused_by_name_and_the_previous_index_stays(s3, biomed_sample_engine, tmp_path) -> None:
    source = biomed_sample_engine.stores.directory
    url = "s3://indexes/damaged"
    pushed = push_index(source, url, endpoint_url=s3)
    target = tmp_path / "index"
    pull_index(url, target, endpoint_url=s3)
    before = sorted(p.name for p in target.rglob("*"))
    # a newer publication whose graph object was truncated in the store
    client = s3_client(s3)
    key = f"damaged/versions/{pushed.version}/graph/graph.npz"
    body = client.get_object(Bucket="indexes", Key=key)["Body"].read()
    client.put_object(Bucket="indexes", Key=key, Body=body[: len(body) // 2])
    (target / "manifest.json").write_text(
        (target / "manifest.json").read_text().replace('"created_unix"', '"created_unix_"')
    )
    with pytest.raises(IndexStoreError, match=r"graph\.npz: index file is damaged"):
        pull_index(url, target, endpoint_url=s3)
    assert sorted(p.name for p in target.rglob("*")) == before  # nothing half-fetched replaced it
    assert not [p for p in target.parent.iterdir() if p.name.startswith(".index.ingest-")]


def test_nothing_published_is_one_line_with_exit_1(s3, tmp_path, capsys) -> None:
    assert (
        main(
            ["index", "pull", "--from", "s3://indexes/none", "--index", str(tmp_path / "i"), "--endpoint-url", s3]
        )
        == 1
    )
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "not found; has an index been published?" in err
    assert main(["index", "pull", "--from", "http://x/y", "--index", str(tmp_path / "i")]) == 2
    assert "s3://BUCKET" in capsys.readouterr().err


def test_pull_wait_fetches_once_the_index_is_published(s3, biomed_sample_engine, tmp_path, monkeypatch) -> None:
    """A pod's init container started before the ingest Job has published: it waits, then fetches."""
    import threading

    from skbqa.cli import index_store

    monkeypatch.setattr(index_store, "WAIT_STEP_S", 0.2)
    target = tmp_path / "index"
    argv = [
        "index",
        "pull",
        "--from",
        "s3://indexes/later",
        "--index",
        str(target),
        "--endpoint-url",
        s3,
        "--wait",
    ]
    outcome: list[int] = []
    waiter = threading.Thread(target=lambda: outcome.append(main(argv)))
    waiter.start()
    waiter.join(timeout=1.0)
    assert waiter.is_alive() and not target.exists()  # still waiting: nothing published
    push_index(biomed_sample_engine.stores.directory, "s3://indexes/later", endpoint_url=s3)
    waiter.join(timeout=60)
    assert outcome == [0] and (target / "manifest.json").is_file()
