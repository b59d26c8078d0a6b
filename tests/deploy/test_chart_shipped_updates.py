"""Live updates without a shared volume (helm/skbqa/ci/shipped-updates-values.yaml: updates.enabled with index.delivery
objectStore and an external Milvus): the updater, on a ReadWriteOnce volume of its own that a re-ingest generation
starts afresh, ships each snapshot to the object store the ingest Job publishes to (`--snapshots`, read back by
`skbqa serve`'s own parser); every stage gets the store's endpoint and credentials and a writable copy to fetch
versions beside; the gateway stays read-only; and the updater gets Milvus (`--vectors`, the token, egress), which
the chart no longer refuses."""

from __future__ import annotations

from typing import Any

import pytest

from tests.deploy.test_chart import CHART, _skbqa_args, helm, one, render_ci, values_of
from tests.deploy.test_chart_updater import UPDATER, _env, _pod, _render, _serve_settings

CI = "shipped-updates-values.yaml"
URL = "s3://skbqa-indexes/biomed-sample"
STAGES = ("parser", "symbols", "grounding", "ranking", "reranker")


@pytest.fixture(scope="module")
def rendered() -> dict[str, list[dict[str, Any]]]:
    return {CI: render_ci(CI)}


def _main(rendered: dict[str, list[dict[str, Any]]], name: str) -> dict[str, Any]:
    return _pod(one(rendered, CI, "Deployment", name))["containers"][0]


def _index_mount(container: dict[str, Any]) -> dict[str, Any]:
    return {m["name"]: m for m in container["volumeMounts"]}["index"]


def test_the_updater_ships_to_the_published_location_from_a_volume_of_its_own(rendered) -> None:
    settings = _serve_settings(_main(rendered, UPDATER))
    assert settings.role == "updater" and settings.snapshots_url == URL and settings.snapshots_keep == 3
    assert settings.s3_endpoint_url == "http://minio.storage.svc:9000"
    assert str(settings.index) == "/index/generation-1/current"  # a new ingest generation: a fresh start
    pod = _pod(one(rendered, CI, "Deployment", UPDATER))
    claim = {v["name"]: v for v in pod["volumes"]}["index"]["persistentVolumeClaim"]["claimName"]
    pvc = one(rendered, CI, "PersistentVolumeClaim", claim)
    assert (
        pvc["spec"]["accessModes"] == ["ReadWriteOnce"]
        and pvc["spec"]["resources"]["requests"]["storage"] == "20Gi"
    )
    (fetch,) = pod["initContainers"]
    args = fetch["args"]
    # fetched once: on a restart its volume holds newer versions and the change log, which a pull would replace
    assert (
        args[:2] == ["index", "pull"]
        and "--keep" in args
        and args[args.index("--index") + 1] == str(settings.index)
    )
    assert {"secretRef": {"name": "skbqa-object-store"}} in _main(rendered, UPDATER)["envFrom"]
    assert not _index_mount(_main(rendered, UPDATER)).get("readOnly")
    # no other PVC: the stages and the gateway fetch onto emptyDirs as with objectStore alone
    assert [o["metadata"]["name"] for o in rendered[CI] if o["kind"] == "PersistentVolumeClaim"] == [claim]


def test_the_keep_flag_leaves_an_index_in_place(tmp_path, capsys) -> None:
    """What the updater's init container does on a restart (no store is reached)."""
    main = pytest.importorskip("skbqa.cli.main")
    (tmp_path / "manifest.json").write_text("{}")
    argv = ["index", "pull", "--from", URL, "--index", str(tmp_path), "--keep"]
    assert main.main(argv) == 0 and "kept" in capsys.readouterr().out


@pytest.mark.parametrize("name", STAGES)
def test_every_stage_can_fetch_versions_beside_its_copy(rendered, name: str) -> None:
    container = _main(rendered, f"skbqa-{name}")
    settings = _serve_settings(container)
    assert settings.s3_endpoint_url == "http://minio.storage.svc:9000" and settings.snapshots_url is None
    assert {"secretRef": {"name": "skbqa-object-store"}} in container["envFrom"]
    assert not _index_mount(container).get("readOnly")  # the copies go beside the fetched index


def test_the_gateway_stays_read_only(rendered) -> None:
    container = _main(rendered, "skbqa-gateway")
    assert _index_mount(container)["readOnly"] is True and "envFrom" not in container
    assert "SKBQA_S3_ENDPOINT_URL" not in _env(container)


def test_the_updater_loads_milvus_like_the_stages_that_search_it(rendered) -> None:
    container = _main(rendered, UPDATER)
    assert _serve_settings(container).vectors_url == "milvus://milvus.vectors.svc:19530"
    assert _env(container)["SKBQA_MILVUS_TOKEN"]["valueFrom"]["secretKeyRef"]["name"] == "skbqa-milvus-token"
    egress = one(rendered, CI, "NetworkPolicy", UPDATER)["spec"]["egress"]
    ports = {p["port"] for rule in egress for p in rule.get("ports", [])}
    assert {9092, 19530, 9000} <= ports
    # on the shared volume too: Milvus is no longer refused with updates
    objs = _render({"updates": {"enabled": True}, "externalMilvus": {"url": "milvus://m.v.svc:19530"}})
    updater = next(o for o in objs if o["kind"] == "Deployment" and o["metadata"]["name"] == UPDATER)
    args = _skbqa_args(_pod(updater)["containers"][0]["args"])
    assert args.vectors == "milvus://m.v.svc:19530" and args.snapshots is None


def test_the_values_pass_the_schema() -> None:
    with helm.Chart.load(str(CHART)) as chart:
        chart.validate_schema(values_of(CHART / "ci" / CI))
        with pytest.raises(helm.HelmError):
            chart.validate_schema({"updates": {"storage": {"sizeGi": 20}}})
        for keep in (0, "3"):
            with pytest.raises(helm.HelmError):
                chart.validate_schema({"updates": {"snapshotsKeep": keep}})


def test_the_store_keeps_the_versions_the_values_say() -> None:
    values = values_of(CHART / "ci" / CI)
    values["updates"]["snapshotsKeep"] = 7
    updater = next(o for o in _render(values) if o["kind"] == "Deployment" and o["metadata"]["name"] == UPDATER)
    assert _serve_settings(_pod(updater)["containers"][0]).snapshots_keep == 7


def _ray_containers(rendered: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    from tests.deploy.crd_schemas import pod_templates

    ray = one(rendered, CI, "RayService", "skbqa-ray")
    return [template["spec"]["containers"][0] for template in pod_templates(ray)]


def test_ray_serve_replicas_fetch_shipped_versions_beside_their_copy(rendered) -> None:
    """The chart no longer refuses `ray.enabled` with shipped snapshots: each Ray pod (head and workers) gets what
    a Serve replica needs to fetch a version the reranker service names (ray_replica.py): the store's endpoint
    and credentials, and a writable index volume for the copies beside its own."""
    containers = _ray_containers(rendered)
    assert [c["name"] for c in containers] == ["ray-head", "ray-worker"]
    for container in containers:
        assert _env(container)["SKBQA_S3_ENDPOINT_URL"]["value"] == "http://minio.storage.svc:9000"
        assert {"secretRef": {"name": "skbqa-object-store"}} in container["envFrom"]
        assert not _index_mount(container).get("readOnly")
    reranker = _main(rendered, "skbqa-reranker")
    assert _serve_settings(reranker).ray_address  # the reranker service reranks on that Ray


def test_ray_pods_without_shipped_snapshots_stay_read_only() -> None:
    objs = _render(
        {
            "index": {"delivery": "objectStore", "objectStore": {"url": URL}},
            "ray": {"enabled": True, "autoscaling": False},
        }
    )
    (ray,) = [o for o in objs if o["kind"] == "RayService"]
    from tests.deploy.crd_schemas import pod_templates

    for template in pod_templates(ray):
        container = template["spec"]["containers"][0]
        assert _index_mount(container)["readOnly"] is True and "envFrom" not in container
        assert "SKBQA_S3_ENDPOINT_URL" not in _env(container)
