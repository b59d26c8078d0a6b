"""Load an skbqa index into a NebulaGraph space: schema from the SKB schema, then every node and edge, batched.

`load_graph_into_nebula` plans the layout (`nebula_load_plan`), runs the load's steps (`nebula_load_steps`) and
writes the layout vertex last: `NebulaGraph` refuses a space without one, so an interrupted load is never
served. Re-running a load is safe: INSERT overwrites the same VIDs and (src, type, rank, dst) edges.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from skbqa.common.errors import IndexStoreError
from skbqa.stores.graph import ngql, ngql_quoting
from skbqa.stores.graph.csr import CsrGraph
from skbqa.stores.graph.nebula_load_plan import plan_layout
from skbqa.stores.graph.nebula_load_steps import Progress, _Loader
from skbqa.stores.graph.nebula_session import Connection, StatementRunner, session_factory
from skbqa.stores.graph.nebula_settings import DEFAULT_PASSWORD, DEFAULT_USER, format_addresses, parse_addresses
from skbqa.stores.index import read_manifest, verify_files
from skbqa.stores.nodes import NodeTable

logger = logging.getLogger(__name__)

DEFAULT_BATCH = 500
WRITE_BACKOFF_S = 0.5  # doubling, capped at 8 s: 0.5 + 1 + 2 + 4 + 8 + 8 ≈ 24 s, over two default heartbeats


# --- reading the index ------------------------------------------------------------------------------------------


def read_index_graph(index_dir: Path | str) -> tuple[NodeTable, CsrGraph]:
    """The node table and CSR graph of an index (what `open_index` loads, without the BM25 and vector stores)."""
    directory = Path(index_dir)
    verify_files(directory, read_manifest(directory), ("nodes", "graph"))
    try:
        return NodeTable.load(directory / "nodes"), CsrGraph.load(directory / "graph")
    except (OSError, KeyError, ValueError) as exc:
        raise IndexStoreError(
            f"{directory}: index is incomplete or damaged ({exc}); re-run skbqa ingest"
        ) from None


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
    ngql_quoting.quote_ident(space)
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
    ngql_quoting.quote_ident(space)
    parsed = parse_addresses(addresses)
    runner = StatementRunner(
        connect or session_factory(parsed, user, password), f"space {space!r} at {format_addresses(parsed)}"
    )
    try:
        runner.run(ngql.drop_space(space))
    finally:
        runner.close()
