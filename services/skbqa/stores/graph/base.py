"""The `GraphStore` port: typed adjacency, batched, by edge name and direction."""

from __future__ import annotations

from typing import Literal, Protocol, runtime_checkable

import numpy as np

Direction = Literal["out", "in", "both"]


@runtime_checkable
class GraphStore(Protocol):
    @property
    def num_nodes(self) -> int: ...

    @property
    def edge_names(self) -> list[str]: ...

    def neighbours(self, nodes: np.ndarray, edge: str | None = None, direction: Direction = "out") -> np.ndarray:
        """Sorted unique positions adjacent to any of `nodes` over `edge` (None = every edge type)."""
        ...

    def neighbour_pairs(
        self, nodes: np.ndarray, edge: str | None = None, direction: Direction = "out"
    ) -> tuple[np.ndarray, np.ndarray]:
        """(source, neighbour) pairs, one per incident edge, for evidence and per-node grouping."""
        ...

    def degree(self, nodes: np.ndarray, edge: str | None = None, direction: Direction = "out") -> np.ndarray: ...
