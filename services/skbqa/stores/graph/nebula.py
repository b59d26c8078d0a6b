"""NebulaGraph adapter for the `GraphStore` port: batched GO and FETCH through nebula3-python's SessionPool.

A space written by `nebula_loader` holds one vertex per node (VID = node position, vid_type INT64), one tag per
node type, one edge type per edge name, and one layout vertex (`ngql.META_VID`) with the node count, the edge
names in code order and the name → identifier mapping. The adapter reads the layout once, on first use:
constructing a `NebulaGraph` does no I/O, and nebula3 is imported only when the first connection is made.

Semantics are `CsrGraph`'s, and so is the row order of `neighbour_pairs`: blocks by edge code, out before in;
within a block, input order (duplicates repeated), neighbours ascending. Each call dedupes its input, sends at
most `chunk_size` VIDs per statement, and expands the replies back onto the input in numpy.

Connection and I/O errors, and graphd's transient error codes, are retried `retries` times with exponential
backoff (reconnecting after a transport error); after that, as for any other backend failure, the call raises
`BackendUnavailableError` with a one-line message. A space with no layout vertex raises `IndexStoreError`.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal, Protocol
from urllib.parse import unquote, urlsplit

import numpy as np

from skbqa.common.errors import BackendUnavailableError, IndexStoreError
from skbqa.skb.model import Scalar
from skbqa.stores.graph import ngql
from skbqa.stores.graph.base import Direction

logger = logging.getLogger(__name__)

DEFAULT_PORT = 9669
DEFAULT_USER = "root"
DEFAULT_PASSWORD = "nebula"  # NebulaGraph's out-of-the-box account; any password works while auth is off
DEFAULT_CHUNK = 512

# nebula3.common.ttypes.ErrorCode values, copied so that importing this module never imports nebula3 (a unit
# test compares them with the installed client). Only errors that waiting can cure are retried.
E_DISCONNECTED = -1
E_FAIL_TO_CONNECT = -2
E_RPC_FAILURE = -3
E_LEADER_CHANGED = -4
E_PARTIAL_RESULT = -27
E_SESSION_INVALID = -1002
E_SESSION_TIMEOUT = -1003
E_EXECUTION_ERROR = -1005  # storaged failures (leader change, part not ready) surface with this code
E_TOO_MANY_CONNECTIONS = -1010
E_PARTIAL_SUCCEEDED = -1011  # some partitions failed: a partial neighbour set must never reach grounding
RETRYABLE_CODES = frozenset(
    {
        E_DISCONNECTED,
        E_FAIL_TO_CONNECT,
        E_RPC_FAILURE,
        E_LEADER_CHANGED,
        E_PARTIAL_RESULT,
        E_SESSION_INVALID,
        E_SESSION_TIMEOUT,
        E_EXECUTION_ERROR,
        E_TOO_MANY_CONNECTIONS,
        E_PARTIAL_SUCCEEDED,
    }
)

_EMPTY = np.zeros(0, np.int64)


class Connection(Protocol):
    """What the runner needs: nebula3's SessionPool and Session have this shape (so do the test fakes)."""

    def execute(self, stmt: str) -> Any: ...

    def close(self) -> None: ...


# --- settings ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class NebulaSettings:
    addresses: tuple[tuple[str, int], ...]
    space: str
    user: str = DEFAULT_USER
    password: str = DEFAULT_PASSWORD
    timeout_ms: int = 60_000  # connect and per-statement timeout
    max_sessions: int = 16
    chunk_size: int = DEFAULT_CHUNK  # VIDs per GO / FETCH statement
    retries: int = 3
    backoff_s: float = 0.2

    @property
    def where(self) -> str:
        return f"space {self.space!r} at {format_addresses(self.addresses)}"


def format_addresses(addresses: Sequence[tuple[str, int]]) -> str:
    return ",".join(f"[{h}]:{p}" if ":" in h else f"{h}:{p}" for h, p in addresses)


def parse_addresses(addresses: str | Sequence[str]) -> tuple[tuple[str, int], ...]:
    """Parse "host:port,host2" or ["host:port", ...] → ((host, port), ...); the port defaults to 9669."""
    items = addresses.split(",") if isinstance(addresses, str) else list(addresses)
    parsed: list[tuple[str, int]] = []
    for raw in items:
        item = raw.strip()
        if item.startswith("["):  # [ipv6]:port
            host, _, rest = item[1:].partition("]")
            port_text = rest.removeprefix(":")
        elif item.count(":") == 1:
            host, _, port_text = item.partition(":")
        else:
            host, port_text = item, ""
        try:
            port = int(port_text) if port_text else DEFAULT_PORT
        except ValueError:
            raise ValueError(f"bad NebulaGraph address {raw!r}: the port must be a number") from None
        if not host or not 0 < port < 65536:
            raise ValueError(f"bad NebulaGraph address {raw!r}: expected host:port")
        parsed.append((host, port))
    if not parsed:
        raise ValueError("no NebulaGraph address given")
    return tuple(parsed)


def parse_nebula_url(url: str) -> NebulaSettings:
    """nebula://[user[:password]@]host:port[,host:port...]/space (user and password default to root / nebula)."""
    parts = urlsplit(url)
    if parts.scheme != "nebula":
        raise ValueError(f"not a NebulaGraph URL (nebula://host:port/space): {url!r}")
    userinfo, _, hosts = parts.netloc.rpartition("@")
    user, _, password = userinfo.partition(":")
    space = parts.path.strip("/")
    if not space or "/" in space:
        raise ValueError(f"the NebulaGraph URL must name one space: nebula://host:port/space, not {url!r}")
    ngql.quote_ident(space)
    # Credentials belong in a Secret, not in a URL that lands in values and logs: SKBQA_NEBULA_USER / _PASSWORD
    # (the chart sets them from an existing Secret) apply when the URL carries none.
    return NebulaSettings(
        parse_addresses(hosts),
        space,
        user=unquote(user) or os.environ.get("SKBQA_NEBULA_USER") or DEFAULT_USER,
        password=unquote(password) or os.environ.get("SKBQA_NEBULA_PASSWORD") or DEFAULT_PASSWORD,
    )


# --- connections ------------------------------------------------------------------------------------------------


def _nebula3_import_error(exc: ImportError) -> BackendUnavailableError:
    return BackendUnavailableError(
        "the NebulaGraph adapter needs nebula3-python: pip install skbqa[nebula]", missing=str(exc)
    )


def session_pool_factory(settings: NebulaSettings) -> Callable[[], Connection]:
    """Connect with a SessionPool bound to `settings.space` (which must exist: the pool runs USE on each session)."""

    def connect() -> Connection:
        try:
            from nebula3.Config import SessionPoolConfig
            from nebula3.gclient.net.SessionPool import SessionPool
        except ImportError as exc:
            raise _nebula3_import_error(exc) from None
        config = SessionPoolConfig()
        config.timeout = settings.timeout_ms
        config.max_size = settings.max_sessions
        config.min_size = 1
        pool = SessionPool(settings.user, settings.password, settings.space, list(settings.addresses))
        try:
            if not pool.init(config):
                raise RuntimeError("the session pool refused its configuration (empty user or password?)")
        except BaseException:
            pool.close()
            raise
        return pool

    return connect


class _SessionConnection:
    """One plain session (no space), for the loader: it must work before the space exists."""

    def __init__(self, pool: Any, session: Any) -> None:
        self._pool = pool
        self._session = session

    def execute(self, stmt: str) -> Any:
        return self._session.execute(stmt)

    def close(self) -> None:
        try:
            self._session.release()
        finally:
            self._pool.close()


def session_factory(
    addresses: Sequence[tuple[str, int]], user: str, password: str, timeout_ms: int = 60_000
) -> Callable[[], Connection]:
    def connect() -> Connection:
        try:
            from nebula3.Config import Config
            from nebula3.gclient.net.ConnectionPool import ConnectionPool
        except ImportError as exc:
            raise _nebula3_import_error(exc) from None
        config = Config()
        config.timeout = timeout_ms
        config.max_connection_pool_size = 2
        pool = ConnectionPool()
        try:
            if not pool.init(list(addresses), config):
                raise RuntimeError("the connection pool did not start")
            session = pool.get_session(user, password)
        except BaseException:
            pool.close()
            raise
        return _SessionConnection(pool, session)

    return connect


def _one_line(text: object, limit: int = 300) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _describe(exc: BaseException) -> str:
    return _one_line(getattr(exc, "message", None) or str(exc) or type(exc).__name__)


def _is_client_error(exc: BaseException) -> bool:
    """Transport / session failures as nebula3 raises them (its own classes, socket errors, RuntimeError)."""
    return type(exc).__module__.startswith("nebula3") or isinstance(exc, OSError | RuntimeError)


_TWO_WORD_VERBS = frozenset({"INSERT", "CREATE", "DESCRIBE", "DROP", "REBUILD"})


def _verb(stmt: str) -> str:
    """The statement's leading keyword(s), for messages (never the statement itself: it can be megabytes)."""
    words = stmt.rsplit(";", 1)[-1].split()[:2]  # after a "USE `space`;" prefix
    if not words:
        return "statement"
    return " ".join(words) if words[0] in _TWO_WORD_VERBS else words[0]


class StatementRunner:
    """Runs statements over a lazily made connection, with bounded retries; failures leave as
    BackendUnavailableError. Retrying is safe because every statement skbqa sends is a read or an idempotent
    INSERT / CREATE ... IF NOT EXISTS."""

    def __init__(
        self,
        connect: Callable[[], Connection],
        where: str,
        *,
        retries: int = 3,
        backoff_s: float = 0.2,
        max_backoff_s: float = 8.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._connect = connect
        self.where = where
        self.retries = retries
        self._backoff_s = backoff_s
        self._max_backoff_s = max_backoff_s
        self._sleep = sleep
        self._conn: Connection | None = None
        self._lock = threading.Lock()

    def _connection(self) -> Connection:
        with self._lock:
            if self._conn is None:
                self._conn = self._connect()
            return self._conn

    def _drop(self) -> None:
        with self._lock:
            conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.close()
            except Exception as exc:  # closing a broken connection may fail too; the next attempt reconnects
                logger.debug("closing a NebulaGraph connection failed: %s", exc)

    def close(self) -> None:
        self._drop()

    def error(self, stmt: str, problem: str) -> BackendUnavailableError:
        return BackendUnavailableError(
            f"NebulaGraph {self.where}: {_verb(stmt)} failed: {problem}", where=self.where, statement=_verb(stmt)
        )

    def run(
        self,
        stmt: str,
        *,
        retry_codes: frozenset[int] | None = RETRYABLE_CODES,
        retries: int | None = None,
        check: bool = True,
    ) -> Any:
        """The statement's ResultSet. `retry_codes=None` retries every failure (for idempotent writes);
        `check=False` returns a non-retryable failure instead of raising (for polling)."""
        attempts = (self.retries if retries is None else retries) + 1
        problem = "no attempt made"
        for attempt in range(attempts):
            if attempt:
                self._sleep(min(self._backoff_s * 2 ** (attempt - 1), self._max_backoff_s))
            try:
                conn = self._connection()
            except BackendUnavailableError:
                raise  # nebula3 missing: waiting will not help
            except Exception as exc:
                problem = f"not reachable ({_describe(exc)})"
                continue
            try:
                result = conn.execute(stmt)
            except Exception as exc:
                if not _is_client_error(exc):
                    raise
                problem = _describe(exc)
                self._drop()
                continue
            if result.is_succeeded():
                return result
            code = result.error_code()
            problem = f"{_one_line(result.error_msg())} (error {code})"
            if retry_codes is None or code in retry_codes:
                continue
            if not check:
                return result
            raise self.error(stmt, problem)
        raise self.error(stmt, f"{problem}; gave up after {attempts} attempts")


@contextmanager
def reply(runner: StatementRunner, stmt: str) -> Iterator[None]:
    """Reading a reply: a missing column or a value of the wrong type means the server and skbqa disagree."""
    try:
        yield
    except (BackendUnavailableError, IndexStoreError):
        raise
    except Exception as exc:
        raise runner.error(stmt, f"unexpected reply ({type(exc).__name__}: {_describe(exc)})") from exc


def int_column(result: Any, name: str) -> np.ndarray:
    values = result.column_values(name)
    return np.fromiter((v.as_int() for v in values), np.int64, count=len(values))


def scalar(value: Any) -> Scalar:
    """A property value as a Python scalar (NULL and missing → None)."""
    if value is None or value.is_null() or value.is_empty():
        return None
    if value.is_bool():
        return bool(value.as_bool())
    if value.is_int():
        return int(value.as_int())
    if value.is_double():
        return float(value.as_double())
    if value.is_string():
        return str(value.as_string())
    return str(value.cast())


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
        ngql.quote_ident(space)  # refuse a bad space name now, not at the first query
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
