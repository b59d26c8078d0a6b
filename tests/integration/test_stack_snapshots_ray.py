"""`skbqa stack up --snapshots` with the reranker on Ray Serve (the stack's default): the reranker service runs on an
index directory of its own, and so does its Ray replica (the service's directory, as a Ray pod has the copy its
init container pulled). After a batch, the reranker service fetches the version and tells the Ray replica where it
was shipped (`RerankRequest.snapshot`); the replica fetches it into a directory of its own and af answers move
from in process (degraded) to Ray, equal to the embedded engine's on the updater's final index."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("boto3")
pytest.importorskip("ray.serve")

from skbqa.changes.snapshot import kb_version
from skbqa.stores.index import read_manifest
from tests.integration.test_distributed_ray_updates import takes_changes_on_ray
from tests.integration.test_stack_snapshots import stack_over_a_copy

pytestmark = [pytest.mark.distributed, pytest.mark.kafka, pytest.mark.ray, pytest.mark.slow]
pytestmark += [pytest.mark.timeout(900)]


def test_the_ray_replica_fetches_the_shipped_version(biomed_sample_engine, onnx_encoder, tmp_path: Path) -> None:
    source = biomed_sample_engine.stores.directory
    with stack_over_a_copy(source, tmp_path, snapshots="own", ray=True) as stack:
        takes_changes_on_ray(stack, onnx_encoder)
        reranker = next(r for r in stack.records if r.name == "reranker-0")
        own: Any = Path(reranker.argv[reranker.argv.index("--index") + 1])
        assert own == stack.directory / "replicas" / "reranker-0" / "index"
        assert kb_version(read_manifest(own)) == 0  # the directory the Ray replica was deployed on never changed
        copies = sorted(p.name for p in (own.parent / "index.ray-versions").glob("replica-*/v*"))
        assert copies and copies[-1].startswith("v1-"), copies  # the Ray replica's own fetched copy
