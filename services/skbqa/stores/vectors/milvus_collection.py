"""One Milvus collection as `MilvusIndex` sees it: its settings, the lazy connection, and its schema.

The collection holds `key` (INT64 primary key, the node position), `node_type` (INT16, as in `ExactIndex`) and
`vector` (FLOAT_VECTOR, inner-product metric: vectors are unit length, so IP is cosine). A `uri` ending in
``.db`` runs Milvus Lite in-process (a directory that persists itself); anything else (``http://host:19530``)
talks to a server. `pymilvus` is imported only on first use and constructing does no I/O; the first call
connects, creates the collection if it is missing (or checks its schema if it exists) and loads it. Every
pymilvus / gRPC failure surfaces as `BackendUnavailableError`; a missing package says how to install it.
HNSW defaults (M 16, efConstruction 200, ef 64) suit real embeddings; on random 384-d vectors ef 64 reaches
only ~0.3 recall@10, so pass `search_params={"ef": ...}` when recall matters more than latency.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from skbqa.common.errors import BackendUnavailableError, IndexStoreError

logger = logging.getLogger(__name__)

INDEX_TYPES = ("FLAT", "HNSW", "HNSW_SQ", "IVF_FLAT", "IVF_SQ8", "AUTOINDEX")
METRIC = "IP"
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,254}")

_BUILD_DEFAULTS: dict[str, dict[str, Any]] = {
    "HNSW": {"M": 16, "efConstruction": 200},
    "HNSW_SQ": {"M": 16, "efConstruction": 200},
    "IVF_FLAT": {"nlist": 128},
    "IVF_SQ8": {"nlist": 128},
}
_SEARCH_DEFAULTS: dict[str, dict[str, Any]] = {
    "HNSW": {"ef": 64},
    "HNSW_SQ": {"ef": 64},
    "IVF_FLAT": {"nprobe": 16},
    "IVF_SQ8": {"nprobe": 16},
}


def _pymilvus() -> Any:
    try:
        import pymilvus
    except ImportError as exc:
        raise BackendUnavailableError(
            "the Milvus vector index needs pymilvus and milvus-lite: pip install skbqa[milvus]"
        ) from exc
    return pymilvus


def _is_local(uri: str) -> bool:
    """pymilvus' own rule: a uri ending in .db is a Milvus Lite directory."""
    return uri.endswith(".db")


def _display(uri: str) -> str:
    """The uri without any user:password part, for messages."""
    if _is_local(uri):
        return uri
    parts = urlsplit(uri)
    if "@" not in parts.netloc:
        return uri
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))


class MilvusCollection:
    """Connection settings and collection setup; `MilvusIndex` adds the `VectorIndex` operations."""

    def __init__(
        self,
        uri: str,
        collection: str,
        dim: int,
        *,
        index_type: str = "FLAT",
        token: str = "",
        timeout: float | None = None,
        build_params: dict[str, Any] | None = None,
        search_params: dict[str, Any] | None = None,
        rescore_max_keys: int = 256,
        filter_chunk_keys: int = 4_096,
    ) -> None:
        index_type = index_type.upper()
        if index_type not in INDEX_TYPES:
            raise ValueError(f"index_type must be one of {', '.join(INDEX_TYPES)}, got {index_type!r}")
        if not _NAME.fullmatch(collection):
            raise ValueError(f"invalid Milvus collection name {collection!r} (letters, digits, _; ≤ 255 chars)")
        if dim <= 0:
            raise ValueError("dim must be positive")
        if rescore_max_keys < 0 or filter_chunk_keys <= 0:
            raise ValueError("rescore_max_keys must be ≥ 0 and filter_chunk_keys > 0")
        if _is_local(uri):
            uri = str(Path(uri).expanduser().absolute())
        self._uri = uri
        self._collection = collection
        self._dim = dim
        self._index_type = index_type
        self._token = token
        self._timeout = timeout
        self._build_params = dict(_BUILD_DEFAULTS.get(index_type, {}) if build_params is None else build_params)
        self._search_params = dict(
            _SEARCH_DEFAULTS.get(index_type, {}) if search_params is None else search_params
        )
        self._rescore_max_keys = rescore_max_keys
        self._filter_chunk_keys = filter_chunk_keys
        self._client: Any = None  # connected on first use

    @property
    def dim(self) -> int:
        return self._dim

    @property
    def uri(self) -> str:
        return self._uri

    @property
    def collection(self) -> str:
        return self._collection

    @property
    def index_type(self) -> str:
        return self._index_type

    # -- connection ---------------------------------------------------------------------------------------------

    @contextmanager
    def _errors(self, operation: str) -> Iterator[None]:
        """Re-raise pymilvus and gRPC failures as BackendUnavailableError naming the operation and collection."""
        try:
            yield
        except (BackendUnavailableError, IndexStoreError, ValueError):
            raise
        except Exception as exc:
            module = type(exc).__module__
            if not module.startswith(("pymilvus", "grpc", "milvus_lite")) and not isinstance(exc, OSError):
                raise
            detail = getattr(exc, "message", "") or str(exc)
            raise BackendUnavailableError(
                f"Milvus {operation} failed for collection {self._collection!r} at {_display(self._uri)}: {detail}",
                uri=_display(self._uri),
                collection=self._collection,
                operation=operation,
                code=getattr(exc, "code", None),
            ) from exc

    def _conn(self) -> Any:
        if self._client is not None:
            return self._client
        pymilvus = _pymilvus()
        with self._errors("connect"):
            if _is_local(self._uri):
                Path(self._uri).parent.mkdir(parents=True, exist_ok=True)
            client = pymilvus.MilvusClient(uri=self._uri, token=self._token, timeout=self._timeout)
            try:
                if client.has_collection(self._collection, timeout=self._timeout):
                    self._check_schema(client, pymilvus.DataType)
                else:
                    self._create(client, pymilvus)
                # A collection reopened by a fresh Milvus (Lite) process starts released; loading is idempotent.
                client.load_collection(self._collection, timeout=self._timeout)
            except BaseException:
                client.close()
                raise
        self._client = client
        return client

    def _create(self, client: Any, pymilvus: Any) -> None:
        data_type = pymilvus.DataType
        schema = pymilvus.MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
        schema.add_field("key", data_type.INT64, is_primary=True)
        schema.add_field("node_type", data_type.INT16)
        schema.add_field("vector", data_type.FLOAT_VECTOR, dim=self._dim)
        index_params = client.prepare_index_params()
        index_params.add_index(
            field_name="vector", index_type=self._index_type, metric_type=METRIC, params=self._build_params
        )
        # Strong consistency: a search right after add() sees the new rows (the port promises no less).
        client.create_collection(
            self._collection,
            schema=schema,
            index_params=index_params,
            consistency_level="Strong",
            timeout=self._timeout,
        )
        logger.info("created Milvus collection %s (%s, dim %d)", self._collection, self._index_type, self._dim)

    def _check_schema(self, client: Any, data_type: Any) -> None:
        fields = {
            f["name"]: f for f in client.describe_collection(self._collection, timeout=self._timeout)["fields"]
        }
        problems = []
        key, node_type, vector = fields.get("key"), fields.get("node_type"), fields.get("vector")
        if key is None or key.get("type") != data_type.INT64 or not key.get("is_primary"):
            problems.append("no INT64 primary field 'key'")
        if node_type is None or node_type.get("type") != data_type.INT16:
            problems.append("no INT16 field 'node_type'")
        if vector is None or vector.get("type") != data_type.FLOAT_VECTOR:
            problems.append("no FLOAT_VECTOR field 'vector'")
        elif int(vector.get("params", {}).get("dim", -1)) != self._dim:
            problems.append(f"vector dim {vector['params'].get('dim')} != {self._dim}")
        if problems:
            raise IndexStoreError(
                f"Milvus collection {self._collection!r} at {_display(self._uri)} does not fit this index: "
                + "; ".join(problems),
                collection=self._collection,
            )
