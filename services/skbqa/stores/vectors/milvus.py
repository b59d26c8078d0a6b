"""Milvus adapter for the `VectorIndex` port: `MilvusIndex`, over one collection (see `milvus_collection`).

How `search` filters:
- `node_types` becomes ``node_type in [..]``, pushed down to Milvus.
- `keys` with at most `rescore_max_keys` distinct keys (default 256): the candidates' vectors are fetched by
  primary key and scored exactly in numpy, as `ExactIndex` does, so a filtered search returns min(k, matching
  entries) hits whatever the index type. Fetching costs ~0.1 ms per key at dim 384, hence the low threshold.
- larger key sets: chunks of `filter_chunk_keys` keys (default 4,096), one filtered search each (``key in [..]``
  and the type filter), the per-chunk top-k lists merged; approximate with an ANN index, as any search is.
Filter expressions are built only from values passed through `int()`, never from caller strings. Results are
ordered like `ExactIndex` (score descending, ties by key ascending); Milvus caps top-k at 16,384.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from skbqa.common.errors import IndexStoreError
from skbqa.stores.vectors.base import Hits
from skbqa.stores.vectors.milvus_collection import METRIC, MilvusCollection, _is_local

INSERT_BATCH = 2_000  # rows per insert call
MAX_TOPK = 16_384  # Milvus' limit on `limit` (and on queries per call)
QUERY_BATCH = 1_024  # query vectors per search call
_CONFIG = "milvus.json"
_INT16 = np.iinfo(np.int16)


def _int_list(values: Sequence[int] | np.ndarray) -> str:
    # int() on every value: the expression can only ever contain integer literals.
    return "[" + ",".join(str(int(v)) for v in values) + "]"


def _top(keys: np.ndarray, scores: np.ndarray, k: int) -> Hits:
    """The k best (keys, scores): score descending, ties by key ascending, as ExactIndex orders them."""
    order = np.lexsort((keys, -scores))[:k]
    return Hits(keys[order].astype(np.int64, copy=False), scores[order].astype(np.float32, copy=False))


def _empty() -> Hits:
    return Hits(np.zeros(0, np.int64), np.zeros(0, np.float32))


class MilvusIndex(MilvusCollection):
    """The `VectorIndex` port on one Milvus collection.

    Unlike numpy, Milvus does not reject a duplicate primary key (an insert silently replaces the row), so `add`
    first asks which keys already exist and raises `ValueError` before inserting anything. Rows are inserted in
    batches of `INSERT_BATCH`; a backend failure in the middle of `add` can leave earlier batches inserted. New
    rows sit in "growing" segments, searched slowly, until `flush` (or `save`) seals them.
    """

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
