"""The vectors of a changed knowledge base: every text that is the same as in the previous snapshot keeps its
vector, every other one is encoded (through the index's own encoder: the local one, or Triton in a cluster).

Which texts can have changed follows from what each embedded text reads (`ingest.documents`): a node's name and
document read only the node; its relations document reads the node, its own edges, its neighbours' names and,
through a neighbour it has exactly one of over an edge, that neighbour's edges and its out-neighbours' names. So
the relations texts that can change are those of nodes whose record changed, nodes up to one hop from an end of
a changed edge, and nodes up to two hops from a renamed, added or deleted node (either direction, in the old
graph and in the new); they are rebuilt old and new and compared, and only those that differ are encoded.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from skbqa.changes.state import Touched
from skbqa.ingest.documents import embedded_texts
from skbqa.query.encoder import Encoder
from skbqa.skb.model import lookup_positions
from skbqa.stores.graph.csr import CsrGraph
from skbqa.stores.nodes import NodeTable
from skbqa.stores.vectors.exact import ExactIndex


@dataclass
class DeltaReport:
    reused: dict[str, int] = field(default_factory=dict)
    encoded: dict[str, int] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)


def within_hops(graph: CsrGraph, positions: np.ndarray, hops: int) -> np.ndarray:
    """`positions` and every node up to `hops` edges away from them, in either direction."""
    seen = np.unique(np.asarray(positions, np.int64))
    frontier = seen
    for _ in range(hops):
        if frontier.size == 0:
            break
        reached = graph.neighbours(frontier, None, "both")
        frontier = np.setdiff1d(reached, seen, assume_unique=False)
        seen = np.union1d(seen, frontier)
    return seen


class DeltaVectors:
    """`vectors_for` of `ingest.builder.build_snapshot` for an update of the snapshot `old_*`."""

    def __init__(
        self,
        old_nodes: NodeTable,
        old_graph: CsrGraph,
        old_sets: dict[str, ExactIndex],
        touched: Touched,
        encoder: Encoder,
        *,
        progress: bool = False,
    ) -> None:
        self._old_nodes = old_nodes
        self._old_graph = old_graph
        self._old_sets = old_sets
        self._touched = touched
        self._encoder = encoder
        self._progress = progress
        self.report = DeltaReport()

    def __call__(self, name: str, nodes: NodeTable, graph: CsrGraph) -> tuple[np.ndarray, int]:
        started = time.perf_counter()
        old_of_new = lookup_positions(self._old_nodes.ids, nodes.ids)  # -1: a node the old snapshot lacks
        candidates = self._candidates(name, nodes, graph)
        kept = candidates[old_of_new[candidates] >= 0]
        new_texts = embedded_texts(name, nodes, graph, kept)
        old_texts = embedded_texts(name, self._old_nodes, self._old_graph, old_of_new[kept])
        differs = kept[[a != b for a, b in zip(new_texts, old_texts, strict=True)]]
        encode = np.union1d(differs, np.flatnonzero(old_of_new < 0))
        reuse = np.setdiff1d(np.arange(len(nodes)), encode)
        out = np.zeros((len(nodes), self._encoder.dim), np.float32)
        if reuse.size:
            out[reuse] = self._old_sets[name].vectors_for(old_of_new[reuse])  # old positions ascend with new ones
        if encode.size:
            texts = embedded_texts(name, nodes, graph, encode)
            out[encode] = self._encoder.encode(texts, progress=f"embed {name}" if self._progress else None)
        self.report.reused[name] = int(reuse.size)
        self.report.encoded[name] = int(encode.size)
        self.report.seconds[name] = round(time.perf_counter() - started, 3)
        return out, int(encode.size)

    def _candidates(self, name: str, nodes: NodeTable, graph: CsrGraph) -> np.ndarray:
        """New positions whose text in set `name` may differ from the old snapshot's."""
        records = _positions(nodes, self._touched.records)
        if name != "relations":
            return records
        region = [records]
        for ids, hops in ((self._touched.edges, 1), (self._touched.names, 2)):
            region.append(within_hops(graph, _positions(nodes, ids), hops))
            old_region = within_hops(self._old_graph, _positions(self._old_nodes, ids), hops)
            region.append(_positions(nodes, self._old_nodes.ids[old_region]))
        return np.unique(np.concatenate(region))


def _positions(nodes: NodeTable, ids: Iterable[int] | np.ndarray) -> np.ndarray:
    """The positions of those of `ids` that are nodes of `nodes`, ascending."""
    wanted = ids if isinstance(ids, np.ndarray) else np.fromiter(ids, np.int64)
    found = lookup_positions(nodes.ids, wanted)
    return np.unique(found[found >= 0])
