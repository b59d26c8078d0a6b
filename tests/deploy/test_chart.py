"""The Helm chart helm/skbqa, offline: render it with every CI values file, lint it, validate every rendered object
against the Kubernetes schemas (strict), check probes, resources, security contexts, port consistency,
NetworkPolicies and secrets, and check that k8s/ (and the other derived files) match the chart.

Helm runs as a library (helm-python-sdk embeds Helm v4); no helm binary and no cluster are needed.
"""

from __future__ import annotations

import copy
import importlib.util
import inspect
import json
import re
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

helm = pytest.importorskip("helm_python")
kubernetes_validate = pytest.importorskip("kubernetes_validate")

from tests.deploy.crd_schemas import CRD_KINDS, pod_templates, validate_custom  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "helm" / "skbqa"
CI_FILES = sorted((CHART / "ci").glob("*-values.yaml"))
SERVICES = ("gateway", "parser", "symbols", "grounding", "ranking", "reranker")
# the chart's minimum (Chart.yaml kubeVersion) and the newest schemas kubernetes-validate carries
KUBERNETES_VERSIONS = ("1.25.0", "1.37.0")
INPUT_TOPIC = {
    "parser": "skbqa.query",
    "symbols": "skbqa.parsed",
    "grounding": "skbqa.symbols",
    "ranking": "skbqa.grounded",
    "reranker": "skbqa.ranked",
}


def _load_render_module() -> Any:
    spec = importlib.util.spec_from_file_location("render_k8s", ROOT / "scripts" / "render_k8s.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["render_k8s"] = module
    spec.loader.exec_module(module)
    return module


render_k8s = _load_render_module()


def values_of(path: Path) -> dict[str, Any]:
    return yaml.safe_load(path.read_text()) or {}


def render_ci(name: str) -> list[dict[str, Any]]:
    """Every object the chart renders with one CI values file."""
    return [doc.obj for doc in render_k8s.render(values_of(CHART / "ci" / name))]


@pytest.fixture(scope="module")
def rendered() -> dict[str, list[dict[str, Any]]]:
    """CI values file name -> every object the chart renders with it."""
    return {path.name: [doc.obj for doc in render_k8s.render(values_of(path))] for path in CI_FILES}


def objects(
    rendered: dict[str, list[dict[str, Any]]], ci_file: str, kind: str | None = None
) -> list[dict[str, Any]]:
    return [o for o in rendered[ci_file] if kind is None or o["kind"] == kind]


def one(rendered: dict[str, list[dict[str, Any]]], ci_file: str, kind: str, name: str) -> dict[str, Any]:
    found = [o for o in objects(rendered, ci_file, kind) if o["metadata"]["name"] == name]
    assert len(found) == 1, f"{ci_file}: expected one {kind} {name}, found {len(found)}"
    return found[0]


def pod_specs(obj: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(where, pod spec, pod metadata) of every pod template an object carries."""
    where = f"{obj['kind']}/{obj['metadata']['name']}"
    if obj["kind"] in ("Deployment", "Job", "StatefulSet", "DaemonSet"):
        template = obj["spec"]["template"]
        yield where, template["spec"], template.get("metadata", {})
    elif obj["kind"] == "RayService":
        for i, template in enumerate(pod_templates(obj)):
            yield f"{where}[{i}]", template["spec"], template.get("metadata", {})


def all_containers(spec: dict[str, Any]) -> list[dict[str, Any]]:
    return [*spec.get("initContainers", []), *spec["containers"]]


def main_container(rendered: dict[str, list[dict[str, Any]]], ci_file: str, name: str) -> dict[str, Any]:
    """The first container of Deployment `name`."""
    return one(rendered, ci_file, "Deployment", name)["spec"]["template"]["spec"]["containers"][0]


SERVICE_KINDS = {
    "Deployment",
    "Service",
    "ServiceAccount",
    "PodDisruptionBudget",
    "HorizontalPodAutoscaler",
    "NetworkPolicy",
}


def in_k8s(docs: list[Any]) -> list[Any]:
    """What k8s/ holds of a render: everything but the `helm test` objects."""
    return [d for d in docs if render_k8s.component_of(d.obj) != "helm-test"]


def arg_after(args: list[str], flag: str) -> str | None:
    return args[args.index(flag) + 1] if flag in args else None


# ---------------------------------------------------------------------------------------------------- structure


def test_ci_values_files_cover_the_required_scenarios() -> None:
    names = {p.name for p in CI_FILES}
    assert len(names) >= 3
    assert {
        "defaults-values.yaml",
        "external-tls-auth-values.yaml",
        "kuberay-gpu-loadgen-values.yaml",
        "bundled-backends-values.yaml",
        "bounded-loadgen-load-only-values.yaml",
    } <= names


@pytest.mark.parametrize("ci_file", CI_FILES, ids=lambda p: p.name)
def test_values_pass_the_schema(ci_file: Path) -> None:
    with helm.Chart.load(str(CHART)) as chart:
        chart.validate_schema(values_of(ci_file))


@pytest.mark.parametrize("ci_file", CI_FILES, ids=lambda p: p.name)
def test_lint_reports_no_errors(ci_file: Path) -> None:
    report = helm.lint(str(CHART), values_of(ci_file))
    assert report["errors"] == []
    problems = [m["error"] for m in report["messages"] if m["severity"] >= 2]
    # The dependency charts (Kafka, Milvus, NebulaGraph) are fetched by `helm dependency build`, which needs the
    # network; offline their absence is the one expected warning.
    unexpected = [p for p in problems if not p.startswith("chart directory is missing these dependencies")]
    assert unexpected == []


@pytest.mark.parametrize("ci_file", CI_FILES, ids=lambda p: p.name)
@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
def test_every_object_validates_strictly(
    rendered: dict[str, list[dict[str, Any]]], ci_file: Path, version: str
) -> None:
    failures = []
    docs = rendered[ci_file.name]
    assert docs, "nothing rendered"
    for obj in docs:
        name = f"{obj['kind']}/{obj['metadata']['name']}"
        try:
            if obj["kind"] in CRD_KINDS:
                validate_custom(obj, version)
            else:
                kubernetes_validate.validate(obj, version, strict=True)
        except kubernetes_validate.SchemaNotFoundError:
            failures.append(f"{name}: no schema (an unexpected kind)")
        except Exception as exc:
            path = ".".join(str(p) for p in getattr(exc, "path", []))
            failures.append(f"{name}: {path}: {getattr(exc, 'message', exc)}")
    assert failures == [], "\n".join(failures)
    print(f"{ci_file.name}: {len(docs)} objects valid against Kubernetes {version} (strict)")


EDGE_VALUES = {
    "everything-optional-off": {
        "networkPolicy": {"enabled": False},
        "serviceAccount": {"create": False},
        "index": {"waitForIndex": False},
        "ingest": {"enabled": False},
        "topics": {"create": False},
        "helmTest": {"enabled": False},
        "metrics": {"dashboard": {"enabled": False}, "podAnnotations": False},
    },
    "loadgen-web-restricted-clients": {
        "loadgen": {"enabled": True, "mode": "web"},
        "networkPolicy": {"clients": [{"namespaceSelector": {"matchLabels": {"team": "search"}}}]},
    },
    "triton-claim-ray-fixed": {
        "triton": {
            "enabled": True,
            "modelRepository": {"existingClaim": "models"},
            "autoscaling": {"enabled": True},
        },
        "ray": {"enabled": True, "autoscaling": False},
    },
    "tls-tcp-probes": {
        "gateway": {"tls": {"enabled": True, "existingSecret": "gateway-tls"}},
        "helmTest": {"tls": {"existingSecret": "test-client-tls"}},
    },
    "two-services-off-no-hpa": {
        "services": {"parser": {"enabled": False}, "symbols": {"enabled": False}},
        "serviceDefaults": {"autoscaling": {"enabled": False}, "pdb": {"enabled": False}},
    },
    "other-ports-and-names": {"fullnameOverride": "qa", "ports": {"grpc": 6000, "metrics": 6001}},
}


@pytest.mark.parametrize("name", EDGE_VALUES)
def test_edge_values_render_valid_objects(name: str) -> None:
    docs = [doc.obj for doc in render_k8s.render(EDGE_VALUES[name])]
    for obj in docs:
        if obj["kind"] in CRD_KINDS:
            validate_custom(obj, KUBERNETES_VERSIONS[-1])
        else:
            kubernetes_validate.validate(obj, KUBERNETES_VERSIONS[-1], strict=True)
    deployments = {o["metadata"]["name"]: o for o in docs if o["kind"] == "Deployment"}
    if name == "other-ports-and-names":
        container = deployments["qa-gateway"]["spec"]["template"]["spec"]["containers"][0]
        assert arg_after(container["args"], "--port") == "6000"
        assert container["livenessProbe"]["grpc"]["port"] == 6000
        # liveness asks the "liveness" health service (SERVING while the process answers), readiness the whole
        # server (NOT_SERVING while the broker is away): an outage takes pods out of rotation without restarts
        assert container["livenessProbe"]["grpc"]["service"] == "liveness"
        assert "service" not in container["readinessProbe"]["grpc"]
        policy = next(o for o in docs if o["kind"] == "NetworkPolicy" and o["metadata"]["name"] == "qa-gateway")
        assert _ingress_ports(policy) == {6000, 6001}
    if name == "tls-tcp-probes":
        probe = deployments["skbqa-gateway"]["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]
        assert probe["tcpSocket"] == {"port": "grpc"}
    if name == "two-services-off-no-hpa":
        assert {"skbqa-parser", "skbqa-symbols"}.isdisjoint(deployments)
        assert not [o for o in docs if o["kind"] in ("HorizontalPodAutoscaler", "PodDisruptionBudget")]
        assert all(
            d["spec"]["replicas"] == 2 for d in deployments.values() if "ingest" not in d["metadata"]["name"]
        )
    if name == "everything-optional-off":
        assert not [o for o in docs if o["kind"] in ("NetworkPolicy", "ServiceAccount", "Job", "ConfigMap", "Pod")]


def test_schema_rejects_secrets_typos_and_insecure_settings() -> None:
    bad_values = [
        {"llm": {"apiKey": "sk-live-123"}},  # secrets are never values
        {"gateway": {"tls": {"enabled": True, "key": "-----BEGIN PRIVATE KEY-----"}}},
        {"gateway": {"auth": {"enabled": True}}},  # auth without the Secret holding the tokens
        {"services": {"gatway": {"replicas": 2}}},  # typo
        {"containerSecurityContext": {"readOnlyRootFilesystem": False}},
        {"podSecurityContext": {"runAsNonRoot": False}},
        {"containerSecurityContext": {"capabilities": {"drop": ["NET_RAW"]}}},
        {"serviceDefaults": {"resources": {"requests": {"cpu": "lots", "memory": "1Gi"}}}},
        {"externalKafka": {"bootstrap": "kafka://broker:9092"}},
        # backend credentials come from Secrets only: never in a URL, never as a value
        {"externalMilvus": {"url": "milvus://root:Milvus@milvus.vectors.svc:19530"}},
        {"externalNebula": {"url": "nebula://root:nebula@graphd.graph.svc:9669/biomed"}},
        {"externalKafka": {"bootstrap": "user:secret@kafka.data.svc:9092"}},
        {"externalTriton": {"url": "triton://user:secret@triton:8001/skbqa_encoder"}},
        {"llm": {"baseUrl": "https://user:secret@llm.example.com/v1"}},
        {"credentials": {"nebula": {"password": "nebula"}}},
        {"credentials": {"milvus": {"token": "root:Milvus"}}},
        {"credentials": {"kafka": {"existingSecret": "kafka", "securityProtocol": "PLAINTEXT"}}},
        # a bounded load run is headless; the Locust UI would wait for a click
        {"loadgen": {"enabled": True, "runTime": "10m", "mode": "web"}},
        {"loadgen": {"runTime": "ten minutes"}},
        # stage TLS material comes from an existing Secret only, and the stages need a plaintext health port
        {"internalTls": {"enabled": True}},
        {"internalTls": {"enabled": True, "existingSecret": "stage-tls", "cert": "-----BEGIN CERTIFICATE-----"}},
        {"internalTls": {"enabled": True, "existingSecret": "stage-tls", "healthPort": 0}},
        {"internalTls": {"auth": {"enabled": True}}},
        # limits: an in-flight bound of 0 would refuse every call; negative limits mean nothing
        {"serviceDefaults": {"maxInflight": 0}},
        {"services": {"ranking": {"maxInflight": 0}}},
        {"serviceDefaults": {"lagIntervalSeconds": -1}},
        {"gateway": {"clientLimits": {"rate": -1}}},
        {"gateway": {"clientLimits": {"burst": 1.5}}},
        {"gateway": {"clientLimits": {"maxInflight": -1}}},
        {"gateway": {"clientLimits": {"perClient": 3}}},
    ]
    with helm.Chart.load(str(CHART)) as chart:
        for bad in bad_values:
            with pytest.raises(helm.HelmError):
                chart.validate_schema(bad)
            with pytest.raises(helm.HelmError):
                chart.render(bad, name="skbqa", namespace="skbqa")


def test_every_service_has_its_objects(rendered: dict[str, list[dict[str, Any]]]) -> None:
    for name in SERVICES:
        full = f"skbqa-{name}"
        for kind in SERVICE_KINDS:
            one(rendered, "defaults-values.yaml", kind, full)
        deployment = one(rendered, "defaults-values.yaml", "Deployment", full)
        spec = deployment["spec"]["template"]["spec"]
        assert spec["serviceAccountName"] == full
        assert arg_after(spec["containers"][0]["args"], "--role") == name
        assert spec["containers"][0]["args"][0] == "serve"
        # the HPA owns the replica count: the Deployment must not fight it on every upgrade
        assert "replicas" not in deployment["spec"]
        keys = [c["topologyKey"] for c in spec["topologySpreadConstraints"]]
        assert keys == ["topology.kubernetes.io/zone", "kubernetes.io/hostname"]
        for constraint in spec["topologySpreadConstraints"]:
            assert constraint["labelSelector"]["matchLabels"] == deployment["spec"]["selector"]["matchLabels"]


def test_explicit_false_and_counts_override_the_service_defaults(
    rendered: dict[str, list[dict[str, Any]]],
) -> None:
    ci = "bundled-backends-values.yaml"
    names = {(o["kind"], o["metadata"]["name"]) for o in rendered[ci]}
    assert ("HorizontalPodAutoscaler", "skbqa-reranker") not in names
    assert ("PodDisruptionBudget", "skbqa-reranker") not in names
    assert one(rendered, ci, "Deployment", "skbqa-reranker")["spec"]["replicas"] == 1
    assert (
        "topologySpreadConstraints"
        not in one(rendered, ci, "Deployment", "skbqa-symbols")["spec"]["template"]["spec"]
    )
    assert one(rendered, ci, "HorizontalPodAutoscaler", "skbqa-symbols")["spec"]["maxReplicas"] == 12
    # the rest of the defaults survive a partial override
    assert one(rendered, ci, "HorizontalPodAutoscaler", "skbqa-symbols")["spec"]["minReplicas"] == 2


# ------------------------------------------------------------------------------------- probes, ports, resources


@pytest.mark.parametrize("ci_file", CI_FILES, ids=lambda p: p.name)
def test_probes_and_ports_are_consistent(rendered: dict[str, list[dict[str, Any]]], ci_file: Path) -> None:
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    grpc_port, metrics_port = values["ports"]["grpc"], values["ports"]["metrics"]
    gateway_tls = values_of(ci_file).get("gateway", {}).get("tls", {})
    internal_tls = values_of(ci_file).get("internalTls", {})
    for name in SERVICES:
        tls = gateway_tls if name == "gateway" else internal_tls
        # internalTls has a health port by default; the gateway's is opt-in
        health_port = tls.get("healthPort", 0 if name == "gateway" else values["internalTls"]["healthPort"])
        deployment = one(rendered, ci_file.name, "Deployment", f"skbqa-{name}")
        service = one(rendered, ci_file.name, "Service", f"skbqa-{name}")
        container = deployment["spec"]["template"]["spec"]["containers"][0]
        ports = {p["name"]: p["containerPort"] for p in container["ports"]}
        assert ports["grpc"] == grpc_port and ports["metrics"] == metrics_port
        assert int(arg_after(container["args"], "--port") or 0) == grpc_port
        assert int(arg_after(container["args"], "--metrics-port") or 0) == metrics_port
        assert arg_after(container["args"], "--host") == values["listenAddress"]
        # every Service port targets a named container port with the same number
        for port in service["spec"]["ports"]:
            assert ports[port["targetPort"]] == port["port"], f"{name}: Service port {port['name']}"
        assert service["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]
        for probe_name in ("startupProbe", "readinessProbe", "livenessProbe"):
            probe = container[probe_name]
            if tls.get("enabled"):
                if health_port:
                    assert probe["grpc"]["port"] == health_port == ports["health"], f"{name} {probe_name}"
                    env = {e["name"]: e.get("value") for e in container["env"]}
                    assert env["SKBQA_HEALTH_PORT"] == str(health_port)
                else:
                    assert probe["tcpSocket"]["port"] == "grpc"
            else:
                assert probe["grpc"]["port"] == grpc_port, (
                    f"{name} {probe_name} is not a native gRPC probe on {grpc_port}"
                )
            assert probe["periodSeconds"] >= 1 and probe["failureThreshold"] >= 1
        # liveness must not kill a pod that is still loading its index: a startup probe gates it
        startup = container["startupProbe"]
        assert startup["periodSeconds"] * startup["failureThreshold"] >= 120


@pytest.mark.parametrize("ci_file", CI_FILES, ids=lambda p: p.name)
def test_every_container_has_requests_and_limits(rendered: dict[str, list[dict[str, Any]]], ci_file: Path) -> None:
    for obj in rendered[ci_file.name]:
        for where, spec, _ in pod_specs(obj):
            for container in all_containers(spec):
                resources = container.get("resources", {})
                for part in ("requests", "limits"):
                    for resource in ("cpu", "memory"):
                        assert resource in resources.get(part, {}), (
                            f"{where}/{container['name']}: no {part}.{resource}"
                        )


@pytest.mark.parametrize("ci_file", CI_FILES, ids=lambda p: p.name)
def test_pods_are_locked_down(rendered: dict[str, list[dict[str, Any]]], ci_file: Path) -> None:
    ray_autoscaling = values_of(ci_file).get("ray", {}).get("autoscaling", True)
    count = 0
    for obj in rendered[ci_file.name]:
        for where, spec, meta in pod_specs(obj):
            count += 1
            pod = spec["securityContext"]
            assert pod["runAsNonRoot"] is True, where
            assert pod["seccompProfile"]["type"] == "RuntimeDefault", where
            assert pod.get("runAsUser", 0) > 0, where
            assert not spec.get("hostNetwork") and not spec.get("hostPID") and not spec.get("hostIPC"), where
            head_with_autoscaler = meta.get("labels", {}).get("skbqa.io/ray-group") == "head" and ray_autoscaling
            if not head_with_autoscaler:  # KubeRay's autoscaler sidecar needs the API token in the head pod
                assert spec["automountServiceAccountToken"] is False, where
            for container in all_containers(spec):
                sc = container["securityContext"]
                label = f"{where}/{container['name']}"
                assert sc["readOnlyRootFilesystem"] is True, label
                assert sc["allowPrivilegeEscalation"] is False, label
                assert sc["runAsNonRoot"] is True, label
                assert sc.get("privileged", False) is False, label
                assert sc["capabilities"]["drop"] == ["ALL"], label
                assert not sc["capabilities"].get("add"), label
                mounts = {m["mountPath"] for m in container.get("volumeMounts", [])}
                if container["name"] not in ("wait-for-index",):
                    assert "/tmp" in mounts or container["name"] == "seed-model-repository", (
                        f"{label}: no writable /tmp"
                    )
    assert count > 0


@pytest.mark.parametrize("ci_file", CI_FILES, ids=lambda p: p.name)
def test_index_is_mounted_read_only_except_in_the_ingest_job(
    rendered: dict[str, list[dict[str, Any]]], ci_file: Path
) -> None:
    for obj in rendered[ci_file.name]:
        for where, spec, _ in pod_specs(obj):
            for container in all_containers(spec):
                for mount in container.get("volumeMounts", []):
                    if mount["name"] == "index":
                        # the ingest Job builds it; fetch-index fills the pod's own volume (index.delivery objectStore);
                        # the updater (updates.enabled) folds changes into it; with shipped snapshots (updates and
                        # objectStore) each stage, and each Ray pod, fetches the versions it announces beside its
                        # own copy
                        ships = ci_file.name == "shipped-updates-values.yaml"
                        writable = (
                            (obj["kind"] == "Job" and container["name"] == "ingest")
                            or container["name"] == "fetch-index"
                            or (obj["kind"] == "Deployment" and container["name"] == "updater")
                            or (ships and obj["kind"] == "Deployment" and container["name"] in SERVICES[1:])
                            or (ships and obj["kind"] == "RayService" and container["name"].startswith("ray-"))
                        )
                        assert mount.get("readOnly", False) is (not writable), f"{where}/{container['name']}"
    if ci_file.name != "defaults-values.yaml":
        return
    job = objects(rendered, "defaults-values.yaml", "Job")[0]
    args = job["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args[0] == "ingest" and arg_after(args, "--index") == "/index/current"
    gateway = one(rendered, "defaults-values.yaml", "Deployment", "skbqa-gateway")["spec"]["template"]["spec"]
    assert arg_after(gateway["containers"][0]["args"], "--index") == "/index/current"
    assert gateway["initContainers"][0]["name"] == "wait-for-index"


# ------------------------------------------------------------------------------------------------ network policy


def _egress_ports(policy: dict[str, Any]) -> set[int]:
    return {p["port"] for rule in policy["spec"].get("egress", []) for p in rule.get("ports", [])}


def _ingress_ports(policy: dict[str, Any]) -> set[int]:
    return {p["port"] for rule in policy["spec"].get("ingress", []) for p in rule.get("ports", [])}


@pytest.mark.parametrize("ci_file", CI_FILES, ids=lambda p: p.name)
def test_default_deny_covers_every_pod_of_the_release(
    rendered: dict[str, list[dict[str, Any]]], ci_file: Path
) -> None:
    deny = one(rendered, ci_file.name, "NetworkPolicy", "skbqa-default-deny")
    assert deny["spec"]["policyTypes"] == ["Ingress", "Egress"]
    assert "ingress" not in deny["spec"] and "egress" not in deny["spec"]
    selector = deny["spec"]["podSelector"]["matchLabels"]
    for obj in rendered[ci_file.name]:
        for where, _, meta in pod_specs(obj):
            labels = meta.get("labels", {})
            assert all(labels.get(k) == v for k, v in selector.items()), f"{where} escapes the default deny"
            component = labels["app.kubernetes.io/component"]
            # and every component has its own allow-list
            one(rendered, ci_file.name, "NetworkPolicy", f"skbqa-{component}")


def test_network_policies_allow_only_the_architecture_flows(rendered: dict[str, list[dict[str, Any]]]) -> None:
    """With every backend configured (external file), each service may reach exactly its backends."""
    ci = "external-tls-auth-values.yaml"
    llm_ports = set(values_of(CHART / "ci" / ci)["llm"]["egress"]["ports"])
    expected_egress = {
        "gateway": {9092},
        "parser": {9092, 8001} | llm_ports,
        "symbols": {9092, 8001, 19530},
        "grounding": {9092, 9669},
        "ranking": {9092, 8001, 19530},
        "reranker": {9092} | llm_ports,
    }
    for name, ports in expected_egress.items():
        policy = one(rendered, ci, "NetworkPolicy", f"skbqa-{name}")
        assert _egress_ports(policy) == ports, name
        # only the gateway accepts gRPC; everyone accepts Prometheus on the metrics port, from Prometheus only
        assert _ingress_ports(policy) == ({50051, 9100} if name == "gateway" else {9100}), name
        for rule in policy["spec"]["ingress"]:
            if {p["port"] for p in rule["ports"]} == {9100}:
                assert rule["from"] == values_of(CHART / "ci" / ci)["networkPolicy"]["prometheus"]
            else:  # the configured clients, and the `helm test` Pod (a client too)
                clients = values_of(CHART / "ci" / ci)["networkPolicy"]["clients"]
                selector = {"app.kubernetes.io/name": "skbqa", "app.kubernetes.io/instance": "skbqa"}
                test_pod = {
                    "podSelector": {"matchLabels": {**selector, "app.kubernetes.io/component": "helm-test"}}
                }
                assert rule["from"] == ([*clients, test_pod] if clients else clients)
        for rule in policy["spec"]["egress"]:
            assert rule.get("to"), f"{name}: an egress rule open to any destination"
    parser = one(rendered, ci, "NetworkPolicy", "skbqa-parser")
    blocks = [
        peer["ipBlock"]["cidr"] for rule in parser["spec"]["egress"] for peer in rule["to"] if "ipBlock" in peer
    ]
    assert blocks == ["203.0.113.0/24"]
    # DNS is the one egress every pod shares
    dns = one(rendered, ci, "NetworkPolicy", "skbqa-allow-dns")
    assert _egress_ports(dns) == {53} and dns["spec"]["policyTypes"] == ["Egress"]


def test_network_policies_with_ray_triton_and_the_load_generator(
    rendered: dict[str, list[dict[str, Any]]],
) -> None:
    ci = "kuberay-gpu-loadgen-values.yaml"
    assert _egress_ports(one(rendered, ci, "NetworkPolicy", "skbqa-reranker")) == {9092, 10001}
    assert _egress_ports(one(rendered, ci, "NetworkPolicy", "skbqa-grounding")) == {9092}
    triton = one(rendered, ci, "NetworkPolicy", "skbqa-triton")
    assert _ingress_ports(triton) == {8001, 8002} and triton["spec"]["egress"] == []
    callers = {
        peer["podSelector"]["matchLabels"]["app.kubernetes.io/component"]
        for rule in triton["spec"]["ingress"]
        if rule["ports"][0]["port"] == 8001
        for peer in rule["from"]
    }
    assert callers == {"parser", "symbols", "ranking", "ray"}
    loadgen = one(rendered, ci, "NetworkPolicy", "skbqa-loadgen")
    assert _egress_ports(loadgen) == {50051, 5557}
    ray = one(rendered, ci, "NetworkPolicy", "skbqa-ray")
    reranker_rule = ray["spec"]["ingress"][0]
    assert reranker_rule["from"][0]["podSelector"]["matchLabels"]["app.kubernetes.io/component"] == "reranker"
    assert reranker_rule["ports"] == [{"protocol": "TCP", "port": 10001}]


# ------------------------------------------------------------------------------------------ secrets and backends


@pytest.mark.parametrize("ci_file", CI_FILES, ids=lambda p: p.name)
def test_no_secret_material_is_rendered(rendered: dict[str, list[dict[str, Any]]], ci_file: Path) -> None:
    assert not objects(rendered, ci_file.name, "Secret")
    sensitive = re.compile(r"(KEY|TOKEN|PASSWORD|SECRET)$")
    for obj in rendered[ci_file.name]:
        for where, spec, _ in pod_specs(obj):
            for container in all_containers(spec):
                for env in container.get("env", []):
                    if sensitive.search(env["name"]):
                        assert "value" not in env and "secretKeyRef" in env["valueFrom"], f"{where}: {env['name']}"


def test_values_files_hold_no_secrets() -> None:
    """Keys that sound secret may only name an existing Secret (or a key inside one), never carry a value."""
    sensitive = re.compile(r"password|apikey|api_key|token|secret|privatekey|credential", re.I)
    reference = re.compile(r"^existingSecret$|Key$|Keys$|^automountToken$|^imagePullSecrets$", re.I)

    def walk(node: Any, path: str) -> Iterator[tuple[str, Any]]:
        if isinstance(node, dict):
            for key, child in node.items():
                yield from walk(child, f"{path}.{key}" if path else str(key))
        elif isinstance(node, list):
            for i, child in enumerate(node):
                yield from walk(child, f"{path}[{i}]")
        else:
            yield path, node

    for path in [CHART / "values.yaml", *CI_FILES]:
        for key_path, value in walk(values_of(path), ""):
            key = re.sub(r"\[\d+\]$", "", key_path).rsplit(".", 1)[-1]
            if sensitive.search(key) and not reference.search(key):
                assert value in (None, "", False, True), f"{path.name}: {key_path} carries a value"
    text = "\n".join(p.read_text() for p in [CHART / "values.yaml", *CI_FILES])
    assert "BEGIN" not in text and not re.search(r"\bsk-[A-Za-z0-9]{8,}", text)


def test_external_backends_tls_auth_and_llm_secret(rendered: dict[str, list[dict[str, Any]]]) -> None:
    ci = "external-tls-auth-values.yaml"
    values = values_of(CHART / "ci" / ci)

    def args(name: str) -> list[str]:
        return main_container(rendered, ci, f"skbqa-{name}")["args"]

    bus = f"kafka://{values['externalKafka']['bootstrap']}"
    assert all(arg_after(args(name), "--bus") == bus for name in SERVICES)
    for name in ("parser", "symbols", "ranking"):
        assert arg_after(args(name), "--encoder") == values["externalTriton"]["url"]
    for name in ("symbols", "ranking"):
        assert arg_after(args(name), "--vectors") == values["externalMilvus"]["url"]
    assert arg_after(args("grounding"), "--graph") == values["externalNebula"]["url"]
    assert "--encoder" not in args("gateway") and "--vectors" not in args("grounding")

    gateway = one(rendered, ci, "Deployment", "skbqa-gateway")["spec"]["template"]["spec"]
    env = {e["name"]: e for e in gateway["containers"][0]["env"]}
    mounts = {m["name"]: m for m in gateway["containers"][0]["volumeMounts"]}
    volumes = {v["name"]: v for v in gateway["volumes"]}
    assert volumes["tls"]["secret"]["secretName"] == values["gateway"]["tls"]["existingSecret"]
    assert volumes["auth"]["secret"]["secretName"] == values["gateway"]["auth"]["existingSecret"]
    assert mounts["tls"]["readOnly"] and mounts["auth"]["readOnly"]
    for var, key in (
        ("SKBQA_TLS_CERT_FILE", "tls.crt"),
        ("SKBQA_TLS_KEY_FILE", "tls.key"),
        ("SKBQA_TLS_CLIENT_CA_FILE", "ca.crt"),
    ):
        assert env[var]["value"] == f"{mounts['tls']['mountPath']}/{key}"
    assert env["SKBQA_AUTH_TOKENS_FILE"]["value"] == f"{mounts['auth']['mountPath']}/tokens"
    assert one(rendered, ci, "Service", "skbqa-gateway")["spec"]["type"] == "LoadBalancer"

    for name in ("parser", "reranker"):
        spec = one(rendered, ci, "Deployment", f"skbqa-{name}")["spec"]["template"]["spec"]
        env = {e["name"]: e for e in spec["containers"][0]["env"]}
        assert env["SKBQA_LLM_API_KEY"]["valueFrom"]["secretKeyRef"] == {"name": "skbqa-llm", "key": "api-key"}
        assert env["SKBQA_LLM_URL"]["value"] == env["SKBQA_LLM_BASE_URL"]["value"] == values["llm"]["baseUrl"]
    symbols_env = {e["name"] for e in main_container(rendered, ci, "skbqa-symbols")["env"]}
    assert not any(name.startswith("SKBQA_LLM") for name in symbols_env - {"SKBQA_LLM_CONCURRENCY"})
    image = gateway["containers"][0]["image"]
    assert image == f"{values['image']['repository']}@{values['image']['digest']}"
    assert gateway["imagePullSecrets"] == [{"name": "registry-credentials"}]


def test_kafka_lag_autoscaling_targets_each_stage_input_topic(rendered: dict[str, list[dict[str, Any]]]) -> None:
    """Every replica exports the whole group's lag, so the metric is External (one group-wide value, `max by (topic,
    group)` in prometheus-adapter) with an AverageValue target: desired replicas = lag / target. A Pods metric
    would average n identical values per pod and scale on n × lag."""
    ci = "external-tls-auth-values.yaml"
    for name in SERVICES:
        hpas = [
            h for h in objects(rendered, ci, "HorizontalPodAutoscaler") if h["metadata"]["name"] == f"skbqa-{name}"
        ]
        if name == "grounding":
            assert not hpas  # autoscaling switched off for it in this file
            continue
        metrics = hpas[0]["spec"]["metrics"]
        assert metrics[0]["resource"]["name"] == "cpu"
        assert [m["type"] for m in metrics if m["type"] != "Resource"] == (
            [] if name == "gateway" else ["External"]
        )
        if name == "gateway":
            continue
        [lag] = [m["external"] for m in metrics if m["type"] == "External"]
        assert lag["metric"]["name"] == "skbqa_kafka_lag"
        # exactly one series: the stage's input topic and its consumer group (the exporter's labels)
        assert lag["metric"]["selector"] == {"matchLabels": {"topic": INPUT_TOPIC[name], "group": f"skbqa-{name}"}}
        assert lag["target"] == {"type": "AverageValue", "averageValue": "25"}
    # the stages export the lag the HPA reads (SKBQA_LAG_INTERVAL_S > 0)
    for name in INPUT_TOPIC:
        env = {e["name"]: e.get("value") for e in main_container(rendered, ci, f"skbqa-{name}")["env"]}
        assert float(env["SKBQA_LAG_INTERVAL_S"]) > 0, name
    # the group label is the group the stage workers join (StageWorker's default)
    worker = pytest.importorskip("skbqa.serving.worker")
    assert 'f"skbqa-{self._entry}"' in inspect.getsource(worker.StageWorker.__init__)
    # off by default: CPU only
    for hpa in objects(rendered, "defaults-values.yaml", "HorizontalPodAutoscaler"):
        assert [m["type"] for m in hpa["spec"]["metrics"]] == ["Resource"], hpa["metadata"]["name"]


def test_kafka_lag_autoscaling_refuses_a_switched_off_lag_export() -> None:
    values = {"serviceDefaults": {"autoscaling": {"kafkaLag": {"enabled": True}}, "lagIntervalSeconds": 0}}
    with pytest.raises(helm.HelmError, match="lagIntervalSeconds"):
        render_k8s.render(values)
    # without lag autoscaling the export may be off
    docs = render_k8s.render({"serviceDefaults": {"lagIntervalSeconds": 0}})
    parser = next(
        d.obj for d in docs if d.obj["kind"] == "Deployment" and d.obj["metadata"]["name"] == "skbqa-parser"
    )
    env = {e["name"]: e.get("value") for e in parser["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["SKBQA_LAG_INTERVAL_S"] == "0"


def _plain_env(container: dict[str, Any]) -> dict[str, str | None]:
    return {e["name"]: e.get("value") for e in container["env"]}


def test_inflight_client_limits_and_lag_interval_env(rendered: dict[str, list[dict[str, Any]]]) -> None:
    """`skbqa serve` reads these variables (services/skbqa/cli/serve.py); the values reach each container."""
    defaults = yaml.safe_load((CHART / "values.yaml").read_text())
    for name in SERVICES:
        env = _plain_env(main_container(rendered, "defaults-values.yaml", f"skbqa-{name}"))
        assert env["SKBQA_MAX_INFLIGHT"] == str(defaults["serviceDefaults"]["maxInflight"]) == "64"
        if name == "gateway":
            assert (env["SKBQA_CLIENT_RATE"], env["SKBQA_CLIENT_BURST"], env["SKBQA_CLIENT_MAX_INFLIGHT"]) == (
                "0",
                "0",
                "0",
            )
            assert "SKBQA_LAG_INTERVAL_S" not in env  # the gateway runs no stage worker
        else:
            assert env["SKBQA_LAG_INTERVAL_S"] == "5"
            assert not any(n.startswith("SKBQA_CLIENT_") for n in env), name  # per-client limits: gateway only
    ci = "external-tls-auth-values.yaml"
    values = values_of(CHART / "ci" / ci)
    gateway = _plain_env(main_container(rendered, ci, "skbqa-gateway"))
    limits = values["gateway"]["clientLimits"]
    assert float(gateway["SKBQA_CLIENT_RATE"] or "") == limits["rate"] == 2.5
    assert int(gateway["SKBQA_CLIENT_BURST"] or "") == limits["burst"]
    assert int(gateway["SKBQA_CLIENT_MAX_INFLIGHT"] or "") == limits["maxInflight"]
    # services.gateway.maxInflight overrides serviceDefaults.maxInflight, which the stages keep
    assert gateway["SKBQA_MAX_INFLIGHT"] == str(values["services"]["gateway"]["maxInflight"])
    for name in INPUT_TOPIC:
        env = _plain_env(main_container(rendered, ci, f"skbqa-{name}"))
        assert env["SKBQA_MAX_INFLIGHT"] == str(values["serviceDefaults"]["maxInflight"]), name
        assert env["SKBQA_LAG_INTERVAL_S"] == str(values["serviceDefaults"]["lagIntervalSeconds"]), name
    # and skbqa's own parsing accepts what is rendered
    cli_serve = pytest.importorskip("skbqa.cli.serve")
    args = _skbqa_args(["serve", "--role", "gateway", "--index", "/index/current"])
    with pytest.MonkeyPatch.context() as patch:
        for var, value in gateway.items():
            if var.startswith("SKBQA_") and value is not None:
                patch.setenv(var, value)
        parsed = cli_serve.limits_from_args(args)
        settings = cli_serve.settings_from_args(args)
    assert (parsed.rate_per_s, parsed.burst, parsed.max_inflight) == (2.5, 10, 4)
    assert settings.max_inflight == 128 and settings.health_port == 50052


def test_internal_tls_on_the_stage_services(rendered: dict[str, list[dict[str, Any]]]) -> None:
    """internalTls: the stages serve mutual TLS (and tokens) from Secrets mounted read-only; probes move to the
    plaintext health port; the gateway keeps its own TLS Secret."""
    ci = "external-tls-auth-values.yaml"
    values = values_of(CHART / "ci" / ci)
    internal = values["internalTls"]
    health_port = internal["healthPort"]
    assert health_port != values["gateway"]["tls"]["healthPort"]  # the file tells the two apart
    for name in INPUT_TOPIC:
        spec = one(rendered, ci, "Deployment", f"skbqa-{name}")["spec"]["template"]["spec"]
        container = spec["containers"][0]
        env = _plain_env(container)
        mounts = {m["name"]: m for m in container["volumeMounts"]}
        volumes = {v["name"]: v for v in spec["volumes"]}
        assert volumes["tls"]["secret"]["secretName"] == internal["existingSecret"], name
        assert volumes["auth"]["secret"]["secretName"] == internal["auth"]["existingSecret"], name
        for volume in ("tls", "auth"):
            assert mounts[volume]["readOnly"] is True, f"{name}: {volume}"
            assert "items" not in volumes[volume]["secret"]  # the whole Secret; keys chosen by the env vars
        tls_dir, auth_dir = mounts["tls"]["mountPath"], mounts["auth"]["mountPath"]
        assert env["SKBQA_TLS_CERT_FILE"] == f"{tls_dir}/tls.crt", name
        assert env["SKBQA_TLS_KEY_FILE"] == f"{tls_dir}/tls.key", name
        assert env["SKBQA_TLS_CLIENT_CA_FILE"] == f"{tls_dir}/ca.crt", name
        assert env["SKBQA_AUTH_TOKENS_FILE"] == f"{auth_dir}/{internal['auth']['tokensKey']}", name
        assert env["SKBQA_HEALTH_PORT"] == str(health_port), name
        ports = {p["name"]: p["containerPort"] for p in container["ports"]}
        assert ports["health"] == health_port, name
        for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
            assert container[probe]["grpc"]["port"] == health_port, f"{name} {probe}"
        service = one(rendered, ci, "Service", f"skbqa-{name}")
        grpc = next(p for p in service["spec"]["ports"] if p["name"] == "grpc")
        assert grpc["appProtocol"] == "grpc"  # TLS, not h2c
        # the stage process accepts exactly these variables (TLS needs both files; mutual TLS the CA too)
        cli_serve = pytest.importorskip("skbqa.cli.serve")
        with pytest.MonkeyPatch.context() as patch:
            for var, value in env.items():
                if var.startswith("SKBQA_") and value is not None:
                    patch.setenv(var, value)
            settings = cli_serve.settings_from_args(
                _skbqa_args(["serve", "--role", name, "--index", "/index/current"])
            )
        settings.validate()
        assert (str(settings.tls_cert_file), str(settings.tls_client_ca_file)) == (
            f"{tls_dir}/tls.crt",
            f"{tls_dir}/ca.crt",
        )
        assert settings.health_port == health_port and settings.role == name
    gateway = one(rendered, ci, "Deployment", "skbqa-gateway")["spec"]["template"]["spec"]
    gateway_volumes = {v["name"]: v["secret"]["secretName"] for v in gateway["volumes"] if "secret" in v}
    assert gateway_volumes == {"tls": "skbqa-gateway-tls", "auth": "skbqa-gateway-tokens"}
    assert _plain_env(gateway["containers"][0])["SKBQA_HEALTH_PORT"] == "50052"
    # off by default: plaintext stages with native gRPC probes on the gRPC port, no Secret mounted
    for name in INPUT_TOPIC:
        container = main_container(rendered, "defaults-values.yaml", f"skbqa-{name}")
        assert not any(n.startswith(("SKBQA_TLS_", "SKBQA_AUTH_", "SKBQA_HEALTH_")) for n in _plain_env(container))
        assert {m["name"] for m in container["volumeMounts"]} == {"index", "tmp"}
        assert container["readinessProbe"]["grpc"]["port"] == 50051


def test_internal_tls_server_only_leaves_the_gateway_alone() -> None:
    values = {"internalTls": {"enabled": True, "existingSecret": "stage-tls", "clientCAKey": ""}}
    docs = [d.obj for d in render_k8s.render(values)]
    for obj in docs:
        if obj["kind"] not in CRD_KINDS:
            kubernetes_validate.validate(obj, KUBERNETES_VERSIONS[-1], strict=True)
    deployments = {o["metadata"]["name"]: o["spec"]["template"]["spec"] for o in docs if o["kind"] == "Deployment"}
    for name in INPUT_TOPIC:
        container = deployments[f"skbqa-{name}"]["containers"][0]
        env = _plain_env(container)
        assert env["SKBQA_TLS_CERT_FILE"] == "/etc/skbqa/tls/tls.crt"
        assert "SKBQA_TLS_CLIENT_CA_FILE" not in env and "SKBQA_AUTH_TOKENS_FILE" not in env
        assert env["SKBQA_HEALTH_PORT"] == "50052"  # the default health port
        assert container["livenessProbe"]["grpc"]["port"] == 50052
        assert {v["name"] for v in deployments[f"skbqa-{name}"]["volumes"]} == {"index", "tmp", "tls"}
    gateway = deployments["skbqa-gateway"]["containers"][0]
    assert not any(n.startswith(("SKBQA_TLS_", "SKBQA_HEALTH_")) for n in _plain_env(gateway))
    assert gateway["readinessProbe"]["grpc"]["port"] == 50051


def test_internal_tls_refuses_a_health_port_on_a_served_port() -> None:
    for port in (50051, 9100):
        values = {"internalTls": {"enabled": True, "existingSecret": "stage-tls", "healthPort": port}}
        with pytest.raises(helm.HelmError, match=r"internalTls\.healthPort"):
            render_k8s.render(values)


def test_bundled_backends_are_addressed_by_their_release_names(rendered: dict[str, list[dict[str, Any]]]) -> None:
    ci = "bundled-backends-values.yaml"
    symbols = main_container(rendered, ci, "skbqa-symbols")["args"]
    assert arg_after(symbols, "--bus") == "kafka://skbqa-kafka:9092"
    assert arg_after(symbols, "--vectors") == "milvus://skbqa-milvus:19530"
    grounding = main_container(rendered, ci, "skbqa-grounding")["args"]
    assert arg_after(grounding, "--graph") == "nebula://nebula-graphd-svc:9669/biomed"
    policy = one(rendered, ci, "NetworkPolicy", "skbqa-symbols")
    selectors = [
        peer["podSelector"]["matchLabels"] for rule in policy["spec"]["egress"] for peer in rule.get("to", [])
    ]
    assert {"app.kubernetes.io/name": "kafka", "app.kubernetes.io/instance": "skbqa"} in selectors
    assert {"app.kubernetes.io/name": "milvus", "app.kubernetes.io/instance": "skbqa"} in selectors
    deps = {d["name"]: d for d in yaml.safe_load((CHART / "Chart.yaml").read_text())["dependencies"]}
    assert {d["condition"] for d in deps.values()} == {"kafka.enabled", "milvus.enabled", "nebula.enabled"}


def test_ray_triton_and_load_generator_wiring(rendered: dict[str, list[dict[str, Any]]]) -> None:
    ci = "kuberay-gpu-loadgen-values.yaml"
    values = values_of(CHART / "ci" / ci)
    ray = one(rendered, ci, "RayService", "skbqa-ray")
    reranker = main_container(rendered, ci, "skbqa-reranker")
    assert arg_after(reranker["args"], "--ray-address") == f"ray://{ray['metadata']['name']}-head-svc:10001"
    assert reranker["image"].startswith("ghcr.io/skbqa/skbqa-ray:")  # Ray Client needs ray in the caller
    serve = yaml.safe_load(ray["spec"]["serveConfigV2"])
    assert serve["applications"][0]["args"]["index_dir"] == "/index/current"
    head = ray["spec"]["rayClusterConfig"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    assert {p["containerPort"] for p in head["ports"]} >= {10001, 8265, 6379}
    workers = ray["spec"]["rayClusterConfig"]["workerGroupSpecs"][0]["template"]["spec"]
    assert "nvidia.com/gpu" not in workers["containers"][0]["resources"]["limits"]  # no reranker uses one

    triton = one(rendered, ci, "Deployment", "skbqa-triton")
    triton_service = one(rendered, ci, "Service", "skbqa-triton")
    spec = triton["spec"]["template"]["spec"]
    container = spec["containers"][0]
    assert container["resources"]["limits"]["nvidia.com/gpu"] == 1
    assert spec["nodeSelector"] == values["triton"]["nodeSelector"]
    assert spec["tolerations"] == values["triton"]["tolerations"]
    assert {m["mountPath"] for m in container["volumeMounts"]} >= {"/models", "/dev/shm"}
    assert "--model-repository=/models" in container["args"] and "--load-model=skbqa_encoder" in container["args"]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"http": 8000, "grpc": 8001, "metrics": 8002}
    assert {p["name"]: p["port"] for p in triton_service["spec"]["ports"]} == ports
    parser = main_container(rendered, ci, "skbqa-parser")
    assert arg_after(parser["args"], "--encoder") == "triton://skbqa-triton:8001/skbqa_encoder"

    master = one(rendered, ci, "Deployment", "skbqa-loadgen")
    workers_dep = one(rendered, ci, "Deployment", "skbqa-loadgen-worker")
    assert workers_dep["spec"]["replicas"] == values["loadgen"]["workers"]
    env = {e["name"]: e.get("value") for e in master["spec"]["template"]["spec"]["containers"][0]["env"]}
    gateway_service = one(rendered, ci, "Service", "skbqa-gateway")
    grpc_port = next(p["port"] for p in gateway_service["spec"]["ports"] if p["name"] == "grpc")
    assert env["LOCUST_HOST"] == f"{gateway_service['metadata']['name']}:{grpc_port}"
    assert env["LOCUST_USERS"] == "100" and env["LOCUST_SPAWN_RATE"] == "10"
    worker_args = workers_dep["spec"]["template"]["spec"]["containers"][0]["args"]
    assert (
        arg_after(worker_args, "--master-host")
        == one(rendered, ci, "Service", "skbqa-loadgen")["metadata"]["name"]
    )


def test_monitoring_objects(rendered: dict[str, list[dict[str, Any]]]) -> None:
    ci = "kuberay-gpu-loadgen-values.yaml"
    monitor = one(rendered, ci, "ServiceMonitor", "skbqa")
    endpoint = monitor["spec"]["endpoints"][0]
    assert endpoint["port"] == "metrics" and endpoint["path"] == "/metrics"
    selected = [
        s
        for s in objects(rendered, ci, "Service")
        if all(s["metadata"]["labels"].get(k) == v for k, v in monitor["spec"]["selector"]["matchLabels"].items())
        and any(p["name"] == "metrics" for p in s["spec"]["ports"])
    ]
    assert {s["metadata"]["name"] for s in selected} >= {f"skbqa-{n}" for n in SERVICES} | {"skbqa-triton"}
    dashboard = one(rendered, ci, "ConfigMap", "skbqa-dashboard")
    assert dashboard["metadata"]["labels"]["grafana_dashboard"] == "1"
    board = json.loads(dashboard["data"]["skbqa-dashboard.json"])
    assert board["panels"] and "skbqa_" in json.dumps(board)


# ------------------------------------------------------------------------------------------- documentation, drift


def test_every_value_is_documented() -> None:
    text = (CHART / "values.yaml").read_text()
    values = yaml.safe_load(text)
    docs = render_k8s.value_docs(text)
    undocumented = []
    for path in render_k8s.leaf_paths(values):
        parts = path.split(".")
        if not any(".".join(parts[:i]) in docs for i in range(len(parts), 0, -1)):
            undocumented.append(path)
    assert undocumented == []
    for path in docs:
        render_k8s.lookup(values, path)  # a comment never documents a key that does not exist
    # the schema is closed and describes what values.yaml documents, key by key
    schema = json.loads((CHART / "values.schema.json").read_text())
    assert schema["additionalProperties"] is False
    assert schema_description_problems(schema, docs) == []


def _described_nodes(node: Any, key: str, parent: str) -> Iterator[tuple[str, str, str]]:
    """(parent key, key, description) of every node of a schema that carries a description."""
    if not isinstance(node, dict):
        return
    if isinstance(node.get("description"), str):
        yield parent, key, node["description"]
    for name, child in (node.get("properties") or {}).items():
        yield from _described_nodes(child, name, key)
    for name, child in (node.get("definitions") or {}).items():
        yield from _described_nodes(child, name, "definitions")
    for part in ("items", "additionalProperties", "if", "then", "else"):
        yield from _described_nodes(node.get(part), part if part != "items" else key, key)
    for part in ("allOf", "anyOf", "oneOf"):
        for child in node.get(part) or []:
            yield from _described_nodes(child, key, parent)


def schema_description_problems(schema: dict[str, Any], docs: dict[str, str]) -> list[str]:
    """Why values.schema.json's descriptions do not match values.yaml (empty when they do).

    1. Every key values.yaml documents has, in the schema, exactly its `# --` comment as description; a key under
       a shared definition counts with the definition's description unless its place of use carries its own.
    2. One description text belongs to one kind of key: it may repeat only on keys with the same (parent, key)
       names (`autoscaling.minReplicas` of services and of Triton), never spread over unrelated keys, which is
       what a shared definition or a copy-paste does (`ports.metrics` described as the gRPC port)."""
    problems = []
    for path, text in docs.items():
        node = render_k8s.schema_node(schema, path)
        if node is None:
            problems.append(f"{path}: documented in values.yaml, absent from values.schema.json")
        elif node.get("description") != text:
            problems.append(f"{path}: schema says {node.get('description')!r}, values.yaml says {text!r}")
    owners: dict[str, set[tuple[str, str]]] = {}
    for parent, key, text in _described_nodes(schema, "", ""):
        owners.setdefault(text, set()).add((parent, key))
    for text, keys in owners.items():
        if len(keys) > 1:
            problems.append(f"{text!r} describes unrelated keys: {sorted(keys)}")
    return problems


def test_the_description_check_catches_shared_and_copied_descriptions() -> None:
    """The check above must fail on the defects it exists for (the schema before its descriptions were derived)."""
    docs = render_k8s.value_docs((CHART / "values.yaml").read_text())
    good = json.loads((CHART / "values.schema.json").read_text())
    assert schema_description_problems(good, docs) == []
    # a shared definition's text reaching another key through $ref
    shared = copy.deepcopy(good)
    shared["definitions"]["port"] = {"type": "integer", "description": docs["ports.grpc"]}
    shared["properties"]["ports"]["properties"]["metrics"] = {"$ref": "#/definitions/port"}
    assert any(p.startswith("ports.metrics:") for p in schema_description_problems(shared, docs))
    # one generic text on every boolean switch
    generic = copy.deepcopy(good)
    for path in ("serviceAccount.create", "llm.enabled", "kafka.enabled"):
        render_k8s.schema_node(generic, path)["description"] = "Run this service."
    problems = schema_description_problems(generic, docs)
    assert any("serviceAccount.create" in p for p in problems)
    assert any("'Run this service.' describes unrelated keys" in p for p in problems)
    # a copy-paste inside a definition that values.yaml does not document key by key
    pasted = copy.deepcopy(good)
    pasted["definitions"]["peers"]["items"]["properties"]["podSelector"]["description"] = docs["triton.affinity"]
    assert any("describes unrelated keys" in p for p in schema_description_problems(pasted, docs))
    # and the schema as it was before this check existed
    old = _git_show("helm/skbqa/values.schema.json", "HEAD")
    if old is not None and "definitions" in old and '"port"' in old:
        assert len(schema_description_problems(json.loads(old), docs)) >= 40


def _git_show(path: str, rev: str) -> str | None:
    import subprocess

    done = subprocess.run(
        ["git", "show", f"{rev}:{path}"], cwd=ROOT, capture_output=True, text=True, check=False, timeout=30
    )
    return done.stdout if done.returncode == 0 else None


def test_k8s_manifests_and_derived_files_match_the_chart() -> None:
    problems = render_k8s.drift()
    assert problems == [], "\n".join(problems) + "\nrun: .venv/bin/python scripts/render_k8s.py"
    files = {p.name for p in (ROOT / "k8s").glob("*.yaml")}
    assert {f"{n}.yaml" for n in SERVICES} | {"shared.yaml", "ingest.yaml", "kustomization.yaml"} <= files
    for name in SERVICES:
        kinds = {d["kind"] for d in yaml.safe_load_all((ROOT / "k8s" / f"{name}.yaml").read_text()) if d}
        assert kinds == SERVICE_KINDS


def test_dashboard_copy_equals_the_grafana_source() -> None:
    source = ROOT / "deploy" / "grafana" / "skbqa-dashboard.json"
    if not source.is_file():
        pytest.skip("deploy/grafana/skbqa-dashboard.json does not exist yet")
    assert (CHART / "dashboards" / "skbqa-dashboard.json").read_text() == source.read_text()


def test_drift_check_fails_on_a_hand_edit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    copy = tmp_path / "k8s"
    shutil.copytree(ROOT / "k8s", copy)
    monkeypatch.setattr(render_k8s, "K8S", copy)
    assert render_k8s.drift() == []
    edited = copy / "gateway.yaml"
    edited.write_text(edited.read_text().replace("maxUnavailable: 1", "maxUnavailable: 3"))
    (copy / "extra.yaml").write_text("kind: ConfigMap\n")
    problems = render_k8s.drift()
    assert any("gateway.yaml" in p for p in problems) and any("extra.yaml" in p for p in problems)
    assert render_k8s.main(["--check"]) == 1


def test_kubernetes_validate_cli_accepts_the_rendered_manifests() -> None:
    """The same check through the `kubernetes-validate --strict` command an operator would run on k8s/."""
    import subprocess

    cli = Path(sys.executable).with_name("kubernetes-validate")
    if not cli.exists():
        pytest.skip("kubernetes-validate command not installed next to this interpreter")
    files = sorted(str(p) for p in (ROOT / "k8s").glob("*.yaml") if p.name != "kustomization.yaml")
    completed = subprocess.run(
        [str(cli), "--strict", "--kubernetes-version", "1.37.0", *files],
        capture_output=True,
        text=True,
        check=False,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "ERROR" not in completed.stdout and "WARN" not in completed.stdout, completed.stdout
    assert completed.stdout.count("INFO") == len(in_k8s(render_k8s.render()))


# ------------------------------------------------------------------------------- backend loading and credentials


def _containers_by_name(spec: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["name"]: c for c in all_containers(spec)}


def _skbqa_args(args: list[str]) -> Any:
    """The rendered args parsed by skbqa's own CLI: a flag the CLI does not have fails here, not in the cluster."""
    cli = pytest.importorskip("skbqa.cli.main")
    return cli._parser().parse_args(args)


def test_ingest_job_loads_bundled_milvus_and_nebula_after_ingesting(
    rendered: dict[str, list[dict[str, Any]]],
) -> None:
    ci = "bundled-backends-values.yaml"
    [job] = objects(rendered, ci, "Job")
    spec = job["spec"]["template"]["spec"]
    # ingest first (an init container), then the loaders over the index it has just written
    assert [c["name"] for c in spec["initContainers"]] == ["ingest"]
    assert spec["initContainers"][0]["args"][0] == "ingest"
    loaders = {c["name"]: c for c in spec["containers"]}
    assert set(loaders) == {"load-milvus", "load-nebula"}
    milvus = _skbqa_args(loaders["load-milvus"]["args"])
    assert (str(milvus.index), milvus.uri, milvus.index_type) == (
        "/index/current",
        "http://skbqa-milvus:19530",
        "AUTO",
    )
    # the URI the services search is the one the Job fills
    symbols = main_container(rendered, ci, "skbqa-symbols")["args"]
    assert arg_after(symbols, "--vectors") == "milvus://skbqa-milvus:19530"
    nebula = _skbqa_args(loaders["load-nebula"]["args"])
    assert (str(nebula.index), nebula.addr, nebula.space) == ("/index/current", "nebula-graphd-svc:9669", "biomed")
    assert arg_after(main_container(rendered, ci, "skbqa-grounding")["args"], "--graph") == (
        f"nebula://{nebula.addr}/{nebula.space}"
    )
    for loader in loaders.values():
        mounts = {m["name"]: m for m in loader["volumeMounts"]}
        assert mounts["index"]["readOnly"] is True and mounts["index"]["mountPath"] == "/index"
    # enabling backends is a new Job (a Job's pod template is immutable)
    defaults_job = objects(rendered, "defaults-values.yaml", "Job")[0]
    assert job["metadata"]["name"] != defaults_job["metadata"]["name"]
    assert "initContainers" not in defaults_job["spec"]["template"]["spec"]
    # and the ingest pod may reach exactly those two backends
    policy = one(rendered, ci, "NetworkPolicy", "skbqa-ingest")
    assert _egress_ports(policy) == {19530, 9669}
    assert _egress_ports(one(rendered, "defaults-values.yaml", "NetworkPolicy", "skbqa-ingest")) == set()


def test_external_backends_are_loaded_with_credentials_from_secrets(
    rendered: dict[str, list[dict[str, Any]]],
) -> None:
    ci = "bounded-loadgen-load-only-values.yaml"
    values = values_of(CHART / "ci" / ci)
    # no ingest in this release: a Job of its own waits for the existing index, then loads it
    [job] = [j for j in objects(rendered, ci, "Job") if "load-backends" in j["metadata"]["name"]]
    spec = job["spec"]["template"]["spec"]
    assert [c["name"] for c in spec["initContainers"]] == ["wait-for-index"]
    loaders = {c["name"]: c for c in spec["containers"]}
    milvus = _skbqa_args(loaders["load-milvus"]["args"])
    assert milvus.uri == "http://milvus.vectors.svc:19530" and milvus.index_type == "HNSW"
    nebula = _skbqa_args(loaders["load-nebula"]["args"])
    assert nebula.addr == "graphd-0.graph.svc:9669,graphd-1.graph.svc:9669" and nebula.space == "biomed"
    # credentials reach the CLI through $(VAR) expansion of env vars from the Secret; no value is rendered
    assert milvus.token == "$(SKBQA_MILVUS_TOKEN)"
    assert (nebula.user, nebula.password) == ("$(SKBQA_NEBULA_USER)", "$(SKBQA_NEBULA_PASSWORD)")
    env = {e["name"]: e for e in loaders["load-nebula"]["env"]}
    assert env["SKBQA_NEBULA_USER"]["valueFrom"]["secretKeyRef"] == {"name": "skbqa-nebula", "key": "user"}
    assert env["SKBQA_NEBULA_PASSWORD"]["valueFrom"]["secretKeyRef"] == {"name": "skbqa-nebula", "key": "password"}
    env = {e["name"]: e for e in loaders["load-milvus"]["env"]}
    assert env["SKBQA_MILVUS_TOKEN"]["valueFrom"]["secretKeyRef"] == {"name": "skbqa-milvus", "key": "token"}
    assert "SKBQA_NEBULA_PASSWORD" not in env  # each container gets only the credentials it uses

    def secret_env(name: str) -> dict[str, dict[str, Any]]:
        container = main_container(rendered, ci, f"skbqa-{name}")
        return {e["name"]: e["valueFrom"]["secretKeyRef"] for e in container["env"] if "valueFrom" in e}

    kafka = {
        "SKBQA_KAFKA_SASL_USERNAME": {"name": "skbqa-kafka-sasl", "key": "username"},
        "SKBQA_KAFKA_SASL_PASSWORD": {"name": "skbqa-kafka-sasl", "key": "password"},
    }
    milvus_env = {"SKBQA_MILVUS_TOKEN": {"name": "skbqa-milvus", "key": "token"}}
    nebula_env = {
        "SKBQA_NEBULA_USER": {"name": "skbqa-nebula", "key": "user"},
        "SKBQA_NEBULA_PASSWORD": {"name": "skbqa-nebula", "key": "password"},
    }
    expected = {
        "gateway": kafka,
        "parser": kafka,
        "symbols": kafka | milvus_env,
        "grounding": kafka | nebula_env,
        "ranking": kafka | milvus_env,
        "reranker": kafka,
    }
    for name, want in expected.items():
        assert secret_env(name) == want, name
        plain = {e["name"]: e.get("value") for e in main_container(rendered, ci, f"skbqa-{name}")["env"]}
        assert plain["SKBQA_KAFKA_SECURITY_PROTOCOL"] == values["credentials"]["kafka"]["securityProtocol"]
        assert plain["SKBQA_KAFKA_SASL_MECHANISM"] == "SCRAM-SHA-512"
    # without credentials nothing of the kind is rendered
    gateway_env = {e["name"] for e in main_container(rendered, "defaults-values.yaml", "skbqa-gateway")["env"]}
    assert not any(n.startswith(("SKBQA_KAFKA_", "SKBQA_MILVUS_", "SKBQA_NEBULA_")) for n in gateway_env)
    # the URLs in args carry no userinfo
    for obj in rendered[ci]:
        for _, pod, _ in pod_specs(obj):
            for container in all_containers(pod):
                assert not any(re.search(r"://[^/\s]*@", a) for a in container.get("args", [])), container["name"]


def test_loading_can_be_switched_off() -> None:
    values = {"milvus": {"enabled": True}, "ingest": {"load": {"enabled": False}}}
    docs = [doc.obj for doc in render_k8s.render(values)]
    [job] = [o for o in docs if o["kind"] == "Job" and o["metadata"]["name"] != "skbqa-topics"]
    assert [c["name"] for c in job["spec"]["template"]["spec"]["containers"]] == ["ingest"]
    policy = next(o for o in docs if o["kind"] == "NetworkPolicy" and o["metadata"]["name"] == "skbqa-ingest")
    assert policy["spec"]["egress"] == []


# ---------------------------------------------------------------------------------------- Ray, Triton, Locust


@pytest.mark.parametrize("ci_file", CI_FILES, ids=lambda p: p.name)
def test_every_pod_reading_the_index_waits_for_it(
    rendered: dict[str, list[dict[str, Any]]], ci_file: Path
) -> None:
    """Services and Ray pods open the index at start: they wait for the ingest Job's manifest on the shared
    volume, or fetch the published index onto their own (index.delivery objectStore), in their own image."""
    waiting = 0
    for obj in rendered[ci_file.name]:
        if obj["kind"] == "Job":
            continue
        for where, spec, _ in pod_specs(obj):
            index = [v for v in spec.get("volumes", []) if v["name"] == "index"]
            if not index:
                continue
            # the updater with shipped snapshots: its own volume, filled by fetch-index once (`--keep`)
            shipping_updater = (
                ci_file.name == "shipped-updates-values.yaml" and obj["metadata"]["name"] == "skbqa-updater"
            )
            on_claim = index[0].get("persistentVolumeClaim") and not shipping_updater
            first = "wait-for-index" if on_claim else "fetch-index"
            init = spec.get("initContainers", [])
            assert [c["name"] for c in init][:1] == [first], where
            assert init[0]["image"] == spec["containers"][0]["image"], where  # no second image to pull
            waiting += 1
    if "kuberay" in ci_file.name:
        ray = one(rendered, ci_file.name, "RayService", "skbqa-ray")
        assert all(t["spec"]["initContainers"][0]["name"] == "wait-for-index" for t in pod_templates(ray))
    assert waiting >= 6


def test_ray_pods_skip_the_wait_when_told() -> None:
    values = {
        "ray": {"enabled": True},
        "index": {"waitForIndex": False},
        "networkPolicy": {"apiServerCIDRs": ["10.96.0.1/32"]},
    }
    docs = [doc.obj for doc in render_k8s.render(values)]
    ray = next(o for o in docs if o["kind"] == "RayService")
    assert all("initContainers" not in t["spec"] for t in pod_templates(ray))


def test_triton_cpu_only_by_default_and_gpu_when_asked(rendered: dict[str, list[dict[str, Any]]]) -> None:
    cpu = main_container(rendered, "bounded-loadgen-load-only-values.yaml", "skbqa-triton")
    assert not any("gpu" in k for k in cpu["resources"]["limits"])
    env = {e["name"]: e.get("value") for e in cpu["env"]}
    assert env["NVIDIA_VISIBLE_DEVICES"] == "void"  # a CPU pod must not see a GPU it was not given
    gpu = main_container(rendered, "kuberay-gpu-loadgen-values.yaml", "skbqa-triton")
    assert gpu["resources"]["limits"]["nvidia.com/gpu"] == 1
    assert "NVIDIA_VISIBLE_DEVICES" not in {e["name"] for e in gpu["env"]}  # the device plugin sets it


def test_triton_model_config_runs_on_gpu_or_cpu() -> None:
    """KIND_GPU would stop Triton loading the model on a CPU-only pod; KIND_AUTO takes a GPU when there is one."""
    text_format = pytest.importorskip("google.protobuf.text_format")
    pb = pytest.importorskip("tritonclient.grpc.model_config_pb2")
    path = ROOT / "deploy" / "triton" / "model_repository" / "skbqa_encoder" / "config.pbtxt"
    config = text_format.Parse(path.read_text(), pb.ModelConfig())
    assert [g.kind for g in config.instance_group] == [pb.ModelInstanceGroup.KIND_AUTO]
    assert all(not g.gpus for g in config.instance_group)  # no device pinned: every GPU the pod sees, or CPU


def test_bounded_load_generator_runs_as_jobs(rendered: dict[str, list[dict[str, Any]]]) -> None:
    ci = "bounded-loadgen-load-only-values.yaml"
    values = values_of(CHART / "ci" / ci)["loadgen"]
    assert not [d for d in objects(rendered, ci, "Deployment") if "loadgen" in d["metadata"]["name"]]
    jobs = {
        j["metadata"]["labels"]["skbqa.io/locust-role"]: j
        for j in objects(rendered, ci, "Job")
        if "loadgen" in j["metadata"]["name"]
    }
    assert set(jobs) == {"master", "worker"}
    master, worker = jobs["master"], jobs["worker"]
    for job in (master, worker):
        assert job["spec"]["backoffLimit"] == 0
        assert job["spec"]["ttlSecondsAfterFinished"] == 0
        assert job["spec"]["template"]["spec"]["restartPolicy"] == "Never"
    assert worker["spec"]["parallelism"] == worker["spec"]["completions"] == values["workers"]
    container = master["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["LOCUST_RUN_TIME"] == "10m"
    assert (env["LOCUST_USERS"], env["LOCUST_SPAWN_RATE"]) == ("50", "10")
    assert {"--headless", "--only-summary", "--master"} <= set(container["args"])
    assert arg_after(container["args"], "--exit-code-on-error") == "1"
    worker_env = {e["name"] for e in worker["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert "LOCUST_RUN_TIME" not in worker_env  # the master ends the run
    # workers still find the master through its Service
    service = one(rendered, ci, "Service", "skbqa-loadgen")
    assert service["spec"]["selector"]["skbqa.io/locust-role"] == "master"
    # a different run is a different Job (pod templates of Jobs are immutable)
    other = render_k8s.render({**values_of(CHART / "ci" / ci), "loadgen": {**values, "runTime": "20m"}})
    names = {d.obj["metadata"]["name"] for d in other if d.obj["kind"] == "Job"}
    assert master["metadata"]["name"] not in names


def test_standalone_bounded_load_generator() -> None:
    docs = [doc.obj for doc in render_k8s.render({"loadgen": {"enabled": True, "runTime": "90s", "users": 8}})]
    [job] = [o for o in docs if o["kind"] == "Job" and "loadgen" in o["metadata"]["name"]]
    assert not [o for o in docs if o["kind"] in ("Deployment", "Service") and "loadgen" in o["metadata"]["name"]]
    container = job["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["LOCUST_RUN_TIME"] == "90s" and env["LOCUST_USERS"] == "8"
    assert job["spec"]["ttlSecondsAfterFinished"] == 86400
    assert "--master" not in container["args"] and "--headless" in container["args"]
    for obj in docs:
        if obj["kind"] not in CRD_KINDS:
            kubernetes_validate.validate(obj, KUBERNETES_VERSIONS[-1], strict=True)


# -------------------------------------------------------------------------------------- plain manifests, record


def test_plain_manifests_are_not_labelled_as_helm_managed(rendered: dict[str, list[dict[str, Any]]]) -> None:
    count = 0
    for path in sorted((ROOT / "k8s").glob("*.yaml")):
        if path.name == "kustomization.yaml":
            continue
        for obj in yaml.safe_load_all(path.read_text()):
            if not obj:
                continue
            count += 1
            assert obj["metadata"]["labels"]["app.kubernetes.io/managed-by"] == render_k8s.MANAGED_BY, path.name
            template = (obj.get("spec") or {}).get("template") or {}
            if template:
                assert template["metadata"]["labels"]["app.kubernetes.io/managed-by"] == render_k8s.MANAGED_BY
    assert count == len([o for o in rendered["defaults-values.yaml"] if render_k8s.component_of(o) != "helm-test"])
    assert "managed-by: Helm" not in "".join(p.read_text() for p in (ROOT / "k8s").glob("*.yaml"))
    # a Helm install keeps Helm's own label
    chart_labels = objects(rendered, "defaults-values.yaml", "Deployment")[0]["metadata"]["labels"]
    assert chart_labels["app.kubernetes.io/managed-by"] == "Helm"


def test_saved_render_record_matches_the_chart(rendered: dict[str, list[dict[str, Any]]]) -> None:
    """bench/results/helm-render.json (scripts/render_k8s.py --record) is current: same files, same object counts."""
    path = ROOT / "bench" / "results" / "helm-render.json"
    record = json.loads(path.read_text())["valuesFiles"]
    assert set(record) == {"defaults (values.yaml)"} | set(rendered)
    for name, objs in rendered.items():
        assert record[name]["objects"] == len(objs), f"{name}: run scripts/render_k8s.py --record {path}"
        kinds: dict[str, int] = {}
        for obj in objs:
            kinds[obj["kind"]] = kinds.get(obj["kind"], 0) + 1
        assert record[name]["kinds"] == kinds, name
        assert all(v["valid"] and not v["errors"] for v in record[name]["validation"].values()), name
        assert set(record[name]["validation"]) == set(KUBERNETES_VERSIONS)
    assert record["defaults (values.yaml)"]["objects"] == len(render_k8s.render())
