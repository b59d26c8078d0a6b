"""Milvus adapter for the `VectorIndex` port, through `pymilvus.MilvusClient` (a server or embedded Milvus Lite).

One collection holds the index: `key` (INT64 primary key, the node position), `node_type` (INT16, as in
`ExactIndex`) and `vector` (FLOAT_VECTOR, inner-product metric: vectors are unit length, so IP is cosine).
A `uri` ending in ``.db`` runs Milvus Lite in-process (a directory that persists itself); anything else
(``http://host:19530``) talks to a server. Milvus is optional: `pymilvus` is imported only when an index is
first used, and constructing a `MilvusIndex` does no I/O; the first call connects, creates the collection
if it is missing (or checks its schema if it exists) and loads it.

How `search` filters:
- `node_types` becomes ``node_type in [..]``, pushed down to Milvus.
- `keys` with at most `rescore_max_keys` distinct keys (default 256): the candidates' vectors are fetched by
  primary key and scored exactly in numpy, as `ExactIndex` does. Results are exact whatever the index type,
  and a filtered search returns min(k, matching entries) hits (ANN indexes can return fewer under a very
  selective filter). Fetching costs ~0.1 ms per key at dim 384 (pymilvus decodes vectors into Python lists),
  which is why the threshold is low.
- larger key sets: the key list is cut into chunks of `filter_chunk_keys` (default 4,096); each chunk runs as
  one filtered search (``key in [..]``, and the type filter) and the per-chunk top-k lists are merged. Each
  chunk costs one search call (~15-35 ms on Milvus Lite, 20k × 384); with an ANN index the result is
  approximate, as any unfiltered search is.
Filter expressions are built only from values passed through `int()`, never from caller strings.

Results are ordered like `ExactIndex`: score descending, ties by key ascending. Milvus caps top-k at 16,384,
so `k` beyond that returns at most 16,384 hits (except on the exact re-scoring path).

Unlike numpy, Milvus does not reject a duplicate primary key (an insert silently replaces the row), so `add`
first asks which keys already exist and raises `ValueError` before inserting anything. Rows are inserted in
batches of at most 2,000; a backend failure in the middle of `add` can leave earlier batches inserted.

New rows sit in "growing" segments until Milvus seals them; Milvus Lite searches those slowly (~0.7 s a query
at 20k × 384) and builds no ANN index over them. `save` flushes; call `flush()` after a bulk `add` that will
be searched without a `save`. HNSW defaults (M 16, efConstruction 200, ef 64) suit real embeddings; on
random 384-d vectors ef 64 reaches only ~0.3 recall@10 (ef 512: 0.88, ef 1024: 0.98), so pass
`search_params={"ef": ...}` when recall matters more than latency.

Every pymilvus / gRPC failure surfaces as `BackendUnavailableError`; a missing package says how to install it.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import numpy as np

from skbqa.common.errors import BackendUnavailableError, IndexStoreError
from skbqa.stores.vectors.base import Hits

logger = logging.getLogger(__name__)

INDEX_TYPES = ("FLAT", "HNSW", "HNSW_SQ", "IVF_FLAT", "IVF_SQ8", "AUTOINDEX")
METRIC = "IP"
INSERT_BATCH = 2_000  # rows per insert call
MAX_TOPK = 16_384  # Milvus' limit on `limit` (and on queries per call)
QUERY_BATCH = 1_024  # query vectors per search call
_CONFIG = "milvus.json"
_INT16 = np.iinfo(np.int16)
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


def _int_list(values: Sequence[int] | np.ndarray) -> str:
    # int() on every value: the expression can only ever contain integer literals.
    return "[" + ",".join(str(int(v)) for v in values) + "]"


def _top(keys: np.ndarray, scores: np.ndarray, k: int) -> Hits:
    """The k best (keys, scores): score descending, ties by key ascending, as ExactIndex orders them."""
    order = np.lexsort((keys, -scores))[:k]
    return Hits(keys[order].astype(np.int64, copy=False), scores[order].astype(np.float32, copy=False))


def _empty() -> Hits:
    return Hits(np.zeros(0, np.int64), np.zeros(0, np.float32))


class MilvusIndex:
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

    # -- the port -----------------------------------------------------------------------------------------------

    def __len__(self) -> int:
        client = self._conn()
        with self._errors("count"):
            rows = client.query(self._collection, filter="", output_fields=["count(*)"], timeout=self._timeout)
        return int(rows[0]["count(*)"])

    def add(self, keys: np.ndarray, vectors: np.ndarray, node_types: np.ndarray) -> None:
        keys = np.asarray(keys, np.int64)
        vectors = np.asarray(vectors, np.float32)
        node_types = np.asarray(node_types)
        n = keys.shape[0]
        if keys.ndim != 1 or vectors.ndim != 2 or vectors.shape != (n, self._dim):
            raise ValueError(f"expected ({n}, {self._dim}) vectors, got {vectors.shape}")
        if node_types.shape != (n,):
            raise ValueError(f"expected {n} node types, got shape {node_types.shape}")
        if n and (node_types.min() < _INT16.min or node_types.max() > _INT16.max):
            raise ValueError("node types must fit in int16")
        if np.unique(keys).size != n:
            raise ValueError("keys must be new and unique")
        if n == 0:
            return
        client = self._conn()
        present = self._existing(client, keys)
        if present.size:
            raise ValueError(
                f"keys must be new and unique: {present.size} already in the index (e.g. {present[:5].tolist()})"
            )
        types = node_types.astype(np.int64)
        with self._errors("insert"):
            for start in range(0, n, INSERT_BATCH):
                stop = min(n, start + INSERT_BATCH)
                rows = [
                    {"key": int(keys[i]), "node_type": int(types[i]), "vector": vectors[i]}
                    for i in range(start, stop)
                ]
                client.insert(self._collection, rows, timeout=self._timeout)

    def _existing(self, client: Any, keys: np.ndarray) -> np.ndarray:
        """Which of `keys` are already stored."""
        found: list[int] = []
        with self._errors("query"):
            for start in range(0, keys.size, self._filter_chunk_keys):
                chunk = keys[start : start + self._filter_chunk_keys]
                rows = client.query(
                    self._collection,
                    filter=f"key in {_int_list(chunk)}",
                    output_fields=["key"],
                    timeout=self._timeout,
                )
                found.extend(int(row["key"]) for row in rows)
        return np.sort(np.asarray(found, np.int64))

    def _fetch(self, client: Any, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(keys, node types, float32 vectors) of the stored entries among `keys`, keys ascending."""
        got_keys: list[int] = []
        got_types: list[int] = []
        got_vectors: list[Any] = []
        with self._errors("get"):
            for start in range(0, keys.size, self._filter_chunk_keys):
                chunk = keys[start : start + self._filter_chunk_keys]
                rows = client.get(
                    self._collection,
                    ids=[int(k) for k in chunk],
                    output_fields=["node_type", "vector"],
                    timeout=self._timeout,
                )
                for row in rows:
                    got_keys.append(int(row["key"]))
                    got_types.append(int(row["node_type"]))
                    got_vectors.append(row["vector"])
        found = np.asarray(got_keys, np.int64)
        order = np.argsort(found, kind="stable")
        vectors = np.asarray(got_vectors, np.float32).reshape(-1, self._dim)
        return found[order], np.asarray(got_types, np.int64)[order], vectors[order]

    def vectors_for(self, keys: np.ndarray) -> np.ndarray:
        """Stored vectors for keys (float32, keys ascending, missing keys skipped), like `ExactIndex.vectors_for`."""
        wanted = np.unique(np.asarray(keys, np.int64))
        if wanted.size == 0:
            return np.zeros((0, self._dim), np.float32)
        return self._fetch(self._conn(), wanted)[2]

    def search(
        self,
        queries: np.ndarray,
        k: int,
        *,
        node_types: Sequence[int] | None = None,
        keys: np.ndarray | None = None,
    ) -> list[Hits]:
        queries = np.atleast_2d(np.asarray(queries, np.float32))
        if queries.ndim != 2 or queries.shape[1] != self._dim:
            raise ValueError(f"expected queries of dim {self._dim}, got shape {queries.shape}")
        nq = queries.shape[0]
        types = sorted({int(t) for t in node_types}) if node_types is not None else None
        wanted = np.unique(np.asarray(keys, np.int64)) if keys is not None else None
        if nq == 0 or k <= 0 or (types is not None and not types) or (wanted is not None and wanted.size == 0):
            return [_empty() for _ in range(nq)]
        client = self._conn()
        if wanted is not None and wanted.size <= self._rescore_max_keys:
            return self._rescore(client, queries, k, types, wanted)

        type_filter = f"node_type in {_int_list(types)}" if types is not None else ""
        if wanted is None:
            filters = [type_filter]
        else:
            filters = []
            for start in range(0, wanted.size, self._filter_chunk_keys):
                key_filter = f"key in {_int_list(wanted[start : start + self._filter_chunk_keys])}"
                filters.append(f"({type_filter}) and ({key_filter})" if type_filter else key_filter)
        limit = min(k, MAX_TOPK)
        params = dict(self._search_params)
        if "ef" in params:
            params["ef"] = max(int(params["ef"]), limit)  # HNSW needs ef ≥ k
        found_keys: list[list[np.ndarray]] = [[] for _ in range(nq)]
        found_scores: list[list[np.ndarray]] = [[] for _ in range(nq)]
        with self._errors("search"):
            for expression in filters:
                for start in range(0, nq, QUERY_BATCH):
                    result = client.search(
                        self._collection,
                        data=queries[start : start + QUERY_BATCH],
                        filter=expression,
                        limit=limit,
                        anns_field="vector",
                        search_params={"metric_type": METRIC, "params": params},
                        timeout=self._timeout,
                    )
                    for offset, hits in enumerate(result):
                        found_keys[start + offset].append(np.asarray(hits.ids, np.int64))
                        found_scores[start + offset].append(np.asarray(hits.distances, np.float32))
        # Re-sort even a single list: Milvus orders ties arbitrarily, the port orders them by key.
        return [
            _top(np.concatenate(ks), np.concatenate(ss), limit)
            for ks, ss in zip(found_keys, found_scores, strict=True)
        ]

    def _rescore(
        self, client: Any, queries: np.ndarray, k: int, types: list[int] | None, wanted: np.ndarray
    ) -> list[Hits]:
        """Exact scores over a small candidate set, fetched by primary key."""
        found, found_types, vectors = self._fetch(client, wanted)
        if types is not None:
            keep = np.isin(found_types, types)
            found, vectors = found[keep], vectors[keep]
        if found.size == 0:
            return [_empty() for _ in range(queries.shape[0])]
        scores = queries @ vectors.T  # (q, n) float32
        return [_top(found, row, k) for row in scores]

    def flush(self) -> None:
        """Seal what has been inserted so Milvus persists it and builds the ANN index over it.

        Until then new rows sit in "growing" segments that Milvus searches by brute force; the index build
        after a flush runs in the background (Milvus Lite: well under a second for 2k rows, seconds for 20k),
        and searches are slow while it runs.
        """
        client = self._conn()
        with self._errors("flush"):
            client.flush(self._collection, timeout=self._timeout)

    def save(self, directory: Path) -> None:
        """Flush the collection and record where it lives; Milvus itself holds the data.

        A Milvus Lite path inside `directory` is stored relative to it, so the directory can be moved as a
        whole. The token is never written: pass it again to `load`.
        """
        self.flush()
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        uri = self._uri
        if _is_local(uri) and Path(uri).is_relative_to(directory.absolute()):
            uri = str(Path(uri).relative_to(directory.absolute()))
        config = {
            "uri": uri,
            "collection": self._collection,
            "dim": self._dim,
            "index_type": self._index_type,
            "metric": METRIC,
            "build_params": self._build_params,
            "search_params": self._search_params,
            "rescore_max_keys": self._rescore_max_keys,
            "filter_chunk_keys": self._filter_chunk_keys,
        }
        tmp = directory / f".{_CONFIG}.tmp"
        tmp.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
        os.replace(tmp, directory / _CONFIG)

    @classmethod
    def load(cls, directory: Path, *, token: str = "", timeout: float | None = None) -> MilvusIndex:
        """Reopen the collection `save` recorded (lazily: nothing connects until first use)."""
        path = Path(directory) / _CONFIG
        try:
            config = json.loads(path.read_text(encoding="utf-8"))
            uri = str(config["uri"])
            if _is_local(uri) and not Path(uri).is_absolute():
                uri = str(Path(directory) / uri)
            return cls(
                uri,
                str(config["collection"]),
                int(config["dim"]),
                index_type=str(config["index_type"]),
                token=token,
                timeout=timeout,
                build_params=config.get("build_params"),
                search_params=config.get("search_params"),
                rescore_max_keys=int(config.get("rescore_max_keys", 256)),
                filter_chunk_keys=int(config.get("filter_chunk_keys", 4_096)),
            )
        except FileNotFoundError as exc:
            raise IndexStoreError(f"{path}: missing (not a saved Milvus index)") from exc
        except (ValueError, KeyError, TypeError) as exc:
            raise IndexStoreError(f"{path}: unreadable Milvus index record ({exc})") from exc

    def close(self) -> None:
        """Close the client connection (the collection stays loaded for other clients); reusable afterwards."""
        client, self._client = self._client, None
        if client is not None:
            with self._errors("close"):
                client.close()
