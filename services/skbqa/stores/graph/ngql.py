"""nGQL text for the NebulaGraph adapter: the layout record, DDL, batched INSERTs, neighbour queries, FETCH.

Pure functions: no I/O and no nebula3 import. Every name, string and integer reaches a statement through
`ngql_quoting`, and nowhere else. Vertex ids are node *positions* 0..N-1 in a space created with
``vid_type = INT64``. Column aliases in the queries below are single letters on purpose: none of them is an
nGQL keyword, so they never need quoting.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

from skbqa.stores.graph.ngql_quoting import (
    INT64_MAX,
    _checked_int,
    format_vid,
    literal,
    quote_ident,
    quote_string,
    vid_list,
)

PropKind = Literal["int", "double", "bool", "string"]
GoDirection = Literal["out", "in", "both"]

NGQL_TYPES: dict[str, str] = {"int": "int64", "double": "double", "bool": "bool", "string": "string"}
DIRECTION_KEYWORDS: dict[str, str] = {"out": "", "in": " REVERSELY", "both": " BIDIRECT"}

META_TAG = "skbqa_meta"  # the tag of the one vertex that describes a loaded space (see SpaceLayout)
META_VID = INT64_MAX  # never a node position: positions are < num_nodes ≤ INT64_MAX
NODE_ID_PROP = "node_id"  # the SKB's external node id, on every node tag
NAME_PROP = "name"
NUM_NODES_PROP, LAYOUT_PROP = "num_nodes", "layout"  # the META_TAG properties
LAYOUT_FORMAT = 1

# Result columns of the statements below.
COL_START, COL_NEIGHBOUR, COL_TYPE, COL_COUNT, COL_VID, COL_PROPS = "s", "n", "t", "c", "v", "p"
COL_NUM_NODES, COL_LAYOUT, COL_PROBE = "k", "l", "p"

DEFAULT_BATCH_ROWS = 500
DEFAULT_BATCH_BYTES = 1 << 20  # graphd refuses statements above max_allowed_query_size (4 MiB by default)

# --- the layout record ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PropLayout:
    key: str  # the SKB attribute name
    label: str  # its NebulaGraph property name
    kind: PropKind


@dataclass(frozen=True)
class TagLayout:
    type_name: str  # the SKB node type
    label: str  # its NebulaGraph tag
    attrs: tuple[PropLayout, ...]


@dataclass(frozen=True)
class SpaceLayout:
    """How an index maps onto a space; stored as JSON on the META_VID vertex, which the loader writes last.

    `edge_names` keeps the index's edge-code order (that order is the `GraphStore.edge_names` contract), and
    `edge_labels[i]` is the NebulaGraph edge type of `edge_names[i]`.
    """

    num_nodes: int
    edge_names: tuple[str, ...]
    edge_labels: tuple[str, ...]
    tags: tuple[TagLayout, ...]

    def to_json(self) -> str:
        return json.dumps(
            {
                "format": LAYOUT_FORMAT,
                "num_nodes": self.num_nodes,
                "edges": [[n, lab] for n, lab in zip(self.edge_names, self.edge_labels, strict=True)],
                "tags": [
                    {"type": t.type_name, "label": t.label, "attrs": [[p.key, p.label, p.kind] for p in t.attrs]}
                    for t in self.tags
                ],
            },
            ensure_ascii=False,
        )

    @classmethod
    def from_json(cls, text: str) -> SpaceLayout:
        data = json.loads(text)
        if data.get("format") != LAYOUT_FORMAT:
            raise ValueError(f"layout format {data.get('format')!r}, this skbqa reads {LAYOUT_FORMAT}")
        tags = tuple(
            TagLayout(t["type"], t["label"], tuple(PropLayout(k, lab, kind) for k, lab, kind in t["attrs"]))
            for t in data["tags"]
        )
        edges = [(str(n), str(lab)) for n, lab in data["edges"]]
        return cls(int(data["num_nodes"]), tuple(n for n, _ in edges), tuple(lab for _, lab in edges), tags)


# --- DDL --------------------------------------------------------------------------------------------------------


def create_space(space: str, *, partitions: int = 10, replicas: int = 1) -> str:
    parts = _checked_int(partitions, 1, 1_000_000, "partition_num")
    copies = _checked_int(replicas, 1, 1_000, "replica_factor")
    return (
        f"CREATE SPACE IF NOT EXISTS {quote_ident(space)}"
        f"(partition_num = {parts}, replica_factor = {copies}, vid_type = INT64)"
    )


def drop_space(space: str) -> str:
    return f"DROP SPACE IF EXISTS {quote_ident(space)}"


def use_space(space: str) -> str:
    return f"USE {quote_ident(space)}"


def in_space(space: str, statement: str) -> str:
    """`statement` prefixed with USE, so it runs in `space` whatever the session's current space is."""
    return f"{use_space(space)}; {statement}"


def describe_space(space: str) -> str:
    return f"DESCRIBE SPACE {quote_ident(space)}"


def describe_tag(tag: str) -> str:
    return f"DESCRIBE TAG {quote_ident(tag)}"


def describe_edge(edge: str) -> str:
    return f"DESCRIBE EDGE {quote_ident(edge)}"


def create_tag(tag: str, props: Sequence[tuple[str, str]]) -> str:
    """`props` as (label, kind) pairs; every property is nullable (an SKB attribute may be missing)."""
    columns = ", ".join(f"{quote_ident(label)} {_ngql_type(kind)} NULL" for label, kind in props)
    return f"CREATE TAG IF NOT EXISTS {quote_ident(tag)}({columns})"


def create_edge(edge: str) -> str:
    return f"CREATE EDGE IF NOT EXISTS {quote_ident(edge)}()"


def create_tag_index(index: str, tag: str, props: Sequence[tuple[str, int | None]]) -> str:
    """`props` as (label, string prefix length or None); graphd needs a length for string properties."""
    return f"CREATE TAG INDEX IF NOT EXISTS {quote_ident(index)} ON {quote_ident(tag)}({_index_props(props)})"


def create_edge_index(index: str, edge: str, props: Sequence[tuple[str, int | None]] = ()) -> str:
    return f"CREATE EDGE INDEX IF NOT EXISTS {quote_ident(index)} ON {quote_ident(edge)}({_index_props(props)})"


def describe_tag_index(index: str) -> str:
    return f"DESCRIBE TAG INDEX {quote_ident(index)}"


def rebuild_tag_indexes(indexes: Sequence[str]) -> str:
    return "REBUILD TAG INDEX " + ", ".join(quote_ident(i) for i in indexes)


def _ngql_type(kind: str) -> str:
    try:
        return NGQL_TYPES[kind]
    except KeyError:
        raise ValueError(f"unknown property kind {kind!r}") from None


def _index_props(props: Sequence[tuple[str, int | None]]) -> str:
    parts = []
    for label, length in props:
        size = "" if length is None else f"({_checked_int(length, 1, 256, 'index prefix length')})"
        parts.append(quote_ident(label) + size)
    return ", ".join(parts)


# --- batched writes ---------------------------------------------------------------------------------------------


def _batched(head: str, items: Iterable[str], batch_rows: int, batch_bytes: int) -> Iterator[str]:
    """`head` + comma-joined items, at most `batch_rows` items and (unless one item alone is larger) `batch_bytes`."""
    _checked_int(batch_rows, 1, 1_000_000, "batch size")  # checked here, not on the first next()
    _checked_int(batch_bytes, 1, INT64_MAX, "batch bytes")
    return _batches(head, items, batch_rows, batch_bytes)


def _batches(head: str, items: Iterable[str], batch_rows: int, batch_bytes: int) -> Iterator[str]:
    head_size = len(head.encode())
    batch: list[str] = []
    size = head_size
    for item in items:
        item_size = len(item.encode()) + 2  # the ", " separator
        if batch and (len(batch) >= batch_rows or size + item_size > batch_bytes):
            yield head + ", ".join(batch)
            batch, size = [], head_size
        batch.append(item)
        size += item_size
    if batch:
        yield head + ", ".join(batch)


def insert_vertices(
    tag: str,
    props: Sequence[str],
    rows: Iterable[tuple[object, Sequence[object]]],
    *,
    batch_rows: int = DEFAULT_BATCH_ROWS,
    batch_bytes: int = DEFAULT_BATCH_BYTES,
) -> Iterator[str]:
    """INSERT VERTEX statements for (vid, values) rows, `values` in `props` order."""
    head = f"INSERT VERTEX {quote_ident(tag)}({', '.join(quote_ident(p) for p in props)}) VALUES "
    width = len(props)

    def items() -> Iterator[str]:
        for vid, values in rows:
            if len(values) != width:
                raise ValueError(f"vertex {vid}: {len(values)} values for {width} properties")
            yield f"{format_vid(vid)}:({', '.join(literal(v) for v in values)})"

    return _batched(head, items(), batch_rows, batch_bytes)


def insert_edges(
    edge: str,
    rows: Iterable[tuple[object, object, object]],
    *,
    batch_rows: int = DEFAULT_BATCH_ROWS,
    batch_bytes: int = DEFAULT_BATCH_BYTES,
) -> Iterator[str]:
    """INSERT EDGE statements for (src, dst, rank) rows. NebulaGraph keys an edge by (src, type, rank, dst), so
    parallel SKB edges need distinct ranks or the later one silently replaces the earlier."""
    head = f"INSERT EDGE {quote_ident(edge)}() VALUES "
    items = (
        f"{format_vid(s)}->{format_vid(d)}@{_checked_int(r, 0, INT64_MAX, 'edge rank')}:()" for s, d, r in rows
    )
    return _batched(head, items, batch_rows, batch_bytes)


# --- reads ------------------------------------------------------------------------------------------------------


def _over(edges: Sequence[str]) -> str:
    if not edges:
        raise ValueError("a traversal needs at least one edge type")
    return ", ".join(quote_ident(e) for e in edges)


def _direction(direction: str) -> str:
    try:
        return DIRECTION_KEYWORDS[direction]
    except KeyError:
        raise ValueError(f"direction must be out, in or both, not {direction!r}") from None


def go_neighbours(vids: Iterable[object], edges: Sequence[str], direction: GoDirection) -> str:
    """Distinct neighbours of `vids`. src(edge)/dst(edge) are the edge's stored endpoints whatever the traversal
    direction (REVERSELY yields the neighbour as src(edge)), so "out" and "in" each need one column; BIDIRECT
    yields both endpoints and the caller keeps the ones that are not (only) the start (see NebulaGraph)."""
    keyword = _direction(direction)
    if direction == "out":
        columns = f"dst(edge) AS {COL_NEIGHBOUR}"
    elif direction == "in":
        columns = f"src(edge) AS {COL_NEIGHBOUR}"
    else:
        columns = f"src(edge) AS {COL_START}, dst(edge) AS {COL_NEIGHBOUR}"
    return f"GO FROM {vid_list(vids)} OVER {_over(edges)}{keyword} YIELD DISTINCT {columns}"


def go_pairs(
    vids: Iterable[object], edges: Sequence[str], direction: Literal["out", "in"], *, with_type: bool
) -> str:
    """One row per incident edge: (start, neighbour[, edge type]). One direction per statement: under BIDIRECT an
    edge between two start vertices yields two identical rows and its orientation per row is lost."""
    if direction not in ("out", "in"):
        raise ValueError(f"go_pairs takes out or in, not {direction!r}")
    start, other = ("src", "dst") if direction == "out" else ("dst", "src")
    columns = f"{start}(edge) AS {COL_START}, {other}(edge) AS {COL_NEIGHBOUR}"
    if with_type:
        columns += f", type(edge) AS {COL_TYPE}"
    return f"GO FROM {vid_list(vids)} OVER {_over(edges)}{_direction(direction)} YIELD {columns}"


def go_degree(vids: Iterable[object], edges: Sequence[str], direction: Literal["out", "in"]) -> str:
    """Incident-edge counts per start vertex, aggregated in graphd (vertices with none are absent)."""
    if direction not in ("out", "in"):
        raise ValueError(f"go_degree takes out or in, not {direction!r}")
    start = "src" if direction == "out" else "dst"
    return (
        f"GO FROM {vid_list(vids)} OVER {_over(edges)}{_direction(direction)} YIELD {start}(edge) AS {COL_START}"
        f" | GROUP BY $-.{COL_START} YIELD $-.{COL_START} AS {COL_START}, count(*) AS {COL_COUNT}"
    )


def fetch_vertices(tag: str, vids: Iterable[object]) -> str:
    return f"FETCH PROP ON {quote_ident(tag)} {vid_list(vids)} YIELD id(vertex) AS {COL_VID}, properties(vertex) AS {COL_PROPS}"


def probe_tag(tag: str) -> str:
    """A read that fails until graphd's (and one storaged's) schema cache knows `tag`."""
    return f"FETCH PROP ON {quote_ident(tag)} {META_VID} YIELD id(vertex) AS {COL_VID}"


def probe_edge(edge: str) -> str:
    return f"FETCH PROP ON {quote_ident(edge)} {META_VID} -> {META_VID} YIELD src(edge) AS {COL_START}"


def create_meta_tag() -> str:
    return create_tag(META_TAG, [(NUM_NODES_PROP, "int"), (LAYOUT_PROP, "string")])


def insert_layout(layout: SpaceLayout) -> str:
    (statement,) = insert_vertices(
        META_TAG,
        [NUM_NODES_PROP, LAYOUT_PROP],
        [(META_VID, [layout.num_nodes, layout.to_json()])],
        batch_bytes=INT64_MAX,
    )
    return statement


def fetch_layout() -> str:
    count = f"properties(vertex).{quote_ident(NUM_NODES_PROP)}"
    layout = f"properties(vertex).{quote_ident(LAYOUT_PROP)}"
    return f"FETCH PROP ON {quote_ident(META_TAG)} {META_VID} YIELD {count} AS {COL_NUM_NODES}, {layout} AS {COL_LAYOUT}"


def yield_string(value: str) -> str:
    """Echo a literal back; the loader uses it to check that graphd reads `quote_string`'s escapes as intended."""
    return f"YIELD {quote_string(value)} AS {COL_PROBE}"
