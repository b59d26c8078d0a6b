"""The steps of a NebulaGraph load, each a few statements against one space (`_Loader`), in this order:

1. Check that graphd reads `ngql_quoting.quote_string`'s escapes back unchanged: with
   ``--disable_octal_escape_char=true`` control characters would be stored wrong, so refuse before writing.
2. [recreate: DROP SPACE]; CREATE SPACE IF NOT EXISTS (vid_type INT64); poll USE until the space is usable.
3. CREATE TAG per node type, CREATE EDGE per edge name, and the layout tag; then wait for the schema:
   NebulaGraph applies DDL asynchronously (schema caches refresh on a heartbeat, 10 s by default), so poll
   DESCRIBE until metad knows each one, then a FETCH until graphd and a storaged do. INSERTs still retry every
   failure with backoff, since other storaged hosts refresh on their own heartbeat.
4. INSERT VERTEX per node type, INSERT EDGE per edge name, `batch_size` rows per statement, with progress.
5. [indexes: CREATE TAG INDEX on node_id per tag, wait for it, REBUILD.]
Every statement after CREATE SPACE starts with ``USE `space`;``, so a reconnect mid-load changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from skbqa.common.errors import IndexStoreError
from skbqa.stores.graph import ngql, ngql_quoting
from skbqa.stores.graph.csr import CsrGraph
from skbqa.stores.graph.nebula_load_plan import _chunked, edge_rows, schema_statements, vertex_rows
from skbqa.stores.graph.nebula_session import StatementRunner, reply
from skbqa.stores.nodes import NodeTable

Progress = Callable[[str, int, int], None]  # (stage, done, total)

WRITE_RETRIES = 6
POLL_INTERVAL_S = 0.5
# Quote, backslash, backtick, newline, NUL, a control character followed by a digit, non-ASCII: every escape path.
ESCAPE_PROBE = "skbqa \"probe\" \\ `tick` 'q'\n\t\r\x08\x0c\x00\x017 é ✓ 𝛼"


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
            index = ngql_quoting.unique_label(f"{tag.label}_node_id_idx", taken)
            self.in_space(ngql.create_tag_index(index, tag.label, [(ngql.NODE_ID_PROP, None)]))
            indexes.append(index)
        deadline = self.clock() + self.schema_timeout_s
        for index in indexes:
            self.poll(ngql.in_space(self.space, ngql.describe_tag_index(index)), f"index {index!r}", deadline)
        # Indexes created after the data cover none of it until rebuilt; REBUILD runs as a background job.
        self.in_space(ngql.rebuild_tag_indexes(indexes))
        return indexes
