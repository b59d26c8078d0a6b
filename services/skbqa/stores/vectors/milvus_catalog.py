"""Milvus collections for an index's embedding sets: their names, their index type, and a metadata client.

Collections are named `<prefix>_<schema>_<identity>_<set>`, where the identity hashes the manifest's bundle
checksum, encoder, dimension, vector dtype and build time: a re-ingested index gets fresh collections and can
never be served the vectors of an older build (drop the old ones with `MilvusClient.drop_collection`). A live
update's snapshot at knowledge-base version N > 0 gets `<identity>_vN`, where the identity is its ingest's (the
snapshot keeps the ingest's time as `ingested_unix`): every version has collections of its own (rows are keyed
by node position, which a change renumbers), and all versions of one index share the stem `<prefix>_<schema>_
<identity>` so the writer can find and drop the old ones (`milvus_versions`). Version 0 keeps the name it had.

Index type: `AUTO` picks FLAT up to `AUTO_FLAT_MAX_ROWS` rows and HNSW above. FLAT is exact, so it returns the
same hits and scores as `ExactIndex`, and a filtered FLAT search always returns min(k, matching) hits, which
HNSW does not promise. A brute-force scan costs ~10 ms per 100k 384-d rows on one core, so up to 200k rows (every
STaRK-sized SKB) FLAT stays around 20 ms a query; beyond that HNSW (approximate, ~ms at any size) is the better
trade.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from skbqa.common.errors import BackendUnavailableError, IndexStoreError
from skbqa.stores.index import EMBEDDING_SETS
from skbqa.stores.vectors.milvus_collection import INDEX_TYPES, _display, _is_local, _pymilvus

logger = logging.getLogger(__name__)

AUTO = "AUTO"
AUTO_FLAT_MAX_ROWS = 200_000  # see the module docstring: exact up to here, HNSW above
AUTO_ANN = "HNSW"
INDEX_BUILD_TIMEOUT = 600.0  # seconds to wait for Milvus to finish building an ANN index after the flush
_UNSAFE = re.compile(r"[^A-Za-z0-9_]")


# -- names and choices ------------------------------------------------------------------------------------------


def index_identity(manifest: dict[str, Any]) -> str:
    """12 hex digits that change whenever the index's vectors could: new bundle, encoder, dtype or build; then
    `_v<N>` for a live update's snapshot at knowledge-base version N > 0 (the digits stay its ingest's)."""
    version = int(manifest.get("kb_version", 0))
    created = manifest.get("created_unix", 0)
    if version:  # a snapshot's own build time changes with every fold; its lineage is its ingest's
        created = manifest.get("ingested_unix", created)
    fields = {
        "bundle": manifest.get("bundle", {}).get("sha256", ""),
        "encoder": manifest.get("encoder", {}).get("name", ""),
        "dim": manifest.get("encoder", {}).get("dim", 0),
        "dtype": manifest.get("vector_dtype", ""),
        "created": created,
    }
    digits = hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()[:12]
    return f"{digits}_v{version}" if version else digits


def collection_stem(manifest: dict[str, Any], prefix: str = "skbqa") -> str:
    """`<prefix>_<schema>_<identity digits>`: what every knowledge-base version of one index's names begin with."""
    schema = _UNSAFE.sub("_", str(manifest.get("schema_name", "")))[:64]
    stem = "_".join(p for p in (_UNSAFE.sub("_", prefix), schema, index_identity(manifest).split("_v")[0]) if p)
    return stem if re.match(r"[A-Za-z_]", stem) else "_" + stem  # a prefix starting with a digit


def collection_name(manifest: dict[str, Any], embedding_set: str, prefix: str = "skbqa") -> str:
    """`<prefix>_<schema>_<identity>_<set>`, reduced to what Milvus accepts ([A-Za-z_][A-Za-z0-9_]*, ≤ 255)."""
    version = int(manifest.get("kb_version", 0))
    parts = [collection_stem(manifest, prefix), f"v{version}" if version else "", _UNSAFE.sub("_", embedding_set)]
    return "_".join(p for p in parts if p)[:255]


def collection_version(name: str, stem: str) -> int | None:
    """The knowledge-base version of collection `name` if it is one of the index's with `stem`, else None."""
    sets = "|".join(re.escape(s) for s in EMBEDDING_SETS)
    found = re.fullmatch(rf"{re.escape(stem)}(?:_v(\d+))?_(?:{sets})", name)
    return None if found is None else int(found.group(1) or 0)


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

    def names(self) -> list[str]:
        with self.errors("list_collections", ""):
            return [str(name) for name in self._client.list_collections(timeout=self._timeout)]

    def drop(self, collection: str) -> None:
        with self.errors("drop_collection", collection):
            self._client.drop_collection(collection, timeout=self._timeout)

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
