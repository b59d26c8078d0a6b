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
        arr = np.asarray(ids, dtype=np.int64)
        pos = np.searchsorted(self.node_ids, arr)
        pos = np.minimum(pos, max(self.num_nodes - 1, 0))
        bad = self.node_ids[pos] != arr if self.num_nodes else np.ones(arr.shape, bool)
        if bad.any():
            raise KeyError(int(arr[np.argmax(bad)]))
        return pos.astype(np.int64)

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
