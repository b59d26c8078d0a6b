"""The generated graph held in memory between generation, question sampling and writing."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class Relation:
    """One edge signature's edges as global node ids (deduplicated, sorted by (src, dst))."""

    name: str
    source: str
    target: str
    description: str
    src: np.ndarray  # int64
    dst: np.ndarray  # int64

    @property
    def size(self) -> int:
        return int(self.src.shape[0])


@dataclass
class SynthGraph:
    """Node ids are dense: type blocks in `type_names` order, each `[offsets[t], offsets[t] + counts[t])`."""

    type_names: list[str]
    counts: dict[str, int]
    offsets: dict[str, int]
    names: list[str] = field(default_factory=list)  # by global id
    texts: list[str] = field(default_factory=list)  # by global id
    attrs: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)  # type → attr → values by local index
    relations: list[Relation] = field(default_factory=list)

    @property
    def num_nodes(self) -> int:
        return sum(self.counts.values())

    def id_range(self, type_name: str) -> tuple[int, int]:
        start = self.offsets[type_name]
        return start, start + self.counts[type_name]

    def relation(self, name: str, source: str, target: str) -> Relation:
        for r in self.relations:
            if (r.name, r.source, r.target) == (name, source, target):
                return r
        raise KeyError((name, source, target))


class Adjacency:
    """CSR rows over global ids: `adj(i)` is the sorted array of neighbours of node i."""

    def __init__(self, rows: np.ndarray, cols: np.ndarray, num_nodes: int) -> None:
        order = np.lexsort((cols, rows))
        self.indices = cols[order]
        self.indptr = np.zeros(num_nodes + 1, np.int64)
        np.cumsum(np.bincount(rows, minlength=num_nodes), out=self.indptr[1:])

    def __call__(self, node: int) -> np.ndarray:
        return self.indices[self.indptr[node] : self.indptr[node + 1]]

    def degree(self, node: int) -> int:
        return int(self.indptr[node + 1] - self.indptr[node])
