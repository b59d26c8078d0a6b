"""The node table of an index: ids, types, names, texts and attributes, persisted beside the graph."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np

from skbqa.skb.model import SKB, Scalar, lookup_positions
from skbqa.skb.schema import Schema

_ARRAYS = "nodes.npz"
_TEXT = "nodes.json.gz"


class NodeTable:
    def __init__(
        self,
        schema: Schema,
        ids: np.ndarray,
        types: np.ndarray,
        names: list[str],
        texts: list[str],
        attrs: list[dict[str, Scalar]],
    ) -> None:
        self.schema = schema
        self.ids = ids
        self.types = types
        self.names = names
        self.texts = texts
        self.attrs = attrs
        # Set when read from an index: derived structures saved there (the name lexicon) are reused.
        self.directory: Path | None = None

    @classmethod
    def from_skb(cls, skb: SKB) -> NodeTable:
        return cls(skb.schema, skb.node_ids, skb.node_type, skb.names, skb.texts, skb.attrs)

    def __len__(self) -> int:
        return int(self.ids.shape[0])

    def type_name(self, position: int) -> str:
        return self.schema.node_types[int(self.types[position])].name

    def positions(self, ids: np.ndarray | list[int]) -> np.ndarray:
        """External ids → positions; unknown ids map to -1 (answers may name nodes outside the index)."""
        return lookup_positions(self.ids, ids)

    def save(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "schema.json").write_text(json.dumps(self.schema.to_dict(), indent=1))
        np.savez(directory / _ARRAYS, ids=self.ids, types=self.types)
        with gzip.open(directory / _TEXT, "wt", encoding="utf-8", compresslevel=1) as handle:
            json.dump({"names": self.names, "texts": self.texts, "attrs": self.attrs}, handle)

    @classmethod
    def load(cls, directory: Path) -> NodeTable:
        schema = Schema.from_dict(json.loads((directory / "schema.json").read_text()))
        with np.load(directory / _ARRAYS) as data:
            ids, types = data["ids"], data["types"]
        with gzip.open(directory / _TEXT, "rt", encoding="utf-8") as handle:
            columns = json.load(handle)
        table = cls(schema, ids, types, columns["names"], columns["texts"], columns["attrs"])
        table.directory = directory
        return table
