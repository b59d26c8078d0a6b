"""The on-disk layout of an embedded index and the stores it holds.

```
DIR/manifest.json          model, dimensions, counts, bundle checksum, timings
DIR/nodes/                 node table (schema, ids, types, names, texts, attrs)
DIR/graph/                 CSR adjacency per edge type and direction
DIR/bm25/                  BM25 over node documents
DIR/vectors/{name,document,relations}/   one vector index per embedding set (exact, or ANN for large sets)
DIR/encoder/               the encoder itself, when it is data (the static encoder of precomputed vectors)
```
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skbqa.common.errors import IndexStoreError
from skbqa.stores.graph.csr import CsrGraph
from skbqa.stores.nodes import NodeTable
from skbqa.stores.text.bm25 import Bm25Index
from skbqa.stores.vectors.exact import ExactIndex

FORMAT_VERSION = 1
MANIFEST = "manifest.json"
EMBEDDING_SETS = ("name", "document", "relations")


@dataclass
class IndexStores:
    directory: Path
    manifest: dict[str, Any]
    nodes: NodeTable
    graph: CsrGraph
    bm25: Bm25Index
    vectors: dict[str, ExactIndex]


def read_manifest(directory: Path) -> dict[str, Any]:
    path = directory / MANIFEST
    if not path.is_file():
        raise IndexStoreError(
            f"{directory} is not an skbqa index (no {MANIFEST}); build one with: skbqa ingest BUNDLE --index {directory}",
            directory=str(directory),
        )
    try:
        manifest = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise IndexStoreError(f"{path}: corrupt manifest ({exc.msg})") from None
    if manifest.get("format_version") != FORMAT_VERSION:
        raise IndexStoreError(
            f"{directory} has index format {manifest.get('format_version')}, this skbqa reads {FORMAT_VERSION}; "
            "re-run skbqa ingest"
        )
    return manifest


def load_vector_set(directory: Path, dtype: str | None = None) -> ExactIndex:
    """The set as ingest wrote it: the ANN adapter (an `ExactIndex` subclass) for large sets, else exact."""
    from skbqa.stores.vectors.ann import AnnIndex, is_ann_set

    if is_ann_set(directory):
        return AnnIndex.load(directory)
    return ExactIndex.load(directory, dtype=dtype)


def open_index(directory: Path | str, *, vector_dtype: str | None = None) -> IndexStores:
    directory = Path(directory)
    manifest = read_manifest(directory)
    try:
        nodes = NodeTable.load(directory / "nodes")
        graph = CsrGraph.load(directory / "graph")
        bm25 = Bm25Index.load(directory / "bm25")
        vectors = {name: load_vector_set(directory / "vectors" / name, vector_dtype) for name in EMBEDDING_SETS}
    except (OSError, KeyError, ValueError) as exc:
        raise IndexStoreError(
            f"{directory}: index is incomplete or damaged ({exc}); re-run skbqa ingest"
        ) from None
    return IndexStores(directory, manifest, nodes, graph, bm25, vectors)
