"""`skbqa ingest`: bundle → embedded index, written aside and renamed into place only when complete.

An interrupted or failed ingest leaves any previous index at the target untouched (the work happens in a
sibling temp directory, `.NAME.ingest-PID@HOST-*`, that is removed on error). A killed ingest cannot remove it:
the next ingest does (`stores.index.recover_index`), and restores the previous index when the kill fell between
the two renames of the swap. The manifest records the size and CRC-32 of every file, which opening checks.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from skbqa.common.errors import IndexStoreError
from skbqa.common.resources import peak_rss_mib
from skbqa.ingest.documents import document, embedded_texts
from skbqa.ingest.precomputed import PrecomputedVectors
from skbqa.ingest.vector_sets import write_vector_set
from skbqa.models.index_encoder import save_index_encoder
from skbqa.query.encoder import Encoder
from skbqa.skb.loaders import load_skb
from skbqa.skb.model import SKB
from skbqa.stores.graph.csr import CsrGraph
from skbqa.stores.index import (
    EMBEDDING_SETS,
    FILES,
    FORMAT_VERSION,
    MANIFEST,
    file_checksums,
    old_path,
    read_manifest,
    recover_index,
    work_prefix,
)
from skbqa.stores.lexicon import LEXICON_FILE, NameLexicon
from skbqa.stores.nodes import NodeTable
from skbqa.stores.text.bm25 import Bm25Index
from skbqa.stores.writer_lock import WriterLock

logger = logging.getLogger(__name__)

ANN_CHOICES = ("auto", "always", "never")
BM25_CHUNK = 50_000  # documents tokenised per step
ENCODE_CHUNK = 200_000  # texts built and encoded per step


@dataclass
class IngestReport:
    directory: Path
    nodes: int
    edges: int
    seconds: dict[str, float] = field(default_factory=dict)
    texts_encoded: int = 0
    peak_rss_mib: float = 0.0
    # the KB version of the index this ingest replaced, when changes had been applied to it (they are gone unless
    # the bundle has them)
    replaced_version: int = 0

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
    precomputed: PrecomputedVectors | None = None,
    ann: str = "auto",
) -> IngestReport:
    """Build the index at `target` from `bundle`.

    `precomputed`: take the vectors saved beside the bundle instead of encoding (their encoder must be `encoder`).
    `ann`: "auto" builds the approximate index (`stores.vectors.ann`) for sets of at least ANN_MIN_ROWS vectors when
    faiss is installed, "always" / "never" force the choice.
    """
    bundle, target = Path(bundle), Path(target)
    if ann not in ANN_CHOICES:
        raise ValueError(f"ann must be one of {', '.join(ANN_CHOICES)}, got {ann!r}")
    if precomputed is not None and precomputed.encoder.name != encoder.name:
        raise IndexStoreError(
            f"the precomputed vectors were made by {precomputed.encoder.name!r}, not by {encoder.name!r}"
        )
    recover_index(target, clean=True)  # what killed ingests left: the previous index aside, work directories
    previous = _refuse_other_model(target, encoder, force)
    # a server or updater applying changes to the index would write its knowledge base over this one at its next
    # fold, and the changes it acknowledged meanwhile would be lost: the ingest waits for no one, it refuses
    lock = WriterLock(target)
    if previous is not None:
        lock.take(
            f"another process is changing {target} (a server or updater with live updates?): "
            "stop it before re-ingesting, or choose another --index"
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=work_prefix(target), dir=target.parent))
    try:
        report = _build(bundle, work, encoder, vector_dtype, progress, precomputed, ann)
        swap_into_place(work, target)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    finally:
        lock.release()
    report.directory = target
    report.replaced_version = int((previous or {}).get("kb_version", 0))
    return report


def _refuse_other_model(target: Path, encoder: Encoder, force: bool) -> dict[str, Any] | None:
    """Re-ingesting over an index built with another model is refused unless forced: callers may rely on it.
    Returns the manifest of the index being replaced, if there is a readable one."""
    if not (target / MANIFEST).is_file():
        return None
    try:
        previous = read_manifest(target)
    except IndexStoreError:
        return None  # an unreadable old index is simply replaced
    old = previous.get("encoder", {}).get("name")
    if old != encoder.name and not force:
        raise IndexStoreError(
            f"{target} was built with encoder {old!r}, this run uses {encoder.name!r}; "
            "pass --force to replace it or choose another --index"
        )
    return previous


def _build(
    bundle: Path,
    work: Path,
    encoder: Encoder,
    vector_dtype: str,
    progress: bool,
    precomputed: PrecomputedVectors | None,
    ann: str,
) -> IngestReport:
    started = time.perf_counter()
    skb = load_skb(bundle)
    seconds = {"load": round(time.perf_counter() - started, 3)}
    nodes = NodeTable.from_skb(skb)
    if precomputed is not None:
        precomputed.check(nodes)  # before any work: vectors made for other nodes are refused at once

    def vectors_for(name: str, nodes: NodeTable, graph: CsrGraph) -> tuple[np.ndarray, int]:
        if precomputed is not None:
            return precomputed.array(name), 0
        return _encode_set(name, nodes, graph, encoder, vector_dtype, progress, seconds), len(nodes)

    provenance: dict[str, Any] = {
        "bundle": {"path": str(bundle.resolve()), "sha256": bundle_checksum(bundle)},
        "kb_version": 0,
        "vectors": {
            "source": "encoder" if precomputed is None else "precomputed",
            **({"precomputed": _precomputed_note(precomputed)} if precomputed is not None else {}),
        },
    }
    return build_snapshot(
        skb,
        work,
        encoder,
        vector_dtype=vector_dtype,
        progress=progress,
        ann=ann,
        vectors_for=vectors_for,
        provenance=provenance,
        seconds=seconds,
        started=started,
    )


VectorsFor = Callable[[str, NodeTable, CsrGraph], tuple[np.ndarray, int]]


def build_snapshot(
    skb: SKB,
    work: Path,
    encoder: Encoder,
    *,
    vector_dtype: str,
    progress: bool,
    ann: str | Mapping[str, str],
    vectors_for: VectorsFor,
    provenance: dict[str, Any],
    seconds: dict[str, float] | None = None,
    started: float | None = None,
    reuse: Mapping[str, Path] | None = None,
) -> IngestReport:
    """Write every store of an index for `skb` into `work`: what ingest does after loading the bundle, and what
    an update does for the changed knowledge base. `vectors_for(set, nodes, graph)` gives a set's vectors (row
    per node position) and how many texts it encoded; `ann` may differ per set; `provenance` goes into the
    manifest (bundle, kb_version, where the vectors came from). `reuse`: "lexicon" (file) and "bm25"
    (directory) of a snapshot whose nodes build the same ones, copied instead of built."""
    reuse = reuse or {}
    seconds = {} if seconds is None else seconds
    started = time.perf_counter() if started is None else started

    def lap(stage: str, since: float) -> float:
        now = time.perf_counter()
        seconds[stage] = round(now - since, 3)
        logger.info("index: %s done in %.1f s", stage, now - since)
        return now

    t = time.perf_counter()
    nodes = NodeTable.from_skb(skb)
    graph = CsrGraph.build(skb.num_nodes, skb.schema.edge_names, skb.edge_src, skb.edge_dst, skb.edge_type)
    num_edges = skb.num_edges
    nodes_by_type = {nt.name: int((skb.node_type == i).sum()) for i, nt in enumerate(skb.schema.node_types)}
    skb.edge_src = skb.edge_dst = skb.edge_type = np.zeros(0, np.int32)  # the CSR holds them now
    nodes.save(work / "nodes")
    graph.save(work / "graph")
    t = lap("graph", t)
    # Every process that opens the index needs the name lexicon; building it costs seconds per million names.
    if "lexicon" in reuse:
        shutil.copy2(reuse["lexicon"], work / "nodes" / LEXICON_FILE)
    else:
        NameLexicon.build_from(nodes).save(work / "nodes" / LEXICON_FILE, nodes=len(nodes))
    t = lap("lexicon", t)
    if "bm25" in reuse:
        shutil.copytree(reuse["bm25"], work / "bm25")
    else:
        chunks = (
            [document(nodes, i) for i in range(lo, min(lo + BM25_CHUNK, len(nodes)))]
            for lo in range(0, len(nodes), BM25_CHUNK)
        )
        Bm25Index.build_chunks(chunks, nodes.types, progress=progress).save(work / "bm25")
    t = lap("bm25", t)
    keys = np.arange(len(nodes), dtype=np.int64)
    encoded = 0
    vector_sets: dict[str, dict[str, Any]] = {}
    for name in EMBEDDING_SETS:
        t0 = time.perf_counter()
        vectors, texts = vectors_for(name, nodes, graph)
        encoded += texts
        t1 = time.perf_counter()
        set_ann = ann if isinstance(ann, str) else ann.get(name, "auto")
        vector_sets[name] = write_vector_set(
            work / "vectors" / name, keys, nodes.types, vectors, dtype=vector_dtype, ann=set_ann
        )
        seconds[f"index_{name}"] = round(time.perf_counter() - t1, 3)
        seconds["vectors"] = round(seconds.get("vectors", 0.0) + t1 - t0, 3)
        del vectors
    save_index_encoder(encoder, work)  # an encoder that is data (the static one) travels with the index
    seconds["total"] = round(time.perf_counter() - started, 3)
    report = IngestReport(work, skb.num_nodes, num_edges, seconds, encoded, peak_rss_mib())
    manifest: dict[str, Any] = {
        "format_version": FORMAT_VERSION,
        "created_unix": int(time.time()),
        **provenance,
        "schema_name": skb.schema.name,
        "encoder": {"name": encoder.name, "dim": encoder.dim},
        "vector_dtype": vector_dtype,
        "vectors": {**provenance.get("vectors", {}), "sets": vector_sets},
        "counts": {
            "nodes": skb.num_nodes,
            "edges": num_edges,
            "nodes_by_type": nodes_by_type,
            "texts_encoded": encoded,
        },
        "seconds": seconds,
        "encode_texts_per_second": round(report.encode_rate, 1),
        "peak_rss_mib": round(report.peak_rss_mib, 1),
        "disk_bytes": disk_usage(work),
        FILES: file_checksums(work),  # every file but the manifest, checked when the index is opened
    }
    (work / MANIFEST).write_text(json.dumps(manifest, indent=2))
    return report


def _encode_set(
    name: str,
    nodes: NodeTable,
    graph: CsrGraph,
    encoder: Encoder,
    vector_dtype: str,
    progress: bool,
    seconds: dict[str, float],
) -> np.ndarray:
    """One embedding set, built and encoded in chunks (the texts of a million nodes never exist at once)."""
    rows = len(nodes)
    out = np.zeros((rows, encoder.dim), np.dtype(vector_dtype))
    for lo in range(0, rows, ENCODE_CHUNK):
        hi = min(lo + ENCODE_CHUNK, rows)
        t0 = time.perf_counter()
        texts = embedded_texts(name, nodes, graph, np.arange(lo, hi, dtype=np.int64))
        t1 = time.perf_counter()
        label = f"embed {name}" + (f" {lo:,}-{hi:,} of {rows:,}" if rows > ENCODE_CHUNK else "")
        out[lo:hi] = encoder.encode(texts, progress=label if progress else None)
        seconds["documents"] = round(seconds.get("documents", 0.0) + t1 - t0, 3)
        seconds["encode"] = round(seconds.get("encode", 0.0) + time.perf_counter() - t1, 3)
    return out


def _precomputed_note(precomputed: PrecomputedVectors) -> dict[str, Any]:
    m = precomputed.manifest
    return {
        "path": str(precomputed.directory.resolve()),
        "format": m.get("format"),
        "documents_version": m.get("documents_version"),
        "encoder_texts_per_second": m.get("encoder_texts_per_second"),
    }


def disk_usage(directory: Path) -> dict[str, int]:
    """Bytes on disk per top-level entry of an index directory (the memory report's starting point)."""
    out: dict[str, int] = {}
    for entry in sorted(directory.iterdir()):
        files = [entry] if entry.is_file() else [p for p in entry.rglob("*") if p.is_file()]
        out[entry.name] = sum(p.stat().st_size for p in files)
    return out


def swap_into_place(work: Path, target: Path) -> None:
    """Rename the finished index over the target; the old one is moved aside first and removed after."""
    old: Path | None = None
    if target.exists():
        old = old_path(target)  # a kill before the next rename leaves it here; recover_index renames it back
        os.replace(target, old)
    try:
        os.replace(work, target)
    except BaseException as exc:
        if old is not None:
            with contextlib.suppress(OSError):  # a reader's recover_index may have renamed it back already
                os.replace(old, target)
        if not isinstance(exc, OSError):
            raise
        kept = "the previous index is kept" if target.exists() else f"the previous index is in {old}"
        raise IndexStoreError(f"{target}: cannot rename the new index into place ({exc}); {kept}") from None
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
