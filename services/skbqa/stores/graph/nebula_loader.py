"""Load an skbqa index into a NebulaGraph space: schema from the SKB schema, then every node and edge, batched.

The order of work, and why:
1. Check that graphd reads `ngql.quote_string`'s escapes back unchanged (one `YIELD "<probe>"`): if graphd runs
   with ``--disable_octal_escape_char=true`` control characters would be stored wrong, so refuse before writing.
2. [recreate: DROP SPACE]; CREATE SPACE IF NOT EXISTS (vid_type INT64); poll USE until the space is usable; check
   that an existing space has INT64 vertex ids.
3. CREATE TAG per node type (node_id, name, and the attributes, typed from the data), CREATE EDGE per edge name,
   and the layout tag.
4. Wait for the schema to propagate. NebulaGraph applies DDL asynchronously: graphd and storaged refresh their
   schema caches on a heartbeat (10 s by default) and INSERTs fail until then. Poll DESCRIBE TAG / EDGE until metad
   knows each one, then a FETCH on each until graphd and a storaged know it, bounded by `schema_timeout_s`.
   INSERTs still retry every failure with backoff, since other storaged hosts refresh on their own heartbeat.
5. INSERT VERTEX per node type, INSERT EDGE per edge name (each edge once; parallel edges get ranks 0, 1, ...),
   `batch_size` rows per statement, reporting progress after each batch.
6. [indexes: CREATE TAG INDEX on node_id per tag (for LOOKUP by external id; the adapter's GO and FETCH by VID do
   not need it), wait for it, REBUILD.]
7. The layout vertex, last: `NebulaGraph` refuses a space without one, so an interrupted load is never served.

Every statement after CREATE SPACE starts with ``USE `space`;``, so a reconnect (a new session) mid-load changes
nothing, and re-running a load is safe: INSERT overwrites the same VIDs and (src, type, rank, dst) edges.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from skbqa.common.errors import IndexStoreError
from skbqa.skb.model import Scalar
from skbqa.stores.graph import ngql
from skbqa.stores.graph.csr import CsrGraph
from skbqa.stores.graph.nebula import (
    DEFAULT_PASSWORD,
    DEFAULT_USER,
    Connection,
    StatementRunner,
    format_addresses,
    parse_addresses,
    reply,
    session_factory,
)
from skbqa.stores.index import read_manifest
from skbqa.stores.nodes import NodeTable

logger = logging.getLogger(__name__)

Progress = Callable[[str, int, int], None]  # (stage, done, total)

DEFAULT_BATCH = 500
WRITE_RETRIES = 6
WRITE_BACKOFF_S = 0.5  # doubling, capped at 8 s: 0.5 + 1 + 2 + 4 + 8 + 8 ≈ 24 s, over two default heartbeats
POLL_INTERVAL_S = 0.5
# Quote, backslash, backtick, newline, NUL, a control character followed by a digit, non-ASCII: every escape path.
ESCAPE_PROBE = "skbqa \"probe\" \\ `tick` 'q'\n\t\r\x08\x0c\x00\x017 é ✓ 𝛼"


# --- reading the index ------------------------------------------------------------------------------------------


def read_index_graph(index_dir: Path | str) -> tuple[NodeTable, CsrGraph]:
    """The node table and CSR graph of an index (what `open_index` loads, without the BM25 and vector stores)."""
    directory = Path(index_dir)
    read_manifest(directory)
    try:
        return NodeTable.load(directory / "nodes"), CsrGraph.load(directory / "graph")
    except (OSError, KeyError, ValueError) as exc:
        raise IndexStoreError(
            f"{directory}: index is incomplete or damaged ({exc}); re-run skbqa ingest"
        ) from None


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
            kinds.add("int" if ngql.INT64_MIN_ACCEPTED <= value <= ngql.INT64_MAX else "string")
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
    """Identifiers for every tag, property and edge type (see `ngql.unique_label`) and the attribute types."""
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
                ngql.unique_label(key, prop_taken),
                infer_kind(nodes.attrs[int(p)].get(key) for p in members),
            )
            for key in keys
        )
        tags.append(ngql.TagLayout(node_type.name, ngql.unique_label(node_type.name, taken), attrs))
    # Edge types share graphd's name space with tags, so they draw from the same `taken` set.
    edge_labels = tuple(ngql.unique_label(name, taken) for name in graph.edge_names)
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


# --- talking to the server --------------------------------------------------------------------------------------


class _Loader:
    def __init__(
        self,
        runner: StatementRunner,
        space: str,
        *,
        batch_size: int,
        schema_timeout_s: float,
        progress: Progress | None,
        sleep: Callable[[float], None],
        clock: Callable[[], float],
    ) -> None:
        self.runner = runner
        self.space = space
        self.batch_size = batch_size
        self.schema_timeout_s = schema_timeout_s
        self.progress = progress
        self.sleep = sleep
        self.clock = clock
        self.statements = 0

    def run(self, stmt: str, **options: Any) -> Any:
        self.statements += 1
        return self.runner.run(stmt, **options)

    def in_space(self, stmt: str, **options: Any) -> Any:
        return self.run(ngql.in_space(self.space, stmt), **options)

    def write(self, stmt: str) -> Any:
        """An idempotent write: retried on every failure (a schema not yet propagated looks like any error)."""
        return self.in_space(stmt, retry_codes=None, retries=WRITE_RETRIES)

    def poll(self, stmt: str, what: str, deadline: float) -> Any:
        """Repeat `stmt` until it succeeds or `deadline` passes. Any error code counts as "not yet" (graphd reports
        a space or schema it has not heard of as an execution error, which the runner would otherwise retry and
        then raise on); only transport errors go through the runner's own retries."""
        while True:
            result = self.run(stmt, check=False, retry_codes=frozenset())
            if result.is_succeeded():
                return result
            if self.clock() >= deadline:
                raise self.runner.error(
                    stmt, f"{what} not ready after {self.schema_timeout_s:g} s ({result.error_msg()})"
                )
            self.sleep(POLL_INTERVAL_S)

    def check_escapes(self) -> None:
        stmt = ngql.yield_string(ESCAPE_PROBE)
        result = self.run(stmt)
        with reply(self.runner, stmt):
            echoed = result.column_values(ngql.COL_PROBE)[0].as_string()
        if echoed != ESCAPE_PROBE:
            raise self.runner.error(
                stmt,
                f"graphd reads escaped strings differently ({echoed!r}); "
                "run graphd with --disable_octal_escape_char=false (the default)",
            )

    def create_space(self, *, partitions: int, replicas: int, recreate: bool) -> None:
        if recreate:
            self.run(ngql.drop_space(self.space))
        self.run(ngql.create_space(self.space, partitions=partitions, replicas=replicas))
        deadline = self.clock() + self.schema_timeout_s
        self.poll(ngql.use_space(self.space), f"space {self.space!r}", deadline)
        stmt = ngql.describe_space(self.space)
        result = self.run(stmt)
        with reply(self.runner, stmt):
            columns: list[str] = result.keys()  # ResultSet.keys() is the column list (not a dict view)
            vid_type = result.column_values("Vid Type")[0].as_string() if "Vid Type" in columns else "INT64"
        if vid_type.upper() != "INT64":
            raise IndexStoreError(
                f"NebulaGraph space {self.space!r} exists with vid_type {vid_type}; skbqa needs INT64: "
                "load into another space or recreate this one",
                space=self.space,
            )

    def create_schema(self, layout: ngql.SpaceLayout) -> None:
        for stmt in schema_statements(layout):
            self.in_space(stmt)
        self.wait_for_schema([t.label for t in layout.tags] + [ngql.META_TAG], list(layout.edge_labels))

    def wait_for_schema(self, tags: Sequence[str], edges: Sequence[str]) -> None:
        deadline = self.clock() + self.schema_timeout_s
        checks = [(ngql.describe_tag(t), ngql.probe_tag(t), f"tag {t!r}") for t in tags]
        checks += [(ngql.describe_edge(e), ngql.probe_edge(e), f"edge type {e!r}") for e in edges]
        for describe, _, what in checks:
            self.poll(ngql.in_space(self.space, describe), what, deadline)
        for _, probe, what in checks:
            self.poll(ngql.in_space(self.space, probe), what, deadline)

    def report(self, stage: str, done: int, total: int) -> None:
        if self.progress is not None:
            self.progress(stage, done, total)

    def insert_vertices(self, nodes: NodeTable, layout: ngql.SpaceLayout) -> int:
        done = 0
        for code, tag in enumerate(layout.tags):
            props = [ngql.NODE_ID_PROP, ngql.NAME_PROP] + [p.label for p in tag.attrs]
            for rows in _chunked(vertex_rows(nodes, code, tag), self.batch_size):
                for stmt in ngql.insert_vertices(tag.label, props, rows, batch_rows=self.batch_size):
                    self.write(stmt)
                done += len(rows)
                self.report("vertices", done, len(nodes))
        return done

    def insert_edges(self, graph: CsrGraph, layout: ngql.SpaceLayout) -> dict[str, int]:
        counts: dict[str, int] = {}
        total, done = graph.num_edges, 0
        for name, label in zip(layout.edge_names, layout.edge_labels, strict=True):
            src, dst, rank = edge_rows(graph, name)
            rows = zip(src.tolist(), dst.tolist(), rank.tolist(), strict=True)
            for batch in _chunked(rows, self.batch_size):
                for stmt in ngql.insert_edges(label, batch, batch_rows=self.batch_size):
                    self.write(stmt)
                done += len(batch)
                self.report("edges", done, total)
            counts[name] = int(src.size)
        return counts

    def create_indexes(self, layout: ngql.SpaceLayout) -> list[str]:
        taken = {t.label for t in layout.tags} | set(layout.edge_labels) | {ngql.META_TAG}
        indexes = []
        for tag in layout.tags:
            index = ngql.unique_label(f"{tag.label}_node_id_idx", taken)
            self.in_space(ngql.create_tag_index(index, tag.label, [(ngql.NODE_ID_PROP, None)]))
            indexes.append(index)
        deadline = self.clock() + self.schema_timeout_s
        for index in indexes:
            self.poll(ngql.in_space(self.space, ngql.describe_tag_index(index)), f"index {index!r}", deadline)
        # Indexes created after the data cover none of it until rebuilt; REBUILD runs as a background job.
        self.in_space(ngql.rebuild_tag_indexes(indexes))
        return indexes


def load_graph_into_nebula(
    nodes: NodeTable,
    graph: CsrGraph,
    addresses: str | Sequence[str],
    space: str,
    *,
    user: str = DEFAULT_USER,
    password: str = DEFAULT_PASSWORD,
    batch_size: int = DEFAULT_BATCH,
    partitions: int = 10,
    replicas: int = 1,
    recreate: bool = False,
    indexes: bool = False,
    schema_timeout_s: float = 60.0,
    timeout_ms: int = 60_000,
    progress: Progress | None = None,
    connect: Callable[[], Connection] | None = None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> dict[str, Any]:
    """Write `nodes` and `graph` into `space` (created if missing; dropped first if `recreate`). Returns counts
    and timings. Raises BackendUnavailableError when the server fails, ValueError for a bad space name."""
    ngql.quote_ident(space)
    if batch_size < 1:
        raise ValueError("batch_size must be ≥ 1")
    parsed = parse_addresses(addresses)
    layout = plan_layout(nodes, graph)
    where = f"space {space!r} at {format_addresses(parsed)}"
    runner = StatementRunner(
        connect or session_factory(parsed, user, password, timeout_ms),
        where,
        backoff_s=WRITE_BACKOFF_S,
        sleep=sleep,
    )
    loader = _Loader(
        runner,
        space,
        batch_size=batch_size,
        schema_timeout_s=schema_timeout_s,
        progress=progress,
        sleep=sleep,
        clock=clock,
    )
    started = clock()
    try:
        loader.check_escapes()
        loader.create_space(partitions=partitions, replicas=replicas, recreate=recreate)
        loader.create_schema(layout)
        schema_done = clock()
        vertices = loader.insert_vertices(nodes, layout)
        vertices_done = clock()
        per_edge = loader.insert_edges(graph, layout)
        edges_done = clock()
        index_names = loader.create_indexes(layout) if indexes else []
        loader.write(ngql.insert_layout(layout))
    finally:
        runner.close()
    finished = clock()
    logger.info("loaded %d vertices and %d edges into NebulaGraph %s", vertices, sum(per_edge.values()), where)
    return {
        "space": space,
        "addresses": format_addresses(parsed),
        "nodes": vertices,
        "edges": sum(per_edge.values()),
        "edges_per_type": per_edge,
        "node_types": [t.type_name for t in layout.tags],
        "edge_names": list(layout.edge_names),
        "indexes": index_names,
        "statements": loader.statements,
        "seconds": {
            "schema": round(schema_done - started, 3),
            "vertices": round(vertices_done - schema_done, 3),
            "edges": round(edges_done - vertices_done, 3),
            "total": round(finished - started, 3),
        },
    }


def load_index_into_nebula(
    index_dir: Path,
    addresses: str | Sequence[str],
    space: str,
    *,
    user: str = DEFAULT_USER,
    password: str = DEFAULT_PASSWORD,
    batch_size: int = DEFAULT_BATCH,
    **options: Any,
) -> dict[str, Any]:
    """Load the graph of the index in `index_dir` into `space`; options as for `load_graph_into_nebula`."""
    nodes, graph = read_index_graph(index_dir)
    result = load_graph_into_nebula(
        nodes, graph, addresses, space, user=user, password=password, batch_size=batch_size, **options
    )
    return {"index": str(index_dir), **result}


def drop_nebula_space(
    addresses: str | Sequence[str],
    space: str,
    *,
    user: str = DEFAULT_USER,
    password: str = DEFAULT_PASSWORD,
    connect: Callable[[], Connection] | None = None,
) -> None:
    """DROP SPACE IF EXISTS (tests and re-loads)."""
    ngql.quote_ident(space)
    parsed = parse_addresses(addresses)
    runner = StatementRunner(
        connect or session_factory(parsed, user, password), f"space {space!r} at {format_addresses(parsed)}"
    )
    try:
        runner.run(ngql.drop_space(space))
    finally:
        runner.close()
