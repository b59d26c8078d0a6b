"""Precomputed vectors saved beside a bundle (`skbqa synth --vectors`), read by `skbqa ingest --precomputed-vectors`.

Scale runs (1–2M nodes, three texts each) cannot wait hours for MiniLM on 2 cores, so the vectors are made once
by the static encoder distilled from MiniLM (`models.static_encoder`: same tokenizer and 128-token cap, MiniLM's
vector per WordPiece token, weighted mean) over exactly the texts ingest would embed (`ingest.documents`). The
encoder is saved with them: questions are embedded by the same function at query time, so `vss` and `af` search a
consistent space. MiniLM's own throughput is measured separately (bench/scale.py).

Layout (`BUNDLE/vectors/`):
```
manifest.json        format, encoder name, documents version, dim, dtype, rows, timings
ids.npy              node ids in position order (int64): what the rows are aligned to
{name,document,relations}.npy   (rows, dim) float16, unit rows
encoder.npz          the static encoder (token table and SIF weights)
```
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from skbqa.common.errors import IndexStoreError
from skbqa.ingest.documents import DOCUMENTS_VERSION, embedded_texts
from skbqa.models.static_encoder import StaticEncoder
from skbqa.stores.graph.csr import CsrGraph
from skbqa.stores.nodes import NodeTable

logger = logging.getLogger(__name__)

FORMAT = "skbqa-precomputed-vectors/1"
DIRECTORY = "vectors"
SETS = ("name", "document", "relations")  # = stores.index.EMBEDDING_SETS
ENCODER_FILE = "encoder.npz"
FIT_SAMPLE = 20_000  # nodes whose three texts give the encoder's token frequencies
CHUNK = 50_000  # texts built and encoded per step


@dataclass
class PrecomputedVectors:
    directory: Path
    manifest: dict[str, Any]
    encoder: StaticEncoder

    def array(self, set_name: str) -> np.ndarray:
        """(rows, dim) float16, memory-mapped (read once by ingest, never held whole)."""
        return np.load(self.directory / f"{set_name}.npy", mmap_mode="r")

    def check(self, nodes: NodeTable) -> None:
        """Refuse vectors that were not made for these nodes and these documents."""
        ids = np.load(self.directory / "ids.npy", mmap_mode="r")
        if ids.shape != nodes.ids.shape or not np.array_equal(ids, nodes.ids):
            raise IndexStoreError(f"{self.directory}: the vectors are for other nodes than the bundle's")
        if self.manifest.get("documents_version") != DOCUMENTS_VERSION:
            raise IndexStoreError(
                f"{self.directory}: vectors made for documents version {self.manifest.get('documents_version')}, "
                f"this skbqa embeds version {DOCUMENTS_VERSION}; regenerate them (skbqa synth --vectors)"
            )
        for name in SETS:
            shape = self.array(name).shape
            if shape != (len(nodes), self.encoder.dim):
                raise IndexStoreError(f"{self.directory}/{name}.npy has shape {shape}, expected {len(nodes)} rows")


def open_precomputed(path: Path) -> PrecomputedVectors:
    """`path` is the vectors directory or the bundle holding it."""
    path = Path(path)
    directory = path / DIRECTORY if (path / DIRECTORY / "manifest.json").is_file() else path
    try:
        manifest = json.loads((directory / "manifest.json").read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise IndexStoreError(
            f"{path}: no precomputed vectors ({exc}); make them with skbqa synth --vectors"
        ) from None
    if manifest.get("format") != FORMAT:
        raise IndexStoreError(f"{directory}: unknown precomputed vectors format {manifest.get('format')!r}")
    encoder = StaticEncoder.load(directory / ENCODER_FILE)
    if encoder.name != manifest.get("encoder", {}).get("name"):
        raise IndexStoreError(f"{directory}: encoder file does not match the manifest")
    return PrecomputedVectors(directory, manifest, encoder)


def write_precomputed(bundle: Path, *, seed: int = 0, progress: bool = False) -> dict[str, Any]:
    """Embed the bundle's three text sets with a static encoder fitted on it; returns the manifest written."""
    from skbqa.skb.loaders import load_skb

    started = time.perf_counter()
    skb = load_skb(bundle)
    nodes = NodeTable.from_skb(skb)
    graph = CsrGraph.build(skb.num_nodes, skb.schema.edge_names, skb.edge_src, skb.edge_dst, skb.edge_type)
    skb.edge_src = skb.edge_dst = skb.edge_type = np.zeros(0, np.int32)  # the CSR holds them now
    loaded = time.perf_counter() - started
    rows = len(nodes)
    rng = np.random.default_rng(seed)
    sample = np.sort(rng.choice(rows, min(rows, FIT_SAMPLE), replace=False))
    fit_texts = [t for name in SETS for t in embedded_texts(name, nodes, graph, sample)]
    encoder = StaticEncoder.fit(fit_texts)
    directory = bundle / DIRECTORY
    directory.mkdir(parents=True, exist_ok=True)
    np.save(directory / "ids.npy", nodes.ids)
    encoder.save(directory / ENCODER_FILE)
    seconds: dict[str, float] = {"load": round(loaded, 3)}
    for name in SETS:
        out = np.lib.format.open_memmap(
            directory / f"{name}.npy.tmp", mode="w+", dtype=np.float16, shape=(rows, encoder.dim)
        )
        texts_seconds = encode_seconds = 0.0
        for lo in range(0, rows, CHUNK):
            t0 = time.perf_counter()
            texts = embedded_texts(name, nodes, graph, np.arange(lo, min(lo + CHUNK, rows), dtype=np.int64))
            t1 = time.perf_counter()
            out[lo : lo + len(texts)] = encoder.encode(texts)
            encode_seconds += time.perf_counter() - t1
            texts_seconds += t1 - t0
            if progress:
                logger.info("vectors %s: %d / %d", name, lo + len(texts), rows)
        out.flush()
        del out
        (directory / f"{name}.npy.tmp").replace(directory / f"{name}.npy")
        seconds[f"{name}_texts"] = round(texts_seconds, 3)
        seconds[f"{name}_encode"] = round(encode_seconds, 3)
    encoded = sum(seconds[f"{n}_encode"] for n in SETS)
    manifest = {
        "format": FORMAT,
        "encoder": {"name": encoder.name, "dim": encoder.dim, "kind": "static"},
        "documents_version": DOCUMENTS_VERSION,
        "dtype": "float16",
        "rows": rows,
        "sets": list(SETS),
        "fit_sample_nodes": int(sample.size),
        "seconds": seconds | {"total": round(time.perf_counter() - started, 3)},
        "encoder_texts_per_second": round(3 * rows / max(encoded, 1e-9), 1),
    }
    (directory / "manifest.json").write_text(json.dumps(manifest, indent=2))
    return manifest
