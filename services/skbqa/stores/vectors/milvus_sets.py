"""An index's embedding sets served from Milvus: load them once, then open them as `MilvusIndex` adapters.

The embedded engine keeps every vector set in an in-process `ExactIndex`. In a cluster the `symbols` and
`ranking` services can instead read them from one Milvus (a server, or Milvus Lite in tests):

    load_vectors_into_milvus(index_dir, uri)            # once per index build: one collection per set
    stores = with_milvus_vectors(open_index(index_dir), uri)   # in each service: same strategies, Milvus vectors

Collections are named `<prefix>_<schema>_<identity>_<set>`, where the identity hashes the manifest's bundle
checksum, encoder, dimension, vector dtype and build time: a re-ingested index gets fresh collections and can
never be served the vectors of an older build (drop the old ones with `MilvusClient.drop_collection`).

Index type: `AUTO` picks FLAT up to `AUTO_FLAT_MAX_ROWS` rows and HNSW above. FLAT is exact, so it returns the
same hits and scores as `ExactIndex` (measured: identical on the biomed sample), and a filtered FLAT search
always returns min(k, matching) hits, which HNSW does not promise. A brute-force scan costs ~10 ms per 100k
384-d rows on one core (the exact numpy index: ~10 ms at 98k), so up to 200k rows FLAT stays around 20 ms a
query, well inside a request budget, and every STaRK-sized SKB (prime: 129k nodes) keeps exact answers. Beyond
that the scan grows linearly and HNSW (approximate, ~ms at any size) is the better trade.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

import numpy as np

from skbqa.common.errors import BackendUnavailableError, IndexStoreError
from skbqa.stores.index import EMBEDDING_SETS, IndexStores, read_manifest
from skbqa.stores.nodes import NodeTable
from skbqa.stores.vectors.exact import ExactIndex
from skbqa.stores.vectors.milvus import INDEX_TYPES, MilvusIndex, _display, _is_local, _pymilvus

logger = logging.getLogger(__name__)

AUTO = "AUTO"
AUTO_FLAT_MAX_ROWS = 200_000  # see the module docstring: exact up to here, HNSW above
AUTO_ANN = "HNSW"
INDEX_BUILD_TIMEOUT = 600.0  # seconds to wait for Milvus to finish building an ANN index after the flush
_SPOT_CHECKS = 3  # stored vectors compared with the index's when a collection is reused
_UNSAFE = re.compile(r"[^A-Za-z0-9_]")


# -- names and choices ------------------------------------------------------------------------------------------


def index_identity(manifest: dict[str, Any]) -> str:
    """12 hex digits that change whenever the index's vectors could: new bundle, encoder, dtype or build."""
    fields = {
        "bundle": manifest.get("bundle", {}).get("sha256", ""),
        "encoder": manifest.get("encoder", {}).get("name", ""),
        "dim": manifest.get("encoder", {}).get("dim", 0),
        "dtype": manifest.get("vector_dtype", ""),
        "created": manifest.get("created_unix", 0),
    }
    return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()[:12]


def collection_name(manifest: dict[str, Any], embedding_set: str, prefix: str = "skbqa") -> str:
    """`<prefix>_<schema>_<identity>_<set>`, reduced to what Milvus accepts ([A-Za-z_][A-Za-z0-9_]*, ≤ 255)."""
    schema = _UNSAFE.sub("_", str(manifest.get("schema_name", "")))[:64]
    parts = [_UNSAFE.sub("_", prefix), schema, index_identity(manifest), _UNSAFE.sub("_", embedding_set)]
    name = "_".join(p for p in parts if p)
    if not re.match(r"[A-Za-z_]", name):
        name = "_" + name  # a prefix starting with a digit
    return name[:255]


def choose_index_type(rows: int, index_type: str = AUTO) -> str:
    """The Milvus index type for a collection of `rows` rows (`AUTO`: FLAT up to AUTO_FLAT_MAX_ROWS, else HNSW)."""
    wanted = index_type.upper()
    if wanted == AUTO:
        return "FLAT" if rows <= AUTO_FLAT_MAX_ROWS else AUTO_ANN
    if wanted not in INDEX_TYPES:
        raise ValueError(f"index_type must be AUTO or one of {', '.join(INDEX_TYPES)}, got {index_type!r}")
    return wanted


def _check_sets(sets: Sequence[str]) -> list[str]:
    unknown = [s for s in sets if s not in EMBEDDING_SETS]
    if unknown or not sets:
        raise ValueError(f"sets must be a non-empty subset of {', '.join(EMBEDDING_SETS)}, got {list(sets)}")
    return list(dict.fromkeys(sets))


def _expected(manifest: dict[str, Any]) -> tuple[int, int]:
    """(dim, rows per set) from the manifest: ingest stores one vector per node in every set."""
    try:
        return int(manifest["encoder"]["dim"]), int(manifest["counts"]["nodes"])
    except (KeyError, TypeError, ValueError) as exc:
        raise IndexStoreError(
            f"index manifest lacks encoder.dim or counts.nodes ({exc}); re-run skbqa ingest"
        ) from None


# -- a raw client, for what the adapter does not expose (existence, index type, build progress) ------------------


class _Catalog:
    """A pymilvus client for collection metadata; every backend failure becomes BackendUnavailableError."""

    def __init__(self, uri: str, token: str, timeout: float | None) -> None:
        pymilvus = _pymilvus()  # first, so a missing package is reported before any other work
        self.uri = str(Path(uri).expanduser().absolute()) if _is_local(uri) else uri
        self._timeout = timeout
        with self.errors("connect", ""):
            self._client = pymilvus.MilvusClient(uri=self.uri, token=token, timeout=timeout)

    @contextmanager
    def errors(self, operation: str, collection: str) -> Iterator[None]:
        try:
            yield
        except (BackendUnavailableError, IndexStoreError, ValueError):
            raise
        except Exception as exc:
            if not type(exc).__module__.startswith(("pymilvus", "grpc", "milvus_lite")) and not isinstance(
                exc, OSError
            ):
                raise
            detail = getattr(exc, "message", "") or str(exc)
            raise BackendUnavailableError(
                f"Milvus {operation} failed for {collection or 'the catalog'} at {_display(self.uri)}: {detail}",
                uri=_display(self.uri),
                collection=collection,
                operation=operation,
            ) from exc

    def exists(self, collection: str) -> bool:
        with self.errors("has_collection", collection):
            return bool(self._client.has_collection(collection, timeout=self._timeout))

    def _vector_index(self, collection: str) -> dict[str, Any]:
        with self.errors("describe_index", collection):
            names = self._client.list_indexes(collection, field_name="vector", timeout=self._timeout)
            if not names:
                return {}
            return dict(self._client.describe_index(collection, names[0], timeout=self._timeout))

    def index_type(self, collection: str) -> str | None:
        """The collection's vector index type as the adapter names it (None when unknown or unindexed)."""
        found = str(self._vector_index(collection).get("index_type", "")).upper()
        return found if found in INDEX_TYPES else None

    def wait_for_index(self, collection: str, timeout: float = INDEX_BUILD_TIMEOUT) -> bool:
        """Wait until Milvus has indexed every sealed row (it builds in the background after a flush).

        Searches are correct before that (unindexed segments are scanned), only slower, so a timeout is logged,
        not raised."""
        deadline = time.monotonic() + timeout
        while True:
            info = self._vector_index(collection)
            if info.get("state", "Finished") == "Finished" and not int(info.get("pending_index_rows", 0) or 0):
                return True
            if time.monotonic() >= deadline:
                logger.warning("Milvus is still building the index of %s after %.0f s", collection, timeout)
                return False
            time.sleep(0.5)

    def close(self) -> None:
        with self.errors("close", ""):
            self._client.close()


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


def _read_set(directory: Path, dim: int, rows: int) -> ExactIndex:
    try:
        exact = ExactIndex.load(directory, dtype="float32")  # Milvus stores float32 whatever ingest kept
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
