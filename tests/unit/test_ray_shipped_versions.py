"""A Ray reranker replica on an index directory of its own takes shipped snapshots, without Ray: a `RerankerCore`
(what a replica runs) asked at a version its directory does not show fetches it from where the request says it was
shipped (`RerankRequest.snapshot`, filled in by the caller's `RayOrInProcess` from the copy its own stage replica
fetched), into a directory of its own, and then answers exactly like an in-process reranker on the new version.
The store is the stack's file-backed S3 server (`devstack.s3_files`), in this process on 127.0.0.1."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("boto3")

from skbqa.ingest.object_store import push_index, version_of
from skbqa.ingest.snapshot_fetch import SnapshotLocation
from skbqa.query.context import QueryContext
from skbqa.serving import runtime
from skbqa.serving.settings import ServiceSettings
from skbqa.stages.rerank.ray_fallback import RayOrInProcess
from skbqa.stages.rerank.ray_serve import RayRerankerSettings, RayServeReranker, RerankerCore
from skbqa.stores.index import kb_version, open_index, read_manifest
from tests.helpers import HashingEncoder
from tests.unit.test_ray_versions import (
    QUESTION,
    InProcessHandle,
    _candidates,
    _change,
    _in_process,
    _request,
    _wait_until,
    index,  # noqa: F401 (a fixture)
)
from tests.unit.test_s3_files import own_s3

URL = "s3://tansu/kb"


@pytest.fixture
def endpoint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The S3 server's URL, serving bucket "tansu" (test_s3_files' server), with the credentials boto3 needs."""
    yield from own_s3(tmp_path / "objects", monkeypatch)


def _ship_a_new_version(updater_index: Path, endpoint: str) -> SnapshotLocation:
    """Version 1 folded into the updater's directory and pushed, as the updater's `--snapshots` does."""
    _change(updater_index)
    push_index(updater_index, URL, endpoint_url=endpoint)
    return SnapshotLocation(URL, version_of((updater_index / "manifest.json").read_bytes()), 1)


def test_a_replica_fetches_the_version_the_request_names_into_a_directory_of_its_own(
    index: Path,  # noqa: F811
    endpoint: str,
    tmp_path: Path,
) -> None:
    own = shutil.copytree(index, tmp_path / "ray-pod" / "index")  # what the Ray pod's init container pulled
    core = RerankerCore(own, RayRerankerSettings("local", s3_endpoint_url=endpoint), encoder=HashingEncoder())
    location = _ship_a_new_version(index, endpoint)
    new = open_index(index)
    candidates = _candidates(new)

    # without a location the replica can only look at its own directory, which never shows version 1
    assert core.rerank_one(_request(candidates, 1)).kb_version == 0
    assert _wait_until(lambda: core._reopening is None, 10.0)
    assert core.version == 0 and core.last_error == ""

    request = _request(candidates, 1)
    shipped = type(request)(**{**request.__dict__, "snapshot": location})
    assert core.rerank_one(shipped).kb_version == 0  # not held yet: fetched and opened in the background
    # (requests keep coming, as calls do: a reopen is tried at most once per REOPEN_EVERY_S)
    assert _wait_until(lambda: core.rerank_one(shipped).kb_version == 1, 20.0), core.last_error
    served = core.rerank_one(shipped)
    assert served.kb_version == 1 and served.note == ""
    assert [(p, s) for p, s in zip(served.positions, served.scores, strict=True)] == _in_process(new, candidates)
    copy = Path(core.describe()["index"])
    assert copy.parent.parent == own.parent / "index.ray-versions" and copy.name == f"v1-{location.object_id}"
    assert kb_version(read_manifest(own)) == 0  # its own directory is untouched


def test_the_caller_passes_its_versions_location_and_the_replica_moves_to_ray(
    index: Path,  # noqa: F811
    endpoint: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What a reranker stage replica builds for a fetched version (`start_stage`: `build_runtime(...,
    snapshot=fetcher.location_of(copy))`): its rerankers send the location, so the Ray replica catches up."""
    monkeypatch.setattr(runtime, "attach_ray", lambda settings, rerankers: None)
    own = shutil.copytree(index, tmp_path / "ray-pod" / "index")
    stage_copy = shutil.copytree(index, tmp_path / "stage" / "index")
    settings = ServiceSettings(index=stage_copy, role="reranker", ray_address="local")
    first = runtime.build_runtime(settings, HashingEncoder())
    location = _ship_a_new_version(index, endpoint)
    fetched = shutil.copytree(index, tmp_path / "stage" / "index.versions" / f"v1-{location.object_id}")
    second = runtime.build_runtime(
        ServiceSettings(index=fetched, role="reranker", ray_address="local"),
        first.encoder,
        served=first,
        snapshot=location,
    )
    one, two = first.af.rerank.rerankers["local"], second.af.rerank.rerankers["local"]
    assert isinstance(one, RayOrInProcess) and isinstance(two, RayOrInProcess)
    assert (two.kb_version, two.snapshot) == (1, location)
    core = RerankerCore(own, RayRerankerSettings("local", s3_endpoint_url=endpoint), encoder=HashingEncoder())
    try:
        one.attach(RayServeReranker(InProcessHandle(core), "local", timeout_s=5.0))
        assert _wait_until(lambda: two.on_ray)
        candidates = _candidates(second.stores)
        first_answer = two.rerank(QueryContext(QUESTION, HashingEncoder()), None, candidates)
        assert "answered at 1 in process" in first_answer.degraded  # the replica fetches meanwhile
        retry = QueryContext(QUESTION, HashingEncoder())
        assert _wait_until(lambda: two.rerank(retry, None, candidates).degraded == "", 20.0), core.last_error
        outcome = two.rerank(QueryContext(QUESTION, HashingEncoder()), None, candidates)
        assert outcome.degraded == ""  # on Ray, at version 1
        assert [(c.position, c.scores) for c in outcome.candidates] == _in_process(second.stores, candidates)
    finally:
        one.close()
