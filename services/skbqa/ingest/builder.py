"""`skbqa ingest`: bundle → embedded index, written aside and renamed into place only when complete.

An interrupted or failed ingest leaves any previous index at the target untouched (the work happens in a
sibling temp directory that is removed on error).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from skbqa.common.errors import IndexStoreError
from skbqa.common.resources import peak_rss_mib
from skbqa.ingest.documents import documents, embedding_documents, relation_documents
from skbqa.models.encoder import Encoder
from skbqa.skb.loaders import load_skb
from skbqa.stores.graph.csr import CsrGraph
from skbqa.stores.index import FORMAT_VERSION, MANIFEST, read_manifest
from skbqa.stores.nodes import NodeTable
from skbqa.stores.text.bm25 import Bm25Index
from skbqa.stores.vectors.exact import ExactIndex

logger = logging.getLogger(__name__)


@dataclass
class IngestReport:
    directory: Path
    nodes: int
    edges: int
    seconds: dict[str, float] = field(default_factory=dict)
    texts_encoded: int = 0
    peak_rss_mib: float = 0.0

    @property
    def encode_rate(self) -> float:
        return self.texts_encoded / max(self.seconds.get("encode", 0.0), 1e-9)


def bundle_checksum(bundle: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(p for p in bundle.rglob("*") if p.is_file()):
        digest.update(path.relative_to(bundle).as_posix().encode())
        with path.open("rb") as handle:
            while chunk := handle.read(1 << 20):
                digest.update(chunk)
    return digest.hexdigest()


def ingest(
    bundle: Path,
    target: Path,
    encoder: Encoder,
    *,
    vector_dtype: str = "float32",
    force: bool = False,
    progress: bool = True,
) -> IngestReport:
    bundle, target = Path(bundle), Path(target)
    _refuse_other_model(target, encoder, force)
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{target.name}.ingest-", dir=target.parent))
    try:
        report = _build(bundle, work, encoder, vector_dtype, progress)
        _swap_into_place(work, target)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    report.directory = target
    return report


def _refuse_other_model(target: Path, encoder: Encoder, force: bool) -> None:
    """Re-ingesting over an index built with another model is refused unless forced: callers may rely on it."""
    if force or not (target / MANIFEST).is_file():
        return
    try:
        previous = read_manifest(target)
    except IndexStoreError:
        return  # an unreadable old index is simply replaced
    old = previous.get("encoder", {}).get("name")
    if old != encoder.name:
        raise IndexStoreError(
            f"{target} was built with encoder {old!r}, this run uses {encoder.name!r}; "
            "pass --force to replace it or choose another --index"
        )


def _build(bundle: Path, work: Path, encoder: Encoder, vector_dtype: str, progress: bool) -> IngestReport:
    seconds: dict[str, float] = {}
    started = time.perf_counter()

    def lap(stage: str, since: float) -> float:
        now = time.perf_counter()
        seconds[stage] = round(now - since, 3)
        logger.info("ingest: %s done in %.1f s", stage, now - since)
        return now

    t = time.perf_counter()
    skb = load_skb(bundle)
    t = lap("load", t)
    nodes = NodeTable.from_skb(skb)
    graph = CsrGraph.build(skb.num_nodes, skb.schema.edge_names, skb.edge_src, skb.edge_dst, skb.edge_type)
    nodes.save(work / "nodes")
    graph.save(work / "graph")
    t = lap("graph", t)
    bm25 = Bm25Index.build(documents(nodes), nodes.types, progress=progress)
    bm25.save(work / "bm25")
    t = lap("bm25", t)
    texts = {
        "name": nodes.names,
        "document": embedding_documents(nodes),
        "relations": relation_documents(nodes, graph),
    }
    t = lap("documents", t)
    keys = np.arange(len(nodes), dtype=np.int64)
    encoded = 0
    for name, batch in texts.items():
        vectors = encoder.encode(batch, progress=f"embed {name}" if progress else None)
        index = ExactIndex(encoder.dim, dtype=vector_dtype)
        index.add(keys, vectors, nodes.types)
        index.save(work / "vectors" / name)
        encoded += len(batch)
    t = lap("encode", t)
    seconds["total"] = round(time.perf_counter() - started, 3)
    report = IngestReport(work, skb.num_nodes, skb.num_edges, seconds, encoded, peak_rss_mib())
    manifest: dict[str, Any] = {
        "format_version": FORMAT_VERSION,
        "created_unix": int(time.time()),
        "bundle": {"path": str(bundle.resolve()), "sha256": bundle_checksum(bundle)},
        "schema_name": skb.schema.name,
        "encoder": {"name": encoder.name, "dim": encoder.dim},
        "vector_dtype": vector_dtype,
        "counts": {
            "nodes": skb.num_nodes,
            "edges": skb.num_edges,
            "nodes_by_type": {
                t.name: int((skb.node_type == i).sum()) for i, t in enumerate(skb.schema.node_types)
            },
            "texts_encoded": encoded,
        },
        "seconds": seconds,
        "encode_texts_per_second": round(report.encode_rate, 1),
        "peak_rss_mib": round(report.peak_rss_mib, 1),
    }
    (work / MANIFEST).write_text(json.dumps(manifest, indent=2))
    return report


def _swap_into_place(work: Path, target: Path) -> None:
    """Rename the finished index over the target; the old one is moved aside first and removed after."""
    old: Path | None = None
    if target.exists():
        old = target.with_name(f".{target.name}.old-{os.getpid()}")
        os.replace(target, old)
    try:
        os.replace(work, target)
    except BaseException:
        if old is not None:
            os.replace(old, target)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
