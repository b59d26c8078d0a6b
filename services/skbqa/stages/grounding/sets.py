"""Set primitives for triplet grounding: lazy/explicit domains, membership, walks, capped evidence pairs.

See `skbqa.stages.grounding.algorithm` for the representation and the cost model these implement.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from skbqa.query.structured import Triplet
from skbqa.stores.graph.base import Direction, GraphStore

EMPTY = np.zeros(0, np.int64)
_BITMAP_FRACTION = 16  # membership switches from sorted search to a bitmap above num_nodes / this
COST_SAMPLE = 4096  # a side larger than this has its walk cost estimated from an even sample of its nodes


# ---------------------------------------------------------------------------------------------------- set helpers


def _member(values: np.ndarray, sorted_set: np.ndarray, num_nodes: int) -> np.ndarray:
    """Boolean mask: which of `values` are in the sorted unique `sorted_set`."""
    if sorted_set.size == 0 or values.size == 0:
        return np.zeros(values.shape, bool)
    if values.size + sorted_set.size > num_nodes // _BITMAP_FRACTION:
        bitmap = np.zeros(num_nodes, bool)
        bitmap[sorted_set] = True
        return bitmap[values]
    idx = np.searchsorted(sorted_set, values)
    idx[idx == sorted_set.size] = 0
    return sorted_set[idx] == values


def sorted_unique(values: np.ndarray) -> np.ndarray:
    """`np.unique` for int64 positions, skipping the sort when they are already sorted and unique (attribute
    filters and the graph hand over sorted sets; a hundred thousand of them would otherwise be re-sorted)."""
    arr = np.asarray(values, np.int64)
    if arr.ndim == 1 and (arr.size < 2 or bool((arr[1:] > arr[:-1]).all())):
        return arr
    return np.unique(arr)


def walk_cost(graph: GraphStore, nodes: np.ndarray, edge: str | None, direction: Direction) -> int:
    """Edges a one-hop walk from `nodes` reads (their summed degree); estimated for large sets."""
    if nodes.size <= COST_SAMPLE:
        return int(graph.degree(nodes, edge, direction).sum())
    step = -(-nodes.size // COST_SAMPLE)
    sample = nodes[::step]
    return int(graph.degree(sample, edge, direction).sum() * (nodes.size / sample.size))


def _intersect(a: np.ndarray, b: np.ndarray, num_nodes: int) -> np.ndarray:
    """Intersection of two sorted unique arrays, sorted (probes the larger with the smaller)."""
    if a.size > b.size:
        a, b = b, a
    return a[_member(a, b, num_nodes)]


@dataclass
class Domain:
    nodes: np.ndarray | None  # sorted unique int64 positions; None = lazy (every node, of `type_code` if set)
    type_code: int | None  # the symbol's type filter (strict_types), or None

    @property
    def lazy(self) -> bool:
        return self.nodes is None

    def contains(self, values: np.ndarray, node_types: np.ndarray, num_nodes: int) -> np.ndarray:
        if self.nodes is not None:
            return _member(values, self.nodes, num_nodes)
        if self.type_code is None:
            return np.ones(values.shape, bool)
        return node_types[values] == self.type_code

    def restrict(self, values: np.ndarray, node_types: np.ndarray, num_nodes: int) -> np.ndarray:
        """self ∩ values, for sorted unique `values`."""
        if self.nodes is not None:
            return _intersect(self.nodes, values, num_nodes)
        if self.type_code is None:
            return values
        return values[node_types[values] == self.type_code]

    def size(self, node_types: np.ndarray, num_nodes: int) -> int:
        if self.nodes is not None:
            return int(self.nodes.size)
        return num_nodes if self.type_code is None else int(np.count_nonzero(node_types == self.type_code))

    def materialise(self, node_types: np.ndarray, num_nodes: int) -> np.ndarray:
        if self.nodes is not None:
            return self.nodes
        if self.type_code is None:
            return np.arange(num_nodes, dtype=np.int64)
        return np.flatnonzero(node_types == self.type_code).astype(np.int64)


# ---------------------------------------------------------------------------------------------------- walks

REVERSE: dict[Direction, Direction] = {"out": "in", "in": "out", "both": "both"}


def image(
    graph: GraphStore, start: np.ndarray, edge: str | None, direction: Direction, min_hops: int, max_hops: int
) -> np.ndarray:
    """Nodes at the end of a walk of min_hops..max_hops steps from any of `start` (sorted unique)."""
    frontier = start
    for _ in range(min_hops):  # exact levels up to min_hops
        if frontier.size == 0:
            return EMPTY
        frontier = graph.neighbours(frontier, edge, direction)
    reached = frontier
    for _ in range(max_hops - min_hops):  # the union of later levels grows breadth-first from new nodes only
        if frontier.size == 0:
            break
        step = graph.neighbours(frontier, edge, direction)
        frontier = step[~_member(step, reached, graph.num_nodes)]
        reached = np.union1d(reached, frontier)
    return reached.astype(np.int64, copy=False)


def _join(
    graph: GraphStore,
    origins: np.ndarray,
    nodes: np.ndarray,
    edge: str | None,
    direction: Direction,
    *,
    at_origin: bool,
    dedupe: bool,
) -> tuple[np.ndarray, np.ndarray]:
    """One hop for (origin, node) pairs: every (origin, neighbour of node), sorted and unique if `dedupe`.

    `at_origin` means every pair is (v, v) for unique v, so `neighbour_pairs` already gives the answer.
    """
    if nodes.size == 0:
        return EMPTY, EMPTY
    num_nodes = graph.num_nodes
    if at_origin:
        o, n = graph.neighbour_pairs(nodes, edge, direction)
        o, n = o.astype(np.int64, copy=False), n.astype(np.int64, copy=False)
    else:
        src, dst = graph.neighbour_pairs(np.unique(nodes), edge, direction)
        order = np.argsort(src, kind="stable")
        src, dst = src[order], dst[order]
        lo = np.searchsorted(src, nodes, "left")
        counts = np.searchsorted(src, nodes, "right") - lo
        total = int(counts.sum())
        if total == 0:
            return EMPTY, EMPTY
        run_starts = np.cumsum(counts) - counts
        idx = np.arange(total, dtype=np.int64) - np.repeat(run_starts - lo, counts)
        o, n = np.repeat(origins, counts), dst[idx].astype(np.int64, copy=False)
    if not dedupe:
        return o, n
    key = np.unique(o * num_nodes + n)
    return key // num_nodes, key % num_nodes


def walk_pairs(
    graph: GraphStore,
    origins: np.ndarray,
    edge: str | None,
    direction: Direction,
    min_hops: int,
    max_hops: int,
    accept: Callable[[np.ndarray, np.ndarray], np.ndarray],
    cap: int,
) -> tuple[np.ndarray, np.ndarray]:
    """(origin, end) pairs with a min..max-hop walk from origin to end and `accept(origin, end)` true.

    `origins` must be sorted and unique. The result is deduplicated and sorted by (origin, end); an origin
    stops being expanded once it has `cap` accepted ends (so with cap=1 this is a support test: which origins
    reach an accepted node at all). Pairs are only deduplicated when another hop follows.
    """
    num_nodes = graph.num_nodes
    hops_left = max_hops - min_hops
    o, n = origins, origins  # level 0: each origin at itself
    for hop in range(min_hops):  # exact levels
        last = hop == min_hops - 1 and hops_left == 0
        o, n = _join(graph, o, n, edge, direction, at_origin=hop == 0, dedupe=not last)
    seen = o * num_nodes + n if hops_left else EMPTY  # sorted unique keys of the pairs reached so far
    keys: list[np.ndarray] = []
    while True:
        hit = accept(o, n)
        if hit.any():
            keys.append(o[hit] * num_nodes + n[hit])
        if hops_left == 0 or o.size == 0:
            break
        if keys:  # stop expanding origins that already have `cap` accepted ends
            done_origins, done_counts = np.unique(np.unique(np.concatenate(keys)) // num_nodes, return_counts=True)
            keep = ~_member(o, done_origins[done_counts >= cap], num_nodes)
            o, n = o[keep], n[keep]
        hops_left -= 1
        at_origin = min_hops == 0 and hops_left == max_hops - 1  # first hop of a walk that may stay put
        o, n = _join(graph, o, n, edge, direction, at_origin=at_origin, dedupe=hops_left > 0)
        key = o * num_nodes + n
        new = ~_member(key, seen, num_nodes * num_nodes)  # the bitmap is chosen only if pairs ≥ N²/16
        o, n = o[new], n[new]
        if hops_left:
            seen = np.union1d(seen, key[new])
    if not keys:
        return EMPTY, EMPTY
    accepted = np.unique(np.concatenate(keys))
    return accepted // num_nodes, accepted % num_nodes


def cap_per_group(first: np.ndarray, second: np.ndarray, cap: int) -> tuple[np.ndarray, np.ndarray]:
    """Keep the first `cap` rows of each run of equal `first` (rows sorted by first)."""
    if first.size == 0:
        return first, second
    _, starts, inverse = np.unique(first, return_index=True, return_inverse=True)
    rank = np.arange(first.size) - starts[inverse]
    keep = rank < cap
    return first[keep], second[keep]


# ---------------------------------------------------------------------------------------------------- grounding


@dataclass(frozen=True)
class Arc:
    """A triplet prepared for propagation: `step` is the graph direction from head to tail."""

    index: int
    triplet: Triplet
    head: str
    tail: str
    edge: str | None
    step: Direction
    min_hops: int
    max_hops: int
