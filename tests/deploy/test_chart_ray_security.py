"""Ray under the restricted Pod Security Standard: the autoscaler sidecar KubeRay adds to the head gets a
securityContext of its own, and with NetworkPolicies on an autoscaling RayService needs the API server's CIDRs
(without them it could not scale, so the schema refuses the values)."""

from __future__ import annotations

import pytest

from tests.deploy.test_chart import CHART, helm, one, rendered  # noqa: F401  (the module's render fixture)

KUBERAY = "kuberay-gpu-loadgen-values.yaml"


def test_the_autoscaler_sidecar_is_restricted(rendered) -> None:  # noqa: F811
    ray = one(rendered, KUBERAY, "RayService", "skbqa-ray")
    context = ray["spec"]["rayClusterConfig"]["autoscalerOptions"]["securityContext"]
    assert context["allowPrivilegeEscalation"] is False and context["runAsNonRoot"] is True
    assert context["capabilities"] == {"drop": ["ALL"]} and context["privileged"] is False
    assert "readOnlyRootFilesystem" not in context  # Ray writes its logs under /tmp/ray


def test_an_autoscaling_ray_behind_network_policies_needs_the_api_server_cidrs() -> None:
    with helm.Chart.load(str(CHART)) as chart:
        with pytest.raises(helm.HelmError, match="apiServerCIDRs"):
            chart.validate_schema({"ray": {"enabled": True}})
        chart.validate_schema({"ray": {"enabled": True}, "networkPolicy": {"apiServerCIDRs": ["10.0.0.1/32"]}})
        chart.validate_schema({"ray": {"enabled": True, "autoscaling": False}})
        chart.validate_schema({"ray": {"enabled": True}, "networkPolicy": {"enabled": False}})


def test_notes_name_the_load_generator_that_is_rendered() -> None:
    """A bounded run is a Job named with its run id; NOTES.txt must point at that, not at a Deployment."""
    import yaml

    for values, kind in (
        ({"loadgen": {"enabled": True, "runTime": "5m"}}, "Job"),
        ({"loadgen": {"enabled": True}}, "Deployment"),
    ):
        with helm.Chart.load(str(CHART)) as chart:
            manifests = chart.render(values, name="skbqa", namespace="skbqa")
        names = [
            doc["metadata"]["name"]
            for doc in yaml.safe_load_all(manifests["skbqa/templates/loadgen.yaml"])
            if doc and doc["kind"] == kind
        ]
        notes = manifests["skbqa/templates/NOTES.txt"]
        target = f"{'job' if kind == 'Job' else 'deploy'}/{names[0]}"
        assert target in notes, (values, notes)


def _serve_with_gpus(num_gpus: float) -> dict[str, object]:
    deployment = {"name": "reranker", "ray_actor_options": {"num_cpus": 0.5, "num_gpus": num_gpus}}
    app = {"name": "skbqa-reranker-gpu", "import_path": "my.cross_encoder:app", "deployments": [deployment]}
    return {"applications": [app]}


@pytest.mark.parametrize(
    ("ray", "message"),
    [
        ({"workers": {"gpu": 1}}, "no ray.serveConfig deployment sets ray_actor_options.num_gpus"),
        ({"serveConfig": _serve_with_gpus(1)}, "could never be placed"),
    ],
)
def test_worker_gpus_and_the_serve_replicas_asking_for_them_go_together(
    ray: dict[str, object], message: str
) -> None:
    values = {"ray": {"enabled": True, "autoscaling": False, **ray}}
    with helm.Chart.load(str(CHART)) as chart, pytest.raises(helm.HelmError, match=message):
        chart.render(values, name="skbqa", namespace="skbqa")


def test_a_serve_deployment_that_asks_for_a_gpu_gets_workers_with_one() -> None:
    import yaml

    values = {
        "ray": {"enabled": True, "autoscaling": False, "workers": {"gpu": 1}, "serveConfig": _serve_with_gpus(1)}
    }
    with helm.Chart.load(str(CHART)) as chart:
        manifests = chart.render(values, name="skbqa", namespace="skbqa")
    (ray,) = [
        doc
        for doc in yaml.safe_load_all(manifests["skbqa/templates/rayservice.yaml"])
        if doc and doc.get("kind") == "RayService"
    ]
    (group,) = ray["spec"]["rayClusterConfig"]["workerGroupSpecs"]
    (container,) = group["template"]["spec"]["containers"]
    assert container["resources"]["limits"]["nvidia.com/gpu"] == 1
    serve = yaml.safe_load(ray["spec"]["serveConfigV2"])
    assert serve["applications"][0]["deployments"][0]["ray_actor_options"]["num_gpus"] == 1


def test_the_gpu_example_gives_the_gpu_to_triton_only(rendered) -> None:  # noqa: F811
    ray = one(rendered, KUBERAY, "RayService", "skbqa-ray")
    for group in ray["spec"]["rayClusterConfig"]["workerGroupSpecs"]:
        for container in group["template"]["spec"]["containers"]:
            assert "nvidia.com/gpu" not in container["resources"].get("limits", {})
