"""A remote graph store (NebulaGraph) seen through the index it was loaded from.

The index's own schema answers `num_nodes` and `edge_names` (the strategies read them while they are built), so a
service starts — and reports NOT_SERVING — while its graph store is unreachable, instead of failing to start.
On the first call that reaches the store, its layout is checked against the index: a store loaded from another
index build is refused rather than grounding over the wrong graph.
"""

from __future__ import annotations

import threading

import numpy as np

from skbqa.common.errors import IndexStoreError
from skbqa.stores.graph.base import Direction, GraphStore


class IndexCheckedGraph:
    def __init__(self, remote: GraphStore, index_graph: GraphStore) -> None:
        self._remote = remote
        self._num_nodes = index_graph.num_nodes
        self._edge_names = list(index_graph.edge_names)
        self._checked = False
        self._lock = threading.Lock()

    @property
    def num_nodes(self) -> int:
        return self._num_nodes

    @property
    def edge_names(self) -> list[str]:
        return list(self._edge_names)

    def _check(self) -> GraphStore:
        if not self._checked:
            with self._lock:
                remote_names, remote_nodes = list(self._remote.edge_names), self._remote.num_nodes
                if remote_names != self._edge_names or remote_nodes != self._num_nodes:
                    raise IndexStoreError(
                        f"the graph store holds another graph ({remote_nodes} nodes, edges {remote_names}) than the "
                        f"index ({self._num_nodes} nodes, edges {self._edge_names}); reload it with skbqa load-nebula"
                    )
                self._checked = True
        return self._remote

    def neighbours(self, nodes: np.ndarray, edge: str | None = None, direction: Direction = "out") -> np.ndarray:
        return self._check().neighbours(nodes, edge, direction)

    def neighbour_pairs(
        self, nodes: np.ndarray, edge: str | None = None, direction: Direction = "out"
    ) -> tuple[np.ndarray, np.ndarray]:
        return self._check().neighbour_pairs(nodes, edge, direction)

    def degree(self, nodes: np.ndarray, edge: str | None = None, direction: Direction = "out") -> np.ndarray:
        return self._check().degree(nodes, edge, direction)
