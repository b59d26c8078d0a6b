"""The in-memory SKB: columnar node table and edge arrays, indexed by a dense internal position.

External node ids are arbitrary integers; internally every node has a position 0..N-1 (nodes sorted by id), so
that graph and vector stores can use plain arrays. `positions()` and `ids()` convert between the two.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from skbqa.skb.schema import Schema

Scalar = str | int | float | bool | None


def lookup_positions(sorted_ids: np.ndarray, ids: np.ndarray | list[int]) -> np.ndarray:
    """Positions of `ids` in the ascending, unique `sorted_ids` (one binary search each); -1 where an id is absent."""
    arr = np.asarray(ids, dtype=np.int64)
    if arr.size == 0 or sorted_ids.size == 0:
        return np.full(arr.shape, -1, np.int64)
    first, last = int(sorted_ids[0]), int(sorted_ids[-1])
    if arr.size > 1024 and last - first == sorted_ids.size - 1:
        # Consecutive ids (STaRK's and synth's 0..N-1): a position is an offset — no binary search over tens of
        # millions of edge ends.
        pos = arr - first
        return np.where((pos >= 0) & (pos < sorted_ids.size), pos, -1)
    pos = np.minimum(np.searchsorted(sorted_ids, arr), sorted_ids.size - 1)
    return np.where(sorted_ids[pos] == arr, pos, -1).astype(np.int64)


@dataclass
class SKB:
    schema: Schema
    node_ids: np.ndarray  # int64, sorted ascending; position = internal index
    node_type: np.ndarray  # int16 code into schema.node_types
    names: list[str]
    texts: list[str]
    attrs: list[dict[str, Scalar]]
    edge_src: np.ndarray  # int32 positions
    edge_dst: np.ndarray  # int32 positions
    edge_type: np.ndarray  # int16 code into schema.edge_names

    @property
    def num_nodes(self) -> int:
        return int(self.node_ids.shape[0])

    @property
    def num_edges(self) -> int:
        return int(self.edge_src.shape[0])

    def positions(self, ids: np.ndarray | list[int]) -> np.ndarray:
        """External ids → positions; raises KeyError naming the first unknown id."""
        pos = lookup_positions(self.node_ids, ids)
        bad = np.flatnonzero(pos < 0)
        if bad.size:
            raise KeyError(int(np.asarray(ids, dtype=np.int64)[bad[0]]))
        return pos

    def ids(self, positions: np.ndarray | list[int]) -> np.ndarray:
        return self.node_ids[np.asarray(positions, dtype=np.int64)]

    def type_name(self, position: int) -> str:
        return self.schema.node_types[int(self.node_type[position])].name

    def nodes_of_type(self, type_name: str) -> np.ndarray:
        return np.flatnonzero(self.node_type == self.schema.node_code(type_name))


@dataclass
class QAItem:
    """One question with its complete answer set (external node ids)."""

    id: str
    question: str
    answers: list[int]
    meta: dict[str, Any] = field(default_factory=dict)
