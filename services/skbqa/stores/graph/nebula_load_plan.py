"""What a NebulaGraph load writes: the space layout (identifiers and property types) and the vertex/edge rows.

Pure functions over the index's `NodeTable` and `CsrGraph`: no I/O.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from skbqa.skb.model import Scalar
from skbqa.stores.graph import ngql, ngql_quoting
from skbqa.stores.graph.csr import CsrGraph
from skbqa.stores.nodes import NodeTable

# --- the layout: names and property types -----------------------------------------------------------------------


def infer_kind(values: Iterable[object]) -> ngql.PropKind:
    """One NebulaGraph type for an attribute: its values' common type; ints with doubles → double; else string."""
    kinds: set[ngql.PropKind] = set()
    for value in values:
        if value is None or (isinstance(value, float) and not math.isfinite(value)):
            continue  # stored as NULL, says nothing about the type
        if isinstance(value, bool):
            kinds.add("bool")
        elif isinstance(value, int):
            kinds.add("int" if ngql_quoting.INT64_MIN_ACCEPTED <= value <= ngql_quoting.INT64_MAX else "string")
        elif isinstance(value, float):
            kinds.add("double")
        else:
            kinds.add("string")
    if len(kinds) == 1:
        return kinds.pop()
    return "double" if kinds == {"int", "double"} else "string"


def convert(value: object, kind: ngql.PropKind) -> Scalar:
    """`value` as a property of `kind` (see `infer_kind`); NaN and ±inf become NULL (nGQL has no literal for them)."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return None
    if kind == "string":
        if isinstance(value, str):
            return value
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, int | float):
            return str(value)
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    if kind == "double":
        return float(value)  # type: ignore[arg-type]  # infer_kind only picks double for ints and floats
    return value  # type: ignore[return-value]  # bool / int: already of the kind


def plan_layout(nodes: NodeTable, graph: CsrGraph) -> ngql.SpaceLayout:
    """Identifiers for every tag, property and edge type (see `ngql_quoting.unique_label`) and the attribute types."""
    schema = nodes.schema
    taken = {ngql.META_TAG}
    tags: list[ngql.TagLayout] = []
    for code, node_type in enumerate(schema.node_types):
        members = np.flatnonzero(nodes.types == code)
        keys = sorted({key for p in members for key in nodes.attrs[int(p)]})
        prop_taken = {ngql.NODE_ID_PROP, ngql.NAME_PROP}
        attrs = tuple(
            ngql.PropLayout(
                key,
                ngql_quoting.unique_label(key, prop_taken),
                infer_kind(nodes.attrs[int(p)].get(key) for p in members),
            )
            for key in keys
        )
        tags.append(ngql.TagLayout(node_type.name, ngql_quoting.unique_label(node_type.name, taken), attrs))
    # Edge types share graphd's name space with tags, so they draw from the same `taken` set.
    edge_labels = tuple(ngql_quoting.unique_label(name, taken) for name in graph.edge_names)
    return ngql.SpaceLayout(len(nodes), tuple(graph.edge_names), edge_labels, tuple(tags))


def schema_statements(layout: ngql.SpaceLayout) -> list[str]:
    statements = []
    for tag in layout.tags:
        props = [(ngql.NODE_ID_PROP, "int"), (ngql.NAME_PROP, "string")]
        props += [(p.label, p.kind) for p in tag.attrs]
        statements.append(ngql.create_tag(tag.label, props))
    statements += [ngql.create_edge(label) for label in layout.edge_labels]
    statements.append(ngql.create_meta_tag())  # last: see wait_for_schema
    return statements


# --- rows -------------------------------------------------------------------------------------------------------


def vertex_rows(nodes: NodeTable, code: int, tag: ngql.TagLayout) -> Iterator[tuple[int, list[Scalar]]]:
    for position in np.flatnonzero(nodes.types == code).tolist():
        attrs = nodes.attrs[position]
        values: list[Scalar] = [int(nodes.ids[position]), nodes.names[position]]
        values += [convert(attrs.get(p.key), p.kind) for p in tag.attrs]
        yield position, values


def edge_rows(graph: CsrGraph, edge: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(src, dst, rank) of every edge named `edge`, once; parallel edges get ranks 0, 1, ..."""
    src, dst = graph.neighbour_pairs(np.arange(graph.num_nodes, dtype=np.int64), edge, "out")
    # neighbour_pairs groups by source with neighbours ascending, so parallel edges are adjacent.
    index = np.arange(src.size, dtype=np.int64)
    new_run = np.ones(src.size, bool)
    new_run[1:] = (src[1:] != src[:-1]) | (dst[1:] != dst[:-1])
    run_start = np.maximum.accumulate(np.where(new_run, index, 0)) if src.size else index
    return src, dst, index - run_start


def _chunked(rows: Iterable[Any], size: int) -> Iterator[list[Any]]:
    batch: list[Any] = []
    for row in rows:
        batch.append(row)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch
