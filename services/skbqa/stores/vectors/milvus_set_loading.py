"""Copying one embedding set into a Milvus collection, or checking that an existing collection already holds it."""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

import numpy as np

from skbqa.common.errors import IndexStoreError
from skbqa.stores.index import load_exact_vectors
from skbqa.stores.vectors.exact import ExactIndex
from skbqa.stores.vectors.milvus import MilvusIndex
from skbqa.stores.vectors.milvus_catalog import AUTO, _Catalog, choose_index_type

logger = logging.getLogger(__name__)

_SPOT_CHECKS = 3  # stored vectors compared with the index's when a collection is reused


def _read_set(directory: Path, dim: int, rows: int) -> ExactIndex:
    try:
        exact = load_exact_vectors(directory, dtype="float32")  # Milvus stores float32 whatever ingest kept
    except (OSError, KeyError, ValueError) as exc:
        raise IndexStoreError(f"{directory}: unreadable vector set ({exc}); re-run skbqa ingest") from None
    if exact.dim != dim or len(exact) != rows:
        raise IndexStoreError(
            f"{directory}: {len(exact)} × {exact.dim} vectors, the manifest says {rows} × {dim}; re-run skbqa ingest"
        )
    return exact


def _load_set(
    catalog: _Catalog,
    directory: Path,
    collection: str,
    dim: int,
    node_types: np.ndarray,
    index_type: str,
    token: str,
    batch: int,
    progress: bool,
) -> dict[str, Any]:
    started = time.perf_counter()
    rows = int(node_types.shape[0])
    exact = _read_set(directory, dim, rows)
    chosen = choose_index_type(rows, index_type)
    if catalog.exists(collection):
        existing = _reuse(catalog, collection, exact, index_type, token)
        logger.info("Milvus collection %s already holds its %d rows; nothing to load", collection, rows)
        return _entry(collection, existing, rows, 0, started)
    target = MilvusIndex(catalog.uri, collection, dim, index_type=chosen, token=token)
    try:
        _insert(target, exact, node_types, batch, progress)
        target.flush()
        catalog.wait_for_index(collection)
        loaded = len(target)
    finally:
        target.close()
    if loaded != rows:
        raise IndexStoreError(
            f"Milvus collection {collection!r} counts {loaded} rows after loading {rows}", collection=collection
        )
    entry = _entry(collection, chosen, rows, rows, started)
    logger.info("loaded %s: %d rows, %s, %.1f s", collection, rows, chosen, entry["seconds"])
    return entry


def _entry(collection: str, index_type: str, rows: int, inserted: int, started: float) -> dict[str, Any]:
    seconds = round(time.perf_counter() - started, 3)
    return {
        "collection": collection,
        "index_type": index_type,
        "rows": rows,
        "inserted": inserted,
        "seconds": seconds,
    }


def _insert(target: MilvusIndex, exact: ExactIndex, node_types: np.ndarray, batch: int, progress: bool) -> None:
    rows = len(exact)
    keys = np.arange(rows, dtype=np.int64)  # ingest keys every set by node position 0..N-1
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=rows, desc=f"milvus {target.collection}", unit="row", mininterval=1.0, leave=False)
    try:
        for start in range(0, rows, batch):
            chunk = keys[start : start + batch]
            vectors = exact.vectors_for(chunk)  # skips keys it lacks: a short block means a damaged set
            if vectors.shape[0] != chunk.size:
                raise IndexStoreError(
                    f"the {target.collection} vectors lack keys in [{start}, {start + chunk.size}); re-run skbqa ingest"
                )
            target.add(chunk, vectors, node_types[chunk])
            if bar is not None:
                bar.update(chunk.size)
    finally:
        if bar is not None:
            bar.close()


def _reuse(catalog: _Catalog, collection: str, exact: ExactIndex, index_type: str, token: str) -> str:
    """Check that an existing collection already holds this set; its index type, or IndexStoreError."""
    existing = catalog.index_type(collection) or "FLAT"
    drop = f"drop it (MilvusClient.drop_collection({collection!r})) and load again"
    if index_type.upper() != AUTO and choose_index_type(len(exact), index_type) != existing:
        raise IndexStoreError(
            f"Milvus collection {collection!r} is indexed {existing}, not {index_type.upper()}; {drop}",
            collection=collection,
        )
    present = MilvusIndex(catalog.uri, collection, exact.dim, index_type=existing, token=token)
    try:
        count = len(present)  # the adapter also checks the schema (key, node_type, vector dim) here
        if count != len(exact):
            raise IndexStoreError(
                f"Milvus collection {collection!r} holds {count} rows, the index has {len(exact)} "
                f"(an interrupted or foreign load?); {drop}",
                collection=collection,
                rows=count,
                expected=len(exact),
            )
        probe = np.unique(np.linspace(0, len(exact) - 1, _SPOT_CHECKS).astype(np.int64))
        stored = present.vectors_for(probe)
        if stored.shape[0] != probe.size or not np.allclose(stored, exact.vectors_for(probe), atol=1e-6):
            raise IndexStoreError(
                f"Milvus collection {collection!r} holds other vectors than this index; {drop}",
                collection=collection,
            )
    finally:
        present.close()
    return existing
