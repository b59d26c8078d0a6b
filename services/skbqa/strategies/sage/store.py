"""The SAGE similarity graph on disk and in memory: symmetric CSR adjacency over node positions, with per-edge
metadata (which signals made the edge, each signal's score, the rarest shared entity).

```
INDEX_DIR/sage/graph.npz   indptr, indices, signals (bitmask), scores (edges × signals), entity, rich
INDEX_DIR/sage/sage.json   build settings, thresholds, statistics, and the index it was built for
```
Every undirected edge is stored in both directions, so a node's neighbours are one contiguous run.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from skbqa.common.errors import IndexStoreError

SAGE_DIR = "sage"
_ARRAYS = "graph.npz"
_META = "sage.json"

# Signals, in score-column order; structure (an existing KG edge) has no score column.
SIMILARITY_SIGNALS = ("name", "content", "entity")
SIGNALS = (*SIMILARITY_SIGNALS, "structure")
BITS = {name: 1 << i for i, name in enumerate(SIGNALS)}


def signal_names(mask: int) -> list[str]:
    return [name for name in SIGNALS if mask & BITS[name]]


@dataclass
class Expansion:
    """First-hop neighbours of some seeds: one row per (seed, neighbour) edge."""

    seeds: np.ndarray  # seed position of the edge
    neighbours: np.ndarray  # neighbour position
    edges: np.ndarray  # index into the graph's edge arrays


class SageGraph:
    def __init__(
        self,
        indptr: np.ndarray,
        indices: np.ndarray,
        signals: np.ndarray,
        scores: np.ndarray,
        entity: np.ndarray,
        rich: np.ndarray,
        meta: dict[str, Any],
    ) -> None:
        self.indptr = indptr
        self.indices = indices
        self.signals = signals
        self.scores = scores
        self.entity = entity
        self.rich = rich
        self.meta = meta

    @classmethod
    def from_pairs(
        cls,
        num_nodes: int,
        pairs: np.ndarray,
        signals: np.ndarray,
        scores: np.ndarray,
        entity: np.ndarray,
        rich: np.ndarray,
        meta: dict[str, Any],
    ) -> SageGraph:
        """Build from undirected (a, b) position pairs with a < b, each listed once."""
        src = np.concatenate([pairs[:, 0], pairs[:, 1]])
        dst = np.concatenate([pairs[:, 1], pairs[:, 0]])
        order = np.lexsort((dst, src))
        both = np.concatenate([np.arange(pairs.shape[0])] * 2)[order]
        indptr = np.zeros(num_nodes + 1, np.int64)
        np.cumsum(np.bincount(src, minlength=num_nodes), out=indptr[1:])
        return cls(
            indptr,
            dst[order].astype(np.int32),
            signals[both].astype(np.uint8),
            scores[both].astype(np.float32),
            entity[both].astype(np.int32),
            rich.astype(bool),
            meta,
        )

    @property
    def num_nodes(self) -> int:
        return int(self.indptr.shape[0] - 1)

    @property
    def num_edges(self) -> int:
        """Undirected edges (each is stored twice)."""
        return int(self.indices.shape[0] // 2)

    def degree(self, nodes: np.ndarray | None = None) -> np.ndarray:
        degrees = np.diff(self.indptr)
        return degrees if nodes is None else degrees[np.asarray(nodes, np.int64)]

    def expand(self, seeds: np.ndarray) -> Expansion:
        """Every edge out of the seeds, vectorised: a gather over indptr and one repeat, no loop over seeds."""
        seeds = np.asarray(seeds, np.int64)
        starts = self.indptr[seeds]
        lengths = self.indptr[seeds + 1] - starts
        total = int(lengths.sum())
        run_starts = np.cumsum(lengths) - lengths
        edges = np.arange(total, dtype=np.int64) - np.repeat(run_starts - starts, lengths)
        return Expansion(np.repeat(seeds, lengths), self.indices[edges].astype(np.int64), edges)

    def save(self, index_dir: Path) -> Path:
        """Write INDEX_DIR/sage atomically (a reader never sees half a graph)."""
        target = Path(index_dir) / SAGE_DIR
        work = Path(tempfile.mkdtemp(prefix=".sage-", dir=index_dir))
        try:
            np.savez(
                work / _ARRAYS,
                indptr=self.indptr,
                indices=self.indices,
                signals=self.signals,
                scores=self.scores,
                entity=self.entity,
                rich=self.rich,
            )
            (work / _META).write_text(json.dumps(self.meta, indent=1))
            if target.exists():
                shutil.rmtree(target)
            work.rename(target)
        except BaseException:
            shutil.rmtree(work, ignore_errors=True)
            raise
        return target

    @classmethod
    def load(cls, index_dir: Path) -> SageGraph:
        directory = Path(index_dir) / SAGE_DIR
        if not (directory / _ARRAYS).is_file():
            raise IndexStoreError(
                f"{index_dir} has no SAGE graph; build it with: skbqa build-sage --index {index_dir}",
                directory=str(index_dir),
            )
        try:
            meta = json.loads((directory / _META).read_text())
            with np.load(directory / _ARRAYS) as data:
                arrays = {k: data[k] for k in data.files}
            return cls(
                arrays["indptr"],
                arrays["indices"],
                arrays["signals"],
                arrays["scores"],
                arrays["entity"],
                arrays["rich"],
                meta,
            )
        except (OSError, KeyError, ValueError) as exc:
            raise IndexStoreError(
                f"{directory}: SAGE graph is incomplete or damaged ({exc}); re-run skbqa build-sage --index {index_dir}"
            ) from None

    def check_built_for(self, manifest: dict[str, Any], num_nodes: int) -> None:
        """Refuse a graph built for another version of the index (positions would point at other nodes)."""
        built_for = self.meta.get("index", {})
        if self.num_nodes != num_nodes or built_for.get("created_unix") != manifest.get("created_unix"):
            raise IndexStoreError(
                "the SAGE graph was built for another version of this index; re-run skbqa build-sage --index DIR"
            )


def degree_summary(degrees: np.ndarray) -> dict[str, float]:
    if degrees.size == 0:
        return {"min": 0, "median": 0, "mean": 0.0, "p95": 0, "max": 0, "isolated": 0}
    return {
        "min": int(degrees.min()),
        "median": float(np.median(degrees)),
        "mean": round(float(degrees.mean()), 2),
        "p95": float(np.percentile(degrees, 95)),
        "max": int(degrees.max()),
        "isolated": int((degrees == 0).sum()),
    }
