"""`helm test`: the chart's test Pod checks the gateway's health and asks one question through the client SDK. Its
rendered script is run here against a real `skbqa serve`: plaintext, then mutual TLS with a token (and refused with
the wrong token), so the hook is known to work before any cluster runs it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from skbqa.serving.run import start_embedded
from skbqa.serving.settings import ServiceSettings
from tests.certs import make_certs, mutual_tls_settings
from tests.deploy.test_chart import CHART, render_k8s

TLS_DIR = "/etc/skbqa/test-tls"


def _render(values: dict[str, Any]) -> list[dict[str, Any]]:
    return [doc.obj for doc in render_k8s.render(values)]


def _test_pod(objs: list[dict[str, Any]]) -> dict[str, Any]:
    (pod,) = [o for o in objs if o["kind"] == "Pod"]
    return pod


def _run(
    pod: dict[str, Any], env: dict[str, str], tls_dir: Path | None = None
) -> subprocess.CompletedProcess[str]:
    (container,) = pod["spec"]["containers"]
    script = container["args"][0]
    if tls_dir is not None:
        script = script.replace(TLS_DIR, str(tls_dir))
    rendered_env = {e["name"]: e["value"] for e in container["env"] if "value" in e}
    return subprocess.run(
        [sys.executable, "-c", script],
        env={**os.environ, **rendered_env, **env},
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_test_pod_is_a_restricted_hook_that_only_reaches_the_gateway() -> None:
    objs = _render({})
    pod = _test_pod(objs)
    assert pod["metadata"]["annotations"]["helm.sh/hook"] == "test"
    (container,) = pod["spec"]["containers"]
    assert container["securityContext"]["readOnlyRootFilesystem"] and pod["spec"]["restartPolicy"] == "Never"
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["SKBQA_SERVER"] == "skbqa-gateway:50051"
    (policy,) = [o for o in objs if o["kind"] == "NetworkPolicy" and o["metadata"]["name"] == "skbqa-helm-test"]
    (rule,) = policy["spec"]["egress"]
    assert rule["ports"] == [{"protocol": "TCP", "port": 50051}]
    assert rule["to"][0]["podSelector"]["matchLabels"]["app.kubernetes.io/component"] == "gateway"
    assert not [o for o in _render({"helmTest": {"enabled": False}}) if o["kind"] == "Pod"]


def test_a_protected_gateway_gets_its_token_and_certificates() -> None:
    values = yaml.safe_load((CHART / "ci" / "external-tls-auth-values.yaml").read_text())
    (container,) = _test_pod(_render(values))["spec"]["containers"]
    token = next(e for e in container["env"] if e["name"] == "SKBQA_CLIENT_TOKEN")
    assert token["valueFrom"]["secretKeyRef"] == {"name": "skbqa-test-token", "key": "token"}
    assert {"name": "tls", "mountPath": TLS_DIR, "readOnly": True} in container["volumeMounts"]


def test_the_rendered_script_passes_against_a_real_server(biomed_sample_engine) -> None:
    running, stop = start_embedded(ServiceSettings(index=biomed_sample_engine.stores.directory, port=0))
    try:
        result = _run(_test_pod(_render({})), {"SKBQA_SERVER": f"127.0.0.1:{running.port}"})
    finally:
        stop()
    assert result.returncode == 0, result.stderr
    assert "ok: 3 answers" in result.stdout


def test_the_rendered_script_over_mutual_tls_with_a_token(biomed_sample_engine, tmp_path) -> None:
    certs = make_certs(tmp_path / "certs")
    tls_dir = tmp_path / "test-tls"
    tls_dir.mkdir()
    for source, name in ((certs.ca, "ca.crt"), (certs.client_cert, "tls.crt"), (certs.client_key, "tls.key")):
        (tls_dir / name).write_bytes(source.read_bytes())
    settings = mutual_tls_settings(biomed_sample_engine.stores.directory, certs, tmp_path / "tokens", "test-token")
    running, stop = start_embedded(settings)
    pod = _test_pod(_render({"helmTest": {"deadlineSeconds": 20, "tls": {"serverName": "localhost"}}}))
    common = {"SKBQA_SERVER": f"127.0.0.1:{running.port}"}
    try:
        good = _run(pod, {**common, "SKBQA_CLIENT_TOKEN": "test-token"}, tls_dir)
        bad = _run(pod, {**common, "SKBQA_CLIENT_TOKEN": "wrong-token"}, tls_dir)
    finally:
        stop()
    assert good.returncode == 0 and "ok: 3 answers" in good.stdout, good.stderr
    assert bad.returncode == 1 and bad.stderr.strip().startswith("gateway: UNAUTHENTICATED"), bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("missing", ["tls", "auth"])
def test_the_schema_wants_what_a_protected_gateway_needs(missing: str) -> None:
    from tests.deploy.test_chart import helm

    gateway = (
        {"tls": {"enabled": True, "existingSecret": "gw"}}
        if missing == "tls"
        else {"auth": {"enabled": True, "existingSecret": "t"}}
    )
    with helm.Chart.load(str(CHART)) as chart:
        with pytest.raises(helm.HelmError):
            chart.validate_schema({"gateway": gateway})
        chart.validate_schema({"gateway": gateway, "helmTest": {"enabled": False}})
