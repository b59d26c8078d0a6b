"""Offline validation of the chart's custom resources (kubernetes-validate only knows built-in kinds).

`ServiceMonitor` (monitoring.coreos.com/v1) and `RayService` (ray.io/v1) are checked against strict JSON
schemas of the fields the chart may emit — names and shapes as in the Prometheus Operator and KubeRay v1 CRDs —
and every pod template inside a RayService is validated as a core `PodTemplate` by kubernetes-validate, so the
bulk of a RayService (containers, volumes, security contexts) gets the same strict check as a Deployment.
"""

from __future__ import annotations

from typing import Any

import jsonschema
import yaml

STRING_MAP = {"type": "object", "additionalProperties": {"type": "string"}}
METADATA = {
    "type": "object",
    "required": ["name"],
    "properties": {
        "name": {"type": "string", "pattern": r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", "maxLength": 63},
        "namespace": {"type": "string"},
        "labels": STRING_MAP,
        "annotations": STRING_MAP,
    },
}
# The Prometheus Operator's duration pattern (monitoring.coreos.com_servicemonitors.yaml, `interval`).
DURATION = r"^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$"
LABEL_SELECTOR = {
    "type": "object",
    "additionalProperties": False,
    "properties": {"matchLabels": STRING_MAP, "matchExpressions": {"type": "array", "items": {"type": "object"}}},
}
RELABEL = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "sourceLabels": {"type": "array", "items": {"type": "string", "pattern": r"^[a-zA-Z_][a-zA-Z0-9_]*$"}},
        "separator": {"type": "string"},
        "targetLabel": {"type": "string"},
        "regex": {"type": "string"},
        "modulus": {"type": "integer"},
        "replacement": {"type": "string"},
        "action": {"type": "string"},
    },
}

SERVICE_MONITOR = {
    "type": "object",
    "additionalProperties": False,
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "properties": {
        "apiVersion": {"const": "monitoring.coreos.com/v1"},
        "kind": {"const": "ServiceMonitor"},
        "metadata": METADATA,
        "spec": {
            "type": "object",
            "additionalProperties": False,
            "required": ["selector", "endpoints"],
            "properties": {
                "jobLabel": {"type": "string"},
                "selector": LABEL_SELECTOR,
                "namespaceSelector": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {
                        "any": {"type": "boolean"},
                        "matchNames": {"type": "array", "items": {"type": "string"}},
                    },
                },
                "endpoints": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "additionalProperties": False,
                        "required": ["port"],
                        "properties": {
                            "port": {"type": "string", "minLength": 1},
                            "path": {"type": "string", "pattern": "^/"},
                            "scheme": {"enum": ["http", "https", "HTTP", "HTTPS"]},
                            "interval": {"type": "string", "pattern": DURATION},
                            "scrapeTimeout": {"type": "string", "pattern": DURATION},
                            "honorLabels": {"type": "boolean"},
                            "relabelings": {"type": "array", "items": RELABEL},
                            "metricRelabelings": {"type": "array", "items": RELABEL},
                        },
                    },
                },
            },
        },
    },
}

RAY_START_PARAMS = STRING_MAP
RAY_SERVICE = {
    "type": "object",
    "additionalProperties": False,
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "properties": {
        "apiVersion": {"const": "ray.io/v1"},
        "kind": {"const": "RayService"},
        "metadata": METADATA,
        "spec": {
            "type": "object",
            "additionalProperties": False,
            "required": ["serveConfigV2", "rayClusterConfig"],
            "properties": {
                "serveConfigV2": {"type": "string", "minLength": 1},
                "serviceUnhealthySecondThreshold": {"type": "integer"},
                "deploymentUnhealthySecondThreshold": {"type": "integer"},
                "upgradeStrategy": {"type": "object"},
                "rayClusterConfig": {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["headGroupSpec"],
                    "properties": {
                        "rayVersion": {"type": "string"},
                        "enableInTreeAutoscaling": {"type": "boolean"},
                        "autoscalerOptions": {"type": "object"},
                        "headGroupSpec": {
                            "type": "object",
                            "additionalProperties": False,
                            "required": ["rayStartParams", "template"],
                            "properties": {
                                "rayStartParams": RAY_START_PARAMS,
                                "template": {"type": "object"},
                                "serviceType": {"type": "string"},
                                "enableIngress": {"type": "boolean"},
                            },
                        },
                        "workerGroupSpecs": {
                            "type": "array",
                            "items": {
                                "type": "object",
                                "additionalProperties": False,
                                "required": ["groupName", "rayStartParams", "template", "maxReplicas"],
                                "properties": {
                                    "groupName": {"type": "string", "minLength": 1},
                                    "replicas": {"type": "integer", "minimum": 0},
                                    "minReplicas": {"type": "integer", "minimum": 0},
                                    "maxReplicas": {"type": "integer", "minimum": 1},
                                    "rayStartParams": RAY_START_PARAMS,
                                    "template": {"type": "object"},
                                },
                            },
                        },
                    },
                },
            },
        },
    },
}

SERVE_CONFIG = {
    "type": "object",
    "required": ["applications"],
    "properties": {
        "applications": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["name", "import_path"],
                "properties": {
                    "name": {"type": "string", "minLength": 1},
                    "import_path": {"type": "string", "pattern": r"^[\w.]+:\w+$"},
                    "route_prefix": {"type": ["string", "null"]},
                    "args": {"type": "object"},
                    "deployments": {"type": "array", "items": {"type": "object", "required": ["name"]}},
                },
            },
        }
    },
}

CRD_KINDS = {"ServiceMonitor", "RayService"}


def pod_templates(obj: dict[str, Any]) -> list[dict[str, Any]]:
    """The pod templates a RayService carries (head first)."""
    cluster = obj["spec"]["rayClusterConfig"]
    return [cluster["headGroupSpec"]["template"], *(g["template"] for g in cluster.get("workerGroupSpecs", []))]


def validate_custom(obj: dict[str, Any], kubernetes_version: str) -> None:
    """Raise (jsonschema.ValidationError or kubernetes_validate.ValidationError) unless `obj` is valid."""
    import kubernetes_validate

    if obj["kind"] == "ServiceMonitor":
        jsonschema.Draft7Validator(SERVICE_MONITOR).validate(obj)
        return
    if obj["kind"] != "RayService":
        raise ValueError(f"no schema for {obj['kind']}")
    jsonschema.Draft7Validator(RAY_SERVICE).validate(obj)
    jsonschema.Draft7Validator(SERVE_CONFIG).validate(yaml.safe_load(obj["spec"]["serveConfigV2"]))
    for group in obj["spec"]["rayClusterConfig"].get("workerGroupSpecs", []):
        if not group.get("minReplicas", 0) <= group.get("replicas", 0) <= group["maxReplicas"]:
            raise ValueError(f"worker group {group['groupName']}: replicas outside [minReplicas, maxReplicas]")
    for index, template in enumerate(pod_templates(obj)):
        wrapped = {
            "apiVersion": "v1",
            "kind": "PodTemplate",
            "metadata": {"name": f"{obj['metadata']['name']}-{index}"},
            "template": template,
        }
        kubernetes_validate.validate(wrapped, kubernetes_version, strict=True)
