"""The SKB schema: node types, edge types and the (source, target) signatures each edge name may connect."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skbqa.common.errors import BundleError
from skbqa.skb.jsonl import LONE_SURROGATE, has_lone_surrogate, json_problem


@dataclass(frozen=True)
class NodeType:
    name: str
    description: str = ""
    name_attr: str = "name"


@dataclass(frozen=True)
class EdgeType:
    """One (name, source, target) signature; the same name may appear with several signatures."""

    name: str
    source: str
    target: str
    description: str = ""


@dataclass
class Schema:
    name: str
    description: str
    node_types: list[NodeType]
    edge_types: list[EdgeType]
    _node_codes: dict[str, int] = field(init=False, repr=False)
    _edge_codes: dict[str, int] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._node_codes = {t.name: i for i, t in enumerate(self.node_types)}
        names: list[str] = []
        for e in self.edge_types:
            if e.name not in names:
                names.append(e.name)
        self._edge_codes = {n: i for i, n in enumerate(names)}

    @property
    def node_type_names(self) -> list[str]:
        return [t.name for t in self.node_types]

    @property
    def edge_names(self) -> list[str]:
        """Distinct edge names, in first-appearance order; an edge name's code is its position here."""
        return list(self._edge_codes)

    def node_code(self, name: str) -> int:
        return self._node_codes[name]

    def edge_code(self, name: str) -> int:
        return self._edge_codes[name]

    def has_node_type(self, name: str) -> bool:
        return name in self._node_codes

    def has_edge_type(self, name: str) -> bool:
        return name in self._edge_codes

    def signatures(self, edge_name: str) -> list[tuple[str, str]]:
        return [(e.source, e.target) for e in self.edge_types if e.name == edge_name]

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "node_types": [vars(t) for t in self.node_types],
            "edge_types": [vars(e) for e in self.edge_types],
        }

    @classmethod
    def from_dict(cls, data: Any, file: str = "schema.json") -> Schema:
        if not isinstance(data, dict):
            raise BundleError(file, None, "the schema must be a JSON object")
        node_types = _parse_list(data, "node_types", file)
        edge_types = _parse_list(data, "edge_types", file)
        nts: list[NodeType] = []
        for i, raw in enumerate(node_types):
            if not isinstance(raw, dict) or not isinstance(raw.get("name"), str) or not raw["name"]:
                raise BundleError(file, None, f"node_types[{i}] needs a non-empty string 'name'")
            nts.append(NodeType(raw["name"], str(raw.get("description", "")), str(raw.get("name_attr", "name"))))
        seen = {t.name for t in nts}
        if len(seen) != len(nts):
            raise BundleError(file, None, "node type names must be unique")
        ets: list[EdgeType] = []
        for i, raw in enumerate(edge_types):
            if not isinstance(raw, dict):
                raise BundleError(file, None, f"edge_types[{i}] must be an object")
            for key in ("name", "source", "target"):
                if not isinstance(raw.get(key), str) or not raw[key]:
                    raise BundleError(file, None, f"edge_types[{i}] needs a non-empty string '{key}'")
            for end in ("source", "target"):
                if raw[end] not in seen:
                    raise BundleError(
                        file, None, f"edge type '{raw['name']}' {end} '{raw[end]}' is not a declared node type"
                    )
            ets.append(EdgeType(raw["name"], raw["source"], raw["target"], str(raw.get("description", ""))))
        if not nts:
            raise BundleError(file, None, "the schema declares no node types")
        return cls(str(data.get("name", "")), str(data.get("description", "")), nts, ets)

    @classmethod
    def load(cls, path: Path) -> Schema:
        try:
            text = path.read_text(encoding="utf-8")
            data = json.loads(text)
        except FileNotFoundError:
            raise BundleError(path.name, None, "file not found") from None
        except json.JSONDecodeError as exc:
            raise BundleError(path.name, exc.lineno, f"malformed JSON: {exc.msg}") from None
        except UnicodeDecodeError as exc:
            line = exc.object[: exc.start].count(b"\n") + 1
            raise BundleError(path.name, line, f"not UTF-8: {exc.reason}") from None
        except OSError as exc:
            raise BundleError(path.name, None, f"cannot read file: {exc}") from None
        except (ValueError, RecursionError) as exc:  # a number over 4,300 digits; nesting too deep
            raise BundleError(path.name, None, f"malformed JSON: {json_problem(exc)}") from None
        if has_lone_surrogate(text, data):
            raise BundleError(path.name, None, LONE_SURROGATE)
        return cls.from_dict(data, path.name)


def _parse_list(data: dict[str, Any], key: str, file: str) -> list[Any]:
    value = data.get(key)
    if not isinstance(value, list):
        raise BundleError(file, None, f"'{key}' must be a list")
    return value
