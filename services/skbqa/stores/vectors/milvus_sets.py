"""An index's embedding sets served from Milvus: load them once, then open them as `MilvusIndex` adapters.

The embedded engine keeps every vector set in an in-process `ExactIndex`. In a cluster the `symbols` and
`ranking` services can instead read them from one Milvus (a server, or Milvus Lite in tests):

    load_vectors_into_milvus(index_dir, uri)            # once per index build: one collection per set
    stores = with_milvus_vectors(open_index(index_dir), uri)   # in each service: same strategies, Milvus vectors

Collection names and the index type per set come from `milvus_catalog`; `milvus_set_loading` copies one set.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

from skbqa.common.errors import IndexStoreError
from skbqa.stores.index import EMBEDDING_SETS, IndexStores, read_manifest, verify_files
from skbqa.stores.nodes import NodeTable
from skbqa.stores.vectors.exact import ExactIndex
from skbqa.stores.vectors.milvus import MilvusIndex
from skbqa.stores.vectors.milvus_catalog import AUTO, _Catalog, _check_sets, _expected, collection_name
from skbqa.stores.vectors.milvus_collection import _display
from skbqa.stores.vectors.milvus_set_loading import _load_set

# -- loading ----------------------------------------------------------------------------------------------------


def load_vectors_into_milvus(
    index_dir: Path,
    uri: str,
    *,
    sets: Sequence[str] = EMBEDDING_SETS,
    index_type: str = AUTO,
    collection_prefix: str = "skbqa",
    token: str = "",
    batch: int = 2_000,
    progress: bool = False,
) -> dict[str, dict[str, Any]]:
    """Copy the index's embedding sets into Milvus, one collection each; returns per set: `collection`,
    `index_type`, `rows`, `inserted` (0 when the collection was already complete), `seconds`.

    Idempotent: a collection already holding the set (same row count, same vectors at a few spot-checked keys,
    same index type when one is asked for) is left as it is. Any other existing collection under that name
    raises IndexStoreError, since loading into it would mix two states; drop it and load again.
    """
    if batch <= 0:
        raise ValueError("batch must be positive")
    chosen_sets = _check_sets(sets)
    catalog = _Catalog(uri, token, None)
    try:
        index_dir = Path(index_dir)
        manifest = read_manifest(index_dir)
        verify_files(index_dir, manifest, ("nodes", *(f"vectors/{name}" for name in chosen_sets)))
        dim, rows = _expected(manifest)
        node_types = NodeTable.load(index_dir / "nodes").types
        if node_types.shape[0] != rows:
            raise IndexStoreError(
                f"{index_dir}: {node_types.shape[0]} node types for {rows} nodes; re-run skbqa ingest"
            )
        report = {}
        for name in chosen_sets:
            collection = collection_name(manifest, name, collection_prefix)
            report[name] = _load_set(
                catalog,
                index_dir / "vectors" / name,
                collection,
                dim,
                node_types,
                index_type,
                token,
                batch,
                progress,
            )
        return report
    finally:
        catalog.close()


# -- serving ----------------------------------------------------------------------------------------------------


def open_milvus_vector_sets(
    index_dir: Path,
    uri: str,
    *,
    sets: Sequence[str] = EMBEDDING_SETS,
    collection_prefix: str = "skbqa",
    token: str = "",
    timeout: float | None = None,
    search_params: dict[str, Any] | None = None,
    rescore_max_keys: int = 256,
) -> dict[str, MilvusIndex]:
    """One connected `MilvusIndex` per embedding set, keyed like `IndexStores.vectors`.

    Each collection must exist (IndexStoreError naming `load_vectors_into_milvus` otherwise; the adapter would
    silently create an empty one) with the manifest's dimension and node count. The index type is read from
    Milvus, so HNSW collections get HNSW search parameters (`search_params` overrides them, e.g. a larger ef).
    """
    index_dir = Path(index_dir)
    return _open(
        read_manifest(index_dir),
        index_dir,
        uri,
        sets=sets,
        prefix=collection_prefix,
        token=token,
        timeout=timeout,
        search_params=search_params,
        rescore_max_keys=rescore_max_keys,
    )


def _open(
    manifest: dict[str, Any],
    index_dir: Path,
    uri: str,
    *,
    sets: Sequence[str],
    prefix: str,
    token: str,
    timeout: float | None,
    search_params: dict[str, Any] | None,
    rescore_max_keys: int,
) -> dict[str, MilvusIndex]:
    chosen_sets = _check_sets(sets)
    dim, rows = _expected(manifest)
    catalog = _Catalog(uri, token, timeout)
    opened: dict[str, MilvusIndex] = {}
    try:
        for name in chosen_sets:
            collection = collection_name(manifest, name, prefix)
            if not catalog.exists(collection):
                raise IndexStoreError(
                    f"Milvus at {_display(catalog.uri)} has no collection {collection!r} for the {name!r} vectors "
                    f"of {index_dir}; load them first with load_vectors_into_milvus (docs/milvus.md)",
                    collection=collection,
                )
            index = MilvusIndex(
                catalog.uri,
                collection,
                dim,
                index_type=catalog.index_type(collection) or "FLAT",
                token=token,
                timeout=timeout,
                search_params=search_params,
                rescore_max_keys=rescore_max_keys,
            )
            opened[name] = index
            count = len(index)  # connects, loads the collection and checks its schema and dimension
            if count != rows:
                raise IndexStoreError(
                    f"Milvus collection {collection!r} holds {count} rows, the index manifest {rows}; "
                    "drop it and run load_vectors_into_milvus again",
                    collection=collection,
                    rows=count,
                    expected=rows,
                )
    except BaseException:
        for index in opened.values():
            index.close()
        raise
    finally:
        catalog.close()
    return opened


def with_milvus_vectors(
    stores: IndexStores,
    uri: str,
    *,
    sets: Sequence[str] = EMBEDDING_SETS,
    collection_prefix: str = "skbqa",
    token: str = "",
    timeout: float | None = None,
    search_params: dict[str, Any] | None = None,
    rescore_max_keys: int = 256,
) -> IndexStores:
    """`stores` with the named embedding sets served from Milvus (the others stay in-process)."""
    milvus = _open(
        stores.manifest,
        stores.directory,
        uri,
        sets=sets,
        prefix=collection_prefix,
        token=token,
        timeout=timeout,
        search_params=search_params,
        rescore_max_keys=rescore_max_keys,
    )
    # IndexStores types its vectors as ExactIndex; MilvusIndex provides every method the strategies call on
    # them (search with node_types/keys, vectors_for, __len__, dim), which tests/integration checks end to end.
    vectors = cast(dict[str, ExactIndex], {**stores.vectors, **milvus})
    return replace(stores, vectors=vectors)


def close_milvus_vectors(stores: IndexStores) -> int:
    """Close the Milvus clients of `stores` (a knowledge-base version no longer served: each client would keep
    its connection for the life of the process). A late search on one reconnects. Returns how many closed."""
    closed = 0
    for index in stores.vectors.values():
        if isinstance(index, MilvusIndex):
            index.close()
            closed += 1
    return closed
