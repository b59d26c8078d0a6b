"""Connections to NebulaGraph and the retry policy every statement runs under (`StatementRunner`).

nebula3 is imported only when the first connection is made. Connection and I/O errors, and graphd's transient
error codes (`RETRYABLE_CODES`), are retried with exponential backoff, reconnecting after a transport error;
after that, as for any other backend failure, a statement raises `BackendUnavailableError` with a one-line
message. `reply`, `int_column` and `scalar` read a statement's result, turning a reply skbqa does not
understand into the same error.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Protocol

import numpy as np

from skbqa.common.errors import BackendUnavailableError, IndexStoreError
from skbqa.skb.model import Scalar
from skbqa.stores.graph.nebula_settings import NebulaSettings

logger = logging.getLogger(__name__)

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


class Connection(Protocol):
    """What the runner needs: nebula3's SessionPool and Session have this shape (so do the test fakes)."""

    def execute(self, stmt: str) -> Any: ...

    def close(self) -> None: ...


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
