"""Live updates in the chart (updates.enabled, helm/skbqa/ci/live-updates-values.yaml): one updater pod
(`skbqa serve --role updater`, strategy Recreate) mounting the index volume read-write, probed, credentialed and
fenced like the stages; the gateway gets the admin tokens that may call ApplyChanges; the topics hook creates
`skbqa.changes` with one partition; and the chart refuses what cannot work (NebulaGraph, tokens without admin
tokens, a change topic with several partitions); Ray Serve's replicas open the index the updater writes (or, with
shipped snapshots, fetch its versions: test_chart_shipped_updates.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.deploy.test_chart import (
    CHART,
    CRD_KINDS,
    KUBERNETES_VERSIONS,
    SERVICES,
    _skbqa_args,
    all_containers,
    helm,
    kubernetes_validate,
    objects,
    one,
    render_ci,
    render_k8s,
    validate_custom,
    values_of,
)

CI = "live-updates-values.yaml"
UPDATER = "skbqa-updater"


@pytest.fixture(scope="module")
def rendered() -> dict[str, list[dict[str, Any]]]:
    return {
        CI: render_ci(CI),
        "defaults": [doc.obj for doc in render_k8s.render()],
    }


def _render(values: dict[str, Any]) -> list[dict[str, Any]]:
    return [doc.obj for doc in render_k8s.render(values)]


def _pod(deployment: dict[str, Any]) -> dict[str, Any]:
    return deployment["spec"]["template"]["spec"]


def _env(container: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {e["name"]: e for e in container.get("env", [])}


def _serve_settings(container: dict[str, Any]) -> Any:
    """What `skbqa serve` makes of the rendered args and plain env (its own parser and settings code)."""
    cli_serve = pytest.importorskip("skbqa.cli.serve")
    args = _skbqa_args(container["args"])
    with pytest.MonkeyPatch.context() as patch:
        for name, env in _env(container).items():
            if name.startswith("SKBQA_") and "value" in env:
                patch.setenv(name, env["value"])
        settings = cli_serve.settings_from_args(args)
    settings.validate()
    return settings


# ------------------------------------------------------------------------------------------------ the Deployment


def test_the_updater_is_one_pod_recreated_never_rolled(rendered) -> None:
    deployment = one(rendered, CI, "Deployment", UPDATER)
    assert deployment["spec"]["replicas"] == 1
    # two updaters must never run at once: the old pod stops before the new one starts
    assert deployment["spec"]["strategy"] == {"type": "Recreate"}
    names = {(o["kind"], o["metadata"]["name"]) for o in rendered[CI]}
    assert ("HorizontalPodAutoscaler", UPDATER) not in names
    assert ("PodDisruptionBudget", UPDATER) not in names
    assert {("ServiceAccount", UPDATER), ("Service", UPDATER), ("NetworkPolicy", UPDATER)} <= names
    spec = _pod(deployment)
    assert "topologySpreadConstraints" not in spec
    # a stable host name: a restarted updater recognises (and removes) the work directory of a fold killed with
    # its predecessor, which carries PID@HOST
    assert spec["hostname"] == UPDATER
    assert spec["serviceAccountName"] == UPDATER and spec["automountServiceAccountToken"] is False
    assert spec["terminationGracePeriodSeconds"] == 90
    assert spec["nodeSelector"] == values_of(CHART / "ci" / CI)["updates"]["nodeSelector"]
    # the stages never roll that way
    for name in SERVICES:
        assert one(rendered, CI, "Deployment", f"skbqa-{name}")["spec"]["strategy"]["type"] == "RollingUpdate"


def test_the_updater_runs_the_updater_role_on_the_bus_with_the_encoder(rendered) -> None:
    container = _pod(one(rendered, CI, "Deployment", UPDATER))["containers"][0]
    settings = _serve_settings(container)
    assert settings.role == "updater"
    assert str(settings.index) == "/index/current"
    assert settings.bus_url == "kafka://kafka.kafka.svc.cluster.local:9092"
    # it encodes the texts a change adds or alters with the encoder the stages use
    assert settings.encoder_url == "triton://skbqa-triton:8001/skbqa_encoder"
    parser = one(rendered, CI, "Deployment", "skbqa-parser")
    assert _serve_settings(_pod(parser)["containers"][0]).encoder_url == settings.encoder_url
    assert (settings.port, settings.metrics_port) == (50051, 9100)
    assert settings.vectors_url is settings.graph_url is settings.ray_address is None
    # the image of every service; what its health-only server does not use is not set
    assert container["image"] == _pod(parser)["containers"][0]["image"]
    assert not {"SKBQA_MAX_INFLIGHT", "SKBQA_LAG_INTERVAL_S"} & set(_env(container))
    assert container["resources"] == values_of(CHART / "values.yaml")["updates"]["resources"]


def test_the_updater_alone_mounts_the_index_read_write(rendered) -> None:
    spec = _pod(one(rendered, CI, "Deployment", UPDATER))
    container = spec["containers"][0]
    (mount,) = [m for m in container["volumeMounts"] if m["name"] == "index"]
    # the volume root: a new snapshot is written beside the index directory and renamed over it
    assert mount["mountPath"] == "/index" and not mount.get("readOnly", False)
    (volume,) = [v for v in spec["volumes"] if v["name"] == "index"]
    assert volume["persistentVolumeClaim"] == {"claimName": "skbqa-index"}  # the claim every pod mounts
    # it waits for the ingest Job's index like every service (read-only while it waits)
    assert [c["name"] for c in spec["initContainers"]] == ["wait-for-index"]
    # every other pod mounts the same claim read-only
    for obj in objects(rendered, CI, "Deployment"):
        if obj["metadata"]["name"] == UPDATER:
            continue
        pod = _pod(obj)
        for volume in pod.get("volumes", []):
            if volume["name"] == "index":
                assert volume["persistentVolumeClaim"] == {"claimName": "skbqa-index", "readOnly": True}
        for c in all_containers(pod):
            for m in c.get("volumeMounts", []):
                if m["name"] == "index":
                    assert m["readOnly"] is True, f"{obj['metadata']['name']}/{c['name']}"


def test_probes_credentials_and_tls_are_the_stages(rendered) -> None:
    updater = _pod(one(rendered, CI, "Deployment", UPDATER))["containers"][0]
    stage = _pod(one(rendered, CI, "Deployment", "skbqa-grounding"))["containers"][0]
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert updater[probe] == stage[probe], probe
    assert updater["livenessProbe"]["grpc"] == {"port": 50052, "service": "liveness"}  # internalTls health port
    assert updater["ports"] == stage["ports"]
    assert updater["securityContext"] == stage["securityContext"]
    env, stage_env = _env(updater), _env(stage)
    for name in (
        "SKBQA_KAFKA_SASL_USERNAME",
        "SKBQA_KAFKA_SASL_PASSWORD",
        "SKBQA_KAFKA_SECURITY_PROTOCOL",
        "SKBQA_TLS_CERT_FILE",
        "SKBQA_TLS_CLIENT_CA_FILE",
        "SKBQA_HEALTH_PORT",
    ):
        assert env[name] == stage_env[name], name
    assert env["SKBQA_KAFKA_SASL_PASSWORD"]["valueFrom"]["secretKeyRef"]["name"] == "skbqa-kafka-sasl"
    settings = _serve_settings(updater)
    assert settings.health_port == 50052 and str(settings.tls_cert_file) == "/etc/skbqa/tls/tls.crt"


def test_the_updater_service_is_scraped(rendered) -> None:
    monitor = one(rendered, CI, "ServiceMonitor", "skbqa")
    service = one(rendered, CI, "Service", UPDATER)
    selector = monitor["spec"]["selector"]["matchLabels"]
    assert all(service["metadata"]["labels"].get(k) == v for k, v in selector.items())
    assert any(p["name"] == monitor["spec"]["endpoints"][0]["port"] for p in service["spec"]["ports"])
    assert (
        service["spec"]["selector"] == one(rendered, CI, "Deployment", UPDATER)["spec"]["selector"]["matchLabels"]
    )
    annotations = one(rendered, CI, "Deployment", UPDATER)["spec"]["template"]["metadata"]["annotations"]
    assert annotations["prometheus.io/port"] == "9100"


def test_off_by_default(rendered) -> None:
    assert not [o for o in rendered["defaults"] if "updater" in o["metadata"]["name"]]
    assert not (Path(render_k8s.K8S) / "updater.yaml").exists()
    gateway = _pod(one(rendered, "defaults", "Deployment", "skbqa-gateway"))
    assert "SKBQA_ADMIN_TOKENS_FILE" not in _env(gateway["containers"][0])
    assert "admin" not in {v["name"] for v in gateway["volumes"]}


def test_every_object_validates(rendered) -> None:
    """Also rendered and validated by test_chart.py (every CI file); here with the defaults plus updates only."""
    for obj in _render({"updates": {"enabled": True}}):
        if obj["kind"] in CRD_KINDS:
            validate_custom(obj, KUBERNETES_VERSIONS[0])
        else:
            kubernetes_validate.validate(obj, KUBERNETES_VERSIONS[0], strict=True)


def test_the_updater_starts_from_the_service_defaults() -> None:
    toleration = {"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}
    values = {
        "updates": {"enabled": True, "extraArgs": ["--request-timeout", "60"]},
        "serviceDefaults": {"tolerations": [toleration], "nodeSelector": {"pool": "cpu"}},
    }
    (deployment,) = [o for o in _render(values) if o["kind"] == "Deployment" and o["metadata"]["name"] == UPDATER]
    spec = _pod(deployment)
    assert spec["tolerations"] == [toleration] and spec["nodeSelector"] == {"pool": "cpu"}
    args = spec["containers"][0]["args"]
    assert args[-2:] == ["--request-timeout", "60"] and "--encoder" not in args  # no Triton: the local encoder


# ------------------------------------------------------------------------------------------------- the gateway


def test_the_gateway_takes_changes_with_the_admin_tokens(rendered) -> None:
    spec = _pod(one(rendered, CI, "Deployment", "skbqa-gateway"))
    container = spec["containers"][0]
    mounts = {m["name"]: m for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in spec["volumes"]}
    assert volumes["admin"]["secret"]["secretName"] == "skbqa-admin-tokens"
    assert mounts["admin"]["readOnly"] is True
    settings = _serve_settings(container)
    assert settings.role == "gateway"
    assert str(settings.admin_tokens_file) == f"{mounts['admin']['mountPath']}/tokens"
    assert str(settings.tokens_file).startswith(mounts["auth"]["mountPath"])  # askers' tokens still count
    # the gateway accepts ApplyChanges in the distributed form when its settings take changes (no Milvus
    # or NebulaGraph) and an updater reports on skbqa.versions: no other switch
    run = pytest.importorskip("skbqa.serving.run")
    assert run.takes_changes(settings)
    # the admin tokens go to the gateway only
    for obj in objects(rendered, CI, "Deployment"):
        if obj["metadata"]["name"] != "skbqa-gateway":
            assert "admin" not in {v["name"] for v in _pod(obj).get("volumes", [])}, obj["metadata"]["name"]


# ---------------------------------------------------------------------------------------------- network policy


def _ports(rules: list[dict[str, Any]]) -> set[int]:
    return {p["port"] for rule in rules for p in rule.get("ports", [])}


def test_the_updater_reaches_kafka_and_triton_only_and_is_only_scraped(rendered) -> None:
    policy = one(rendered, CI, "NetworkPolicy", UPDATER)
    assert policy["spec"]["policyTypes"] == ["Ingress", "Egress"]
    assert policy["spec"]["podSelector"]["matchLabels"]["app.kubernetes.io/component"] == "updater"
    assert _ports(policy["spec"]["egress"]) == {9092, 8001}
    (ingress,) = policy["spec"]["ingress"]
    assert _ports([ingress]) == {9100}  # metrics, from Prometheus; nobody calls its gRPC port
    assert ingress["from"] == values_of(CHART / "values.yaml")["networkPolicy"]["prometheus"]
    # Triton admits it, and DNS comes from the release-wide policy like every pod's
    triton = one(rendered, CI, "NetworkPolicy", "skbqa-triton")
    callers = {
        peer["podSelector"]["matchLabels"]["app.kubernetes.io/component"]
        for rule in triton["spec"]["ingress"]
        if rule["ports"][0]["port"] == 8001
        for peer in rule["from"]
    }
    assert "updater" in callers
    labels = one(rendered, CI, "Deployment", UPDATER)["spec"]["template"]["metadata"]["labels"]
    for name in ("skbqa-allow-dns", "skbqa-default-deny"):
        selector = one(rendered, CI, "NetworkPolicy", name)["spec"]["podSelector"]["matchLabels"]
        assert all(labels.get(k) == v for k, v in selector.items()), name
    assert _ports(one(rendered, CI, "NetworkPolicy", "skbqa-allow-dns")["spec"]["egress"]) == {53}
    # without Triton: Kafka only
    plain = next(
        o
        for o in _render({"updates": {"enabled": True}})
        if o["kind"] == "NetworkPolicy" and o["metadata"]["name"] == UPDATER
    )
    assert _ports(plain["spec"]["egress"]) == {9092}


# ------------------------------------------------------------------------------------------------------ topics


def test_the_topics_hook_creates_the_change_topic_with_one_partition(rendered) -> None:
    """The hook runs `skbqa topics` with the values' partitions; that command creates skbqa.changes and
    skbqa.versions with exactly one partition whatever the pipeline's count (run here against a fake broker)."""
    job = one(rendered, CI, "Job", "skbqa-topics")
    assert job["metadata"]["annotations"]["helm.sh/hook"] == "pre-install,pre-upgrade"
    (container,) = job["spec"]["template"]["spec"]["containers"]
    args = _skbqa_args(container["args"])
    assert args.partitions == 12
    kafka = pytest.importorskip("skbqa.bus.kafka")
    backends = pytest.importorskip("skbqa.cli.backends")
    created: dict[str, int] = {}

    class FakeBroker(kafka.KafkaBus):
        def __init__(self) -> None:  # no connection
            pass

        def provision_topics(self, topics: Any, partitions: int, *, configs: Any = None) -> dict[str, int]:
            created.update(dict.fromkeys(topics, partitions))
            return dict.fromkeys(topics, partitions)

        def close(self) -> None:
            pass

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(kafka, "bus_from_url", lambda url: FakeBroker())
        assert backends.run_topics(args) == 0
    assert created["skbqa.changes"] == created["skbqa.versions"] == 1
    assert created["skbqa.query"] == 12


def test_the_bundled_kafka_provisions_the_update_topics_with_one_partition() -> None:
    topics = {t["name"]: t for t in values_of(CHART / "values.yaml")["kafka"]["provisioning"]["topics"]}
    assert topics["skbqa.changes"]["partitions"] == topics["skbqa.versions"]["partitions"] == 1
    names = pytest.importorskip("skbqa.bus.topics")
    assert set(topics) == {*names.ALL, *names.SINGLE_PARTITION}
    # renders with the bundled Kafka (no topics hook then: provisioning does it)
    objs = _render({"updates": {"enabled": True}, "kafka": {"enabled": True}})
    assert [o for o in objs if o["kind"] == "Deployment" and o["metadata"]["name"] == UPDATER]
    assert not [o for o in objs if o["metadata"]["name"] == "skbqa-topics"]


# ---------------------------------------------------------------------------------------------------- refusals

_ON = {"enabled": True}


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"updates": _ON, "nebula": {"enabled": True}}, r"cannot work with NebulaGraph \(nebula.enabled\)"),
        (
            {"updates": _ON, "externalNebula": {"url": "nebula://graphd.graph.svc:9669/kb"}},
            r"cannot work with NebulaGraph \(externalNebula.url\): .* do not follow changes",
        ),
        (
            {
                "updates": _ON,
                "gateway": {"auth": {"enabled": True, "existingSecret": "tokens"}},
                "helmTest": {"auth": {"existingSecret": "test-token"}},
            },
            r"needs updates.adminTokens.existingSecret: .*only an admin token may call ApplyChanges",
        ),
        (
            {"updates": {"enabled": True, "adminTokens": {"existingSecret": "admin"}}},
            r"updates.adminTokens.existingSecret needs gateway.auth.enabled",
        ),
        (
            {
                "updates": _ON,
                "kafka": {"enabled": True, "provisioning": {"topics": [{"name": "skbqa.query", "partitions": 3}]}},
            },
            r"needs skbqa.changes in kafka.provisioning.topics with partitions: 1",
        ),
        (
            {"kafka": {"enabled": True, "provisioning": {"topics": [{"name": "skbqa.changes", "partitions": 3}]}}},
            r"lists skbqa.changes with 3 partitions: it must have exactly 1",
        ),
    ],
)
def test_what_cannot_work_is_refused(values: dict[str, Any], message: str) -> None:
    with helm.Chart.load(str(CHART)) as chart, pytest.raises(helm.HelmError, match=message):
        chart.render(values, name="skbqa", namespace="skbqa")


def test_updates_work_with_ray_serve_whose_replicas_open_the_index_the_updater_writes() -> None:
    """The Ray replicas follow versions (docs/ray.md): they must open the snapshots the updater renames over the
    index directory, i.e. the same claim at the same path."""
    objs = _render({"updates": _ON, "ray": {"enabled": True, "autoscaling": False}})
    (updater,) = [o for o in objs if o["kind"] == "Deployment" and o["metadata"]["name"] == UPDATER]
    writes = _serve_settings(_pod(updater)["containers"][0]).index
    claim = {v["name"]: v for v in _pod(updater)["volumes"]}["index"]["persistentVolumeClaim"]["claimName"]
    (ray,) = [o for o in objs if o["kind"] == "RayService"]
    applications = yaml.safe_load(ray["spec"]["serveConfigV2"])["applications"]
    assert applications and {app["args"]["index_dir"] for app in applications} == {str(writes)}
    cluster = ray["spec"]["rayClusterConfig"]
    for group in [cluster["headGroupSpec"], *cluster["workerGroupSpecs"]]:
        volumes = {v["name"]: v for v in group["template"]["spec"]["volumes"]}
        assert volumes["index"]["persistentVolumeClaim"]["claimName"] == claim
    (reranker,) = [o for o in objs if o["kind"] == "Deployment" and o["metadata"]["name"] == "skbqa-reranker"]
    settings = _serve_settings(_pod(reranker)["containers"][0])
    run = pytest.importorskip("skbqa.serving.run")
    assert settings.ray_address and run.takes_changes(settings)  # on Ray and following: the gateway takes changes


def test_a_read_write_once_volume_is_the_operators_call() -> None:
    """Not refused (one node can hold every pod): rendered, and the install notes say what it implies."""
    values = {"updates": _ON, "index": {"accessModes": ["ReadWriteOnce"]}}
    with helm.Chart.load(str(CHART)) as chart:
        manifests = chart.render(values, name="skbqa", namespace="skbqa")
    assert "kind: Deployment" in manifests["skbqa/templates/services.yaml"]
    assert "ReadWriteOnce" in manifests["skbqa/templates/NOTES.txt"]
    with helm.Chart.load(str(CHART)) as chart:
        notes = chart.render({"updates": _ON}, name="skbqa", namespace="skbqa")["skbqa/templates/NOTES.txt"]
    assert "deploy/skbqa-updater" in notes and "ReadWriteOnce" not in notes


def test_the_schema_refuses_unknown_update_keys() -> None:
    with helm.Chart.load(str(CHART)) as chart:
        for bad in (
            {"updates": {"replicas": 2}},  # one writer, never more
            {"updates": {"enabled": "yes"}},
            {"updates": {"adminTokens": {"token": "s3cret"}}},  # tokens only ever come from a Secret
        ):
            with pytest.raises(helm.HelmError):
                chart.validate_schema(bad)
        chart.validate_schema(values_of(CHART / "ci" / CI))
