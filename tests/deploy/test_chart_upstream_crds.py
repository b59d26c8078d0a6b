"""The chart's Prometheus Operator objects against the upstream CRDs: kubernetes-models-ts generates its
`@kubernetes-models/prometheus-operator` schemas from the operator's own CRD files, pinned in
tests/deploy/upstream_crds/package-lock.json. The strict hand-written schemas of crd_schemas.py still run too
(they also refuse fields the CRDs would silently prune). KubeRay publishes its CRDs in no package a registry
reachable here carries, so a RayService is checked by crd_schemas.py and its pod templates by kubernetes-validate."""

from __future__ import annotations

import copy
import json
import subprocess
from pathlib import Path
from typing import Any

from tests.deploy.test_chart import objects, rendered  # noqa: F401  (the module's render fixture)
from tests.npm_install import node_with_packages

VALIDATOR_DIR = Path(__file__).resolve().parent / "upstream_crds"
VALIDATE_TIMEOUT_S = 60


def upstream_errors(objs: list[dict[str, Any]]) -> list[str | None]:
    """For each object, None when the upstream schema accepts it, else its first error."""
    node = node_with_packages(VALIDATOR_DIR, "@kubernetes-models/prometheus-operator", suite="upstream CRDs")
    done = subprocess.run(
        [node, str(VALIDATOR_DIR / "validate.mjs")],
        input=json.dumps(objs),
        capture_output=True,
        text=True,
        timeout=VALIDATE_TIMEOUT_S,
        check=True,
    )
    results: list[str | None] = json.loads(done.stdout)
    return results


def test_every_service_monitor_the_chart_renders_passes_the_upstream_crd(rendered) -> None:  # noqa: F811
    monitors = [(name, o) for name in rendered for o in objects(rendered, name, "ServiceMonitor")]
    assert monitors, "no CI values file renders a ServiceMonitor"
    errors = upstream_errors([o for _, o in monitors])
    assert [(name, o["metadata"]["name"], e) for (name, o), e in zip(monitors, errors, strict=True) if e] == []


def test_the_upstream_schema_refuses_what_the_operator_would(rendered) -> None:  # noqa: F811
    (monitor,) = [o for name in rendered for o in objects(rendered, name, "ServiceMonitor")][:1]
    bad_interval = copy.deepcopy(monitor)
    bad_interval["spec"]["endpoints"][0]["interval"] = "15 seconds"
    bad_scheme = copy.deepcopy(monitor)
    bad_scheme["spec"]["endpoints"][0]["scheme"] = "ftp"
    first, second = upstream_errors([bad_interval, bad_scheme])
    assert first is not None and "interval" in first
    assert second is not None and "scheme" in second
