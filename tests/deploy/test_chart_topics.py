"""The topics hook: before install and upgrade a Job runs `skbqa topics` with the values' partitions, replication
factor and min.insync.replicas (its args parsed by skbqa's own CLI parser), behind a NetworkPolicy of its own; the
chart refuses a stage that could run more pods than there are partitions, and min.insync.replicas above the
replication factor; with the bundled Kafka its provisioning does the job instead."""

from __future__ import annotations

from typing import Any

import pytest

from skbqa.cli.main import _parser
from tests.deploy.test_chart import CHART, helm, render_k8s


def _objs(values: dict[str, Any]) -> list[dict[str, Any]]:
    return [doc.obj for doc in render_k8s.render(values)]


def _hook(objs: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    (found,) = [o for o in objs if o["kind"] == kind and o["metadata"]["name"] == "skbqa-topics"]
    return found


def test_a_pre_install_hook_creates_the_topics_with_the_values() -> None:
    objs = _objs({"topics": {"partitions": 8, "replicationFactor": 3, "minInsyncReplicas": 2}})
    job = _hook(objs, "Job")
    assert job["metadata"]["annotations"]["helm.sh/hook"] == "pre-install,pre-upgrade"
    (container,) = job["spec"]["template"]["spec"]["containers"]
    args = _parser().parse_args(container["args"])
    assert (args.command, args.partitions, args.replication_factor, args.min_insync_replicas) == (
        "topics",
        8,
        3,
        2,
    )
    assert args.bus == "kafka://kafka.kafka.svc.cluster.local:9092"
    policy = _hook(objs, "NetworkPolicy")
    assert int(policy["metadata"]["annotations"]["helm.sh/hook-weight"]) < int(
        job["metadata"]["annotations"]["helm.sh/hook-weight"]
    )  # the policy exists before the Job's pod
    assert any({"protocol": "TCP", "port": 9092} in rule.get("ports", []) for rule in policy["spec"]["egress"])


def test_sasl_credentials_reach_the_hook() -> None:
    objs = _objs({"credentials": {"kafka": {"existingSecret": "kafka-sasl"}}})
    (container,) = _hook(objs, "Job")["spec"]["template"]["spec"]["containers"]
    names = {e["name"] for e in container["env"]}
    assert {"SKBQA_KAFKA_SASL_USERNAME", "SKBQA_KAFKA_SASL_PASSWORD"} <= names


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"topics": {"partitions": 4}}, "services.parser may run 6 pods but topics.partitions is 4"),
        (
            {"topics": {"partitions": 4}, "serviceDefaults": {"autoscaling": {"enabled": False}, "replicas": 5}},
            "replicas",
        ),
        ({"topics": {"replicationFactor": 1, "minInsyncReplicas": 2}}, "every publish would fail"),
    ],
)
def test_settings_kafka_cannot_honour_are_refused(values: dict[str, Any], message: str) -> None:
    with helm.Chart.load(str(CHART)) as chart, pytest.raises(helm.HelmError, match=message):
        chart.render(values, name="skbqa", namespace="skbqa")


def test_no_hook_with_the_bundled_kafka_or_when_off() -> None:
    for values in ({"topics": {"create": False}}, {"kafka": {"enabled": True}}):
        assert not [o for o in _objs(values) if o["metadata"]["name"] == "skbqa-topics"]
