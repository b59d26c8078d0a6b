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
