"""NebulaGraph adapter for the `GraphStore` port: batched GO and FETCH through nebula3-python's SessionPool.

A space written by `nebula_loader` holds one vertex per node (VID = node position, vid_type INT64), one tag per
node type, one edge type per edge name, and one layout vertex (`ngql.META_VID`) with the node count, the edge
names in code order and the name → identifier mapping. The adapter reads the layout once, on first use:
constructing a `NebulaGraph` does no I/O. Statements run through `nebula_session.StatementRunner` (retries,
one-line `BackendUnavailableError`s); a space with no layout vertex raises `IndexStoreError`.

Semantics are `CsrGraph`'s, and so is the row order of `neighbour_pairs`: blocks by edge code, out before in;
within a block, input order (duplicates repeated), neighbours ascending. Each call dedupes its input, sends at
most `chunk_size` VIDs per statement, and expands the replies back onto the input in numpy.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from skbqa.common.errors import IndexStoreError
from skbqa.skb.model import Scalar
from skbqa.stores.graph import ngql, ngql_quoting
from skbqa.stores.graph.base import Direction
from skbqa.stores.graph.nebula_session import (
    Connection,
    StatementRunner,
    int_column,
    reply,
    scalar,
    session_pool_factory,
)
from skbqa.stores.graph.nebula_settings import (
    DEFAULT_CHUNK,
    DEFAULT_PASSWORD,
    DEFAULT_USER,
    NebulaSettings,
    parse_addresses,
    parse_nebula_url,
)

_EMPTY = np.zeros(0, np.int64)

# --- the adapter ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class NodeRecord:
    position: int
    type_name: str
    node_id: int
    name: str
    attrs: dict[str, Scalar]


OneWay = Literal["out", "in"]


def _directions(direction: Direction) -> tuple[OneWay, ...]:
    if direction == "both":
        return ("out", "in")
    if direction == "out" or direction == "in":
        return (direction,)
    raise ValueError(f"direction must be out, in or both, not {direction!r}")


def _expand(nodes: np.ndarray, keys: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(node, value) for every input node (duplicates included) and every row whose key is that node; `keys`
    sorted. The same gather as CsrGraph's, with `searchsorted` standing in for indptr."""
    starts = np.searchsorted(keys, nodes, "left")
    lengths = np.searchsorted(keys, nodes, "right") - starts
    total = int(lengths.sum())
    if total == 0:
        return _EMPTY, _EMPTY
    run_starts = np.cumsum(lengths) - lengths
    offsets = np.arange(total, dtype=np.int64) - np.repeat(run_starts - starts, lengths)
    return np.repeat(nodes, lengths), values[offsets]


class NebulaGraph:
    """`GraphStore` over a NebulaGraph space loaded by `skbqa.stores.graph.nebula_loader`."""

    def __init__(
        self,
        addresses: str | Sequence[str],
        space: str,
        *,
        user: str = DEFAULT_USER,
        password: str = DEFAULT_PASSWORD,
        timeout_ms: int = 60_000,
        max_sessions: int = 16,
        chunk_size: int = DEFAULT_CHUNK,
        retries: int = 3,
        backoff_s: float = 0.2,
        connect: Callable[[], Connection] | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        ngql_quoting.quote_ident(space)  # refuse a bad space name now, not at the first query
        if chunk_size < 1 or retries < 0:
            raise ValueError("chunk_size must be ≥ 1 and retries ≥ 0")
        self.settings = NebulaSettings(
            parse_addresses(addresses),
            space,
            user=user,
            password=password,
            timeout_ms=timeout_ms,
            max_sessions=max_sessions,
            chunk_size=chunk_size,
            retries=retries,
            backoff_s=backoff_s,
        )
        self._runner = StatementRunner(
            connect or session_pool_factory(self.settings),
            self.settings.where,
            retries=retries,
            backoff_s=backoff_s,
            sleep=sleep,
        )
        self._layout: ngql.SpaceLayout | None = None
        self._layout_lock = threading.Lock()

    @classmethod
    def from_url(cls, url: str, **options: Any) -> NebulaGraph:
        """From ``nebula://[user[:password]@]host:port[,host:port]/space``; keyword options as for the constructor."""
        s = parse_nebula_url(url)
        options = {"user": s.user, "password": s.password, **options}
        return cls([f"{h}:{p}" for h, p in s.addresses], s.space, **options)

    def close(self) -> None:
        self._runner.close()

    def __enter__(self) -> NebulaGraph:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- layout --------------------------------------------------------------------------------------------------

    @property
    def layout(self) -> ngql.SpaceLayout:
        with self._layout_lock:
            if self._layout is None:
                self._layout = self._read_layout()
            return self._layout

    def _read_layout(self) -> ngql.SpaceLayout:
        stmt = ngql.fetch_layout()
        result = self._runner.run(stmt)
        if result.row_size() == 0:
            raise IndexStoreError(
                f"NebulaGraph {self.settings.where} holds no skbqa graph (no layout vertex); "
                "load an index into it with skbqa nebula-load",
                space=self.settings.space,
            )
        with reply(self._runner, stmt):
            (num_nodes,) = int_column(result, ngql.COL_NUM_NODES)
            layout = ngql.SpaceLayout.from_json(result.column_values(ngql.COL_LAYOUT)[0].as_string())
            if layout.num_nodes != int(num_nodes):
                raise ValueError(f"layout says {layout.num_nodes} nodes, the vertex says {num_nodes}")
        return layout

    @property
    def num_nodes(self) -> int:
        return self.layout.num_nodes

    @property
    def edge_names(self) -> list[str]:
        return list(self.layout.edge_names)

    def _codes(self, edge: str | None) -> list[int]:
        names = self.layout.edge_names
        if edge is None:
            return list(range(len(names)))
        try:
            return [names.index(edge)]
        except ValueError:
            raise KeyError(f"unknown edge type {edge!r}") from None

    def _positions(self, nodes: np.ndarray) -> np.ndarray:
        positions = np.asarray(nodes, np.int64)
        if positions.ndim != 1:
            raise ValueError(f"nodes must be a 1-d array of positions, not shape {positions.shape}")
        if positions.size and (positions.min() < 0 or positions.max() >= self.num_nodes):
            raise IndexError(f"node positions must lie in [0, {self.num_nodes})")
        return positions

    def _chunks(self, unique: np.ndarray) -> Iterator[np.ndarray]:
        size = self.settings.chunk_size
        for start in range(0, unique.size, size):
            yield unique[start : start + size]

    def _prepare(self, nodes: np.ndarray, edge: str | None, direction: Direction) -> tuple[np.ndarray, list[int]]:
        """Validation in CsrGraph's order of effects: the edge name, the direction, then the positions."""
        codes = self._codes(edge)
        _directions(direction)
        return self._positions(nodes), codes

    def _check_starts(self, starts: np.ndarray, chunk: np.ndarray, stmt: str) -> None:
        """Every row must start at a VID we asked about; if graphd ever swapped src(edge) and dst(edge) under
        REVERSELY, this turns silently wrong answers into an error."""
        if starts.size and not np.isin(starts, chunk).all():
            raise self._runner.error(stmt, "unexpected reply (a row starts at a vertex that was not asked for)")

    # -- the port ------------------------------------------------------------------------------------------------

    def neighbours(self, nodes: np.ndarray, edge: str | None = None, direction: Direction = "out") -> np.ndarray:
        positions, codes = self._prepare(nodes, edge, direction)
        unique = np.unique(positions)
        if unique.size == 0 or not codes:
            return _EMPTY.copy()
        labels = [self.layout.edge_labels[c] for c in codes]
        found: list[np.ndarray] = []
        for chunk in self._chunks(unique):
            stmt = ngql.go_neighbours(chunk.tolist(), labels, direction)
            result = self._runner.run(stmt)
            with reply(self._runner, stmt):
                ends = int_column(result, ngql.COL_NEIGHBOUR)
                if direction != "both":
                    found.append(ends)
                    continue
                starts = int_column(result, ngql.COL_START)
            # BIDIRECT rows carry the edge's stored endpoints. An endpoint outside the batch is a neighbour of
            # the other; when both are in the batch, each is a neighbour of the other (out from one, in to the
            # other), so keeping both is right whichever traversal produced the row.
            start_in, end_in = np.isin(starts, chunk), np.isin(ends, chunk)
            if not (start_in | end_in).all():
                raise self._runner.error(stmt, "unexpected reply (a row touches no vertex that was asked for)")
            found += [ends[start_in], starts[end_in]]
        return np.unique(np.concatenate(found)) if found else _EMPTY.copy()

    def _pairs(self, unique: np.ndarray, codes: list[int], direction: OneWay) -> tuple[np.ndarray, ...]:
        """(start, neighbour, edge code) for every incident edge of `unique`, sorted by (code, start, neighbour)."""
        labels = [self.layout.edge_labels[c] for c in codes]
        code_of = dict(zip(labels, codes, strict=True))
        with_type = len(labels) > 1
        parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        for chunk in self._chunks(unique):
            stmt = ngql.go_pairs(chunk.tolist(), labels, direction, with_type=with_type)
            result = self._runner.run(stmt)
            with reply(self._runner, stmt):
                starts = int_column(result, ngql.COL_START)
                ends = int_column(result, ngql.COL_NEIGHBOUR)
                if with_type:
                    types = [code_of[v.as_string()] for v in result.column_values(ngql.COL_TYPE)]
                    edge_codes = np.asarray(types, np.int64).reshape(-1)
                else:
                    edge_codes = np.full(starts.size, codes[0], np.int64)
            self._check_starts(starts, chunk, stmt)
            parts.append((starts, ends, edge_codes))
        starts, ends, edge_codes = (np.concatenate(column) for column in zip(*parts, strict=True))
        order = np.lexsort((ends, starts, edge_codes))
        return starts[order], ends[order], edge_codes[order]

    def neighbour_pairs(
        self, nodes: np.ndarray, edge: str | None = None, direction: Direction = "out"
    ) -> tuple[np.ndarray, np.ndarray]:
        positions, codes = self._prepare(nodes, edge, direction)
        unique = np.unique(positions)
        if unique.size == 0 or not codes:
            return _EMPTY.copy(), _EMPTY.copy()
        directions = _directions(direction)
        by_direction = {d: self._pairs(unique, codes, d) for d in directions}
        sources: list[np.ndarray] = []
        targets: list[np.ndarray] = []
        for code in codes:
            for d in directions:
                starts, ends, edge_codes = by_direction[d]
                lo, hi = np.searchsorted(edge_codes, [code, code + 1])
                s, t = _expand(positions, starts[lo:hi], ends[lo:hi])
                sources.append(s)
                targets.append(t)
        return np.concatenate(sources), np.concatenate(targets)

    def degree(self, nodes: np.ndarray, edge: str | None = None, direction: Direction = "out") -> np.ndarray:
        positions, codes = self._prepare(nodes, edge, direction)
        total = np.zeros(positions.shape[0], np.int64)
        unique = np.unique(positions)
        if unique.size == 0 or not codes:
            return total
        labels = [self.layout.edge_labels[c] for c in codes]
        for d in _directions(direction):
            for chunk in self._chunks(unique):
                stmt = ngql.go_degree(chunk.tolist(), labels, d)
                result = self._runner.run(stmt)
                with reply(self._runner, stmt):
                    starts = int_column(result, ngql.COL_START)
                    counts = int_column(result, ngql.COL_COUNT)
                self._check_starts(starts, chunk, stmt)
                order = np.argsort(starts)
                starts, counts = starts[order], counts[order]
                at = np.minimum(np.searchsorted(starts, positions), max(starts.size - 1, 0))
                hit = starts[at] == positions if starts.size else np.zeros(positions.size, bool)
                total[hit] += counts[at[hit]]
        return total

    # -- node properties -----------------------------------------------------------------------------------------

    def fetch_nodes(self, nodes: np.ndarray) -> dict[int, NodeRecord]:
        """Type, external id, name and attributes of each distinct position (one FETCH per tag and chunk)."""
        unique = np.unique(self._positions(nodes))
        records: dict[int, NodeRecord] = {}
        if unique.size == 0:
            return records
        for tag in self.layout.tags:
            for chunk in self._chunks(unique):
                stmt = ngql.fetch_vertices(tag.label, chunk.tolist())
                result = self._runner.run(stmt)
                with reply(self._runner, stmt):
                    vids = int_column(result, ngql.COL_VID)
                    for vid, props in zip(vids, result.column_values(ngql.COL_PROPS), strict=True):
                        values = props.as_map()
                        records[int(vid)] = NodeRecord(
                            int(vid),
                            tag.type_name,
                            int(values[ngql.NODE_ID_PROP].as_int()),
                            str(values[ngql.NAME_PROP].as_string()),
                            {p.key: scalar(values.get(p.label)) for p in tag.attrs},
                        )
        return records
