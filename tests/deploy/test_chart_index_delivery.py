"""index.delivery objectStore (helm/skbqa/ci/object-store-values.yaml): no PVC; the ingest Job builds the index on
its own scratch volume and publishes it; every pod that reads the index (services and Ray) fetches it onto an
emptyDir of its own before it starts; NetworkPolicies let exactly those pods reach the store; the schema refuses
objectStore without a URL."""

from __future__ import annotations

from typing import Any

import pytest

from tests.deploy.test_chart import (
    CHART,
    SERVICES,
    all_containers,
    arg_after,
    helm,
    objects,
    pod_specs,
    render_ci,
)

CI = "object-store-values.yaml"
URL = "s3://skbqa-indexes/biomed-sample"


@pytest.fixture(scope="module")
def rendered() -> dict[str, list[dict[str, Any]]]:
    return {CI: render_ci(CI)}


def _index_volume(spec: dict[str, Any]) -> dict[str, Any]:
    return next(v for v in spec["volumes"] if v["name"] == "index")


def test_no_claim_and_every_index_reader_fetches_onto_its_own_volume(rendered) -> None:
    assert not objects(rendered, CI, "PersistentVolumeClaim")
    readers = 0
    for obj in rendered[CI]:
        for where, spec, _ in pod_specs(obj):
            if not any(v["name"] == "index" for v in spec.get("volumes", [])) or obj["kind"] == "Job":
                continue
            readers += 1
            assert _index_volume(spec) == {"name": "index", "emptyDir": {"sizeLimit": "4Gi"}}, where
            (fetch,) = [c for c in spec.get("initContainers", []) if c["name"] == "fetch-index"]
            assert fetch["command"] == ["skbqa"] and fetch["args"][:2] == ["index", "pull"], where
            assert arg_after(fetch["args"], "--from") == URL and "--wait" in fetch["args"]
            assert {"name": "SKBQA_S3_ENDPOINT_URL", "value": "http://minio.storage.svc:9000"} in fetch["env"]
            assert fetch["envFrom"] == [{"secretRef": {"name": "skbqa-object-store"}}]
            mounts = {m["name"]: m for m in fetch["volumeMounts"]}
            assert not mounts["index"].get("readOnly")
            for container in spec["containers"]:
                index_mount = [m for m in container.get("volumeMounts", []) if m["name"] == "index"]
                assert all(m.get("readOnly") for m in index_mount), where  # the services only read it
    assert readers >= len(SERVICES) + 2  # six services, the Ray head and its workers


def test_the_ingest_job_builds_then_publishes(rendered) -> None:
    (job,) = [o for o in objects(rendered, CI, "Job") if o["metadata"]["name"] != "skbqa-topics"]
    spec = job["spec"]["template"]["spec"]
    assert [c["name"] for c in spec["initContainers"]] == ["ingest"]
    (publish,) = spec["containers"]
    assert publish["name"] == "publish-index" and publish["args"][:2] == ["index", "push"]
    assert arg_after(publish["args"], "--to") == URL
    assert _index_volume(spec) == {"name": "index", "emptyDir": {"sizeLimit": "4Gi"}}
    assert all(c["securityContext"]["readOnlyRootFilesystem"] for c in all_containers(spec))


def test_network_policies_open_the_store_to_exactly_the_index_readers(rendered) -> None:
    store_port = {"protocol": "TCP", "port": 9000}
    reach = {}
    for policy in objects(rendered, CI, "NetworkPolicy"):
        egress = policy["spec"].get("egress") or []
        reach[policy["metadata"]["name"].rsplit("-", 1)[-1]] = any(
            store_port in r.get("ports", []) for r in egress
        )
    for component in (*SERVICES, "ray", "ingest"):
        assert reach.get(component), component
    assert not reach.get("dns") and not reach.get("deny")


def test_the_schema_wants_an_s3_url_with_object_store() -> None:
    with helm.Chart.load(str(CHART)) as chart:
        for bad in (
            {"index": {"delivery": "objectStore"}},
            {"index": {"delivery": "objectStore", "objectStore": {"url": "http://not-s3"}}},
            {"index": {"delivery": "nfs"}},
        ):
            with pytest.raises(helm.HelmError):
                chart.validate_schema(bad)
        chart.validate_schema({"index": {"delivery": "objectStore", "objectStore": {"url": URL}}})
