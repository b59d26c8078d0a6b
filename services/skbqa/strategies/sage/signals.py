"""The similarity signals of the graph build: candidate neighbourhoods, pair scores and percentile thresholds.

Candidates are each node's top-M neighbours of its own type under each signal: approximate for the name and
content vectors (an IVF index, `sage.ann`, scores each node against a few clusters, never all pairs), and for the
entity matrix a sparse product, which only ever meets pairs that share an entity (an inverted-index join; the
document-frequency cap of `sage.entities` bounds it). Every candidate pair is then scored by *every* signal, so
each signal's percentile is estimated on the same candidate population and the OR of the signals is well defined.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from skbqa.strategies.sage.ann import IvfIndex
from skbqa.strategies.sage.store import BITS, SIMILARITY_SIGNALS

ROW_CHUNK = 1024  # rows per sparse entity product
PAIR_CHUNK = 1 << 16  # pairs scored at a time: 65k × 384 float32 gathers ≈ 100 MB per side (262k set the peak RSS)


def type_groups(local_types: np.ndarray) -> Iterator[np.ndarray]:
    """Local indices of each type present (the graph's nodes are grouped by type for candidate search)."""
    for code in np.unique(local_types):
        yield np.flatnonzero(local_types == code)


def canonical_pairs(rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """Both columns as (min, max) pairs, shape (n, 2), self-pairs dropped."""
    keep = rows != cols
    return np.stack([np.minimum(rows, cols)[keep], np.maximum(rows, cols)[keep]], axis=1)


@dataclass
class TopM:
    """One signal's candidate pairs within one type, and what finding them cost."""

    pairs: np.ndarray  # (min, max) local pairs
    scored: int  # pair scores computed to find them (ordered: a query row against a member)
    centroids: int = 0  # IVF clusters searched (0: not an IVF search)
    largest_cluster: int = 0


def _empty_top_m() -> TopM:
    return TopM(np.zeros((0, 2), np.int64), 0)


def ann_top_m(vectors: np.ndarray, members: np.ndarray, m: int, *, nprobe: int, centroids: int | None) -> TopM:
    """Each member's approximate m most similar other members (cosine of unit vectors), as (min, max) local
    pairs: an IVF index over the members, each searched in its nprobe nearest clusters."""
    if members.size < 2 or m <= 0:
        return _empty_top_m()
    index = IvfIndex.train(vectors[members], centroids)
    found = index.search(np.arange(members.size), m, nprobe)
    rows = np.repeat(np.arange(members.size), found.ids.shape[1])
    cols = found.ids.ravel()
    keep = cols >= 0  # fewer than m others within the probed clusters
    pairs = canonical_pairs(members[rows[keep]], members[cols[keep]])
    return TopM(pairs, found.scored, int(index.centroids.shape[0]), int(index.sizes.max()))


def sparse_top_m(matrix: sp.csr_matrix, members: np.ndarray, m: int) -> TopM:
    """Each member's m best other members by sparse dot product (positive scores only), as (min, max) pairs."""
    if members.size < 2 or m <= 0:
        return _empty_top_m()
    block = matrix[members]
    transposed = block.T.tocsr()
    found: list[np.ndarray] = []
    scored = 0
    for start in range(0, members.size, ROW_CHUNK):
        product = (block[start : start + ROW_CHUNK] @ transposed).tocoo()
        scored += int(product.nnz)  # only pairs sharing an entity are ever multiplied
        rows, cols, values = product.row.astype(np.int64) + start, product.col.astype(np.int64), product.data
        keep = (rows != cols) & (values > 0)
        rows, cols, values = rows[keep], cols[keep], values[keep]
        order = np.lexsort((cols, -values, rows))  # per row, best first (ties by column, reproducibly)
        rows, cols = rows[order], cols[order]
        run_start = np.searchsorted(rows, rows, side="left")
        top = np.arange(rows.size) - run_start < m
        found.append(canonical_pairs(members[rows[top]], members[cols[top]]))
    return TopM(np.concatenate(found) if found else np.zeros((0, 2), np.int64), scored)


def unique_pairs(*groups: np.ndarray, size: int) -> np.ndarray:
    """The union of (min, max) pair arrays, sorted, each pair once."""
    keys = np.unique(np.concatenate([g[:, 0] * size + g[:, 1] for g in groups]))
    return np.stack([keys // size, keys % size], axis=1)


def dense_pair_scores(vectors: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    out = np.empty(pairs.shape[0], np.float32)
    for start in range(0, pairs.shape[0], PAIR_CHUNK):
        chunk = pairs[start : start + PAIR_CHUNK]
        out[start : start + chunk.shape[0]] = np.einsum("ij,ij->i", vectors[chunk[:, 0]], vectors[chunk[:, 1]])
    return out


def sparse_pair_scores(matrix: sp.csr_matrix, pairs: np.ndarray) -> np.ndarray:
    out = np.empty(pairs.shape[0], np.float32)
    for start in range(0, pairs.shape[0], PAIR_CHUNK):
        chunk = pairs[start : start + PAIR_CHUNK]
        shared = matrix[chunk[:, 0]].multiply(matrix[chunk[:, 1]])
        out[start : start + chunk.shape[0]] = np.asarray(shared.sum(axis=1)).ravel()
    return out


def best_shared_column(matrix: sp.csr_matrix, pairs: np.ndarray) -> np.ndarray:
    """Per pair, the shared column with the largest product (the rarest shared entity), -1 when none."""
    out = np.full(pairs.shape[0], -1, np.int64)
    if matrix.shape[1] == 0:  # no entity survived linking: nothing is shared
        return out
    for start in range(0, pairs.shape[0], PAIR_CHUNK):
        chunk = pairs[start : start + PAIR_CHUNK]
        shared = sp.csr_matrix(matrix[chunk[:, 0]].multiply(matrix[chunk[:, 1]]))
        has = np.diff(shared.indptr) > 0
        best = np.asarray(shared.argmax(axis=1)).ravel()
        out[start : start + chunk.shape[0]] = np.where(has, best, -1)
    return out


def percentile_thresholds(scores: np.ndarray, groups: np.ndarray, percentile: float, n_groups: int) -> np.ndarray:
    """Per group (node type code) and signal: the `percentile` of that signal's scores over the group's candidate
    pairs. Shape (n_groups, signals); NaN for a group without candidates (nothing to keep there)."""
    out = np.full((n_groups, scores.shape[1]), np.nan, np.float64)
    for group in range(n_groups):
        mine = scores[groups == group]
        if mine.shape[0]:
            out[group] = np.percentile(mine, percentile, axis=0)
    return out


def above(scores: np.ndarray, groups: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """Which (pair, signal) scores *exceed* their group's threshold. Strictly: a signal whose percentile is 0
    (most candidates share no entity) then keeps only pairs with a positive score, never every candidate."""
    limits = thresholds[groups]
    return scores > np.where(np.isnan(limits), np.inf, limits)


@dataclass
class Selection:
    thresholds: np.ndarray  # (groups, signals)
    bits: np.ndarray  # per pair: the signals that vote for it, plus "structure" for KG edges
    kept: np.ndarray  # per pair: is it an edge


def select_edges(
    scores: np.ndarray,
    groups: np.ndarray,
    is_candidate: np.ndarray,
    is_structural: np.ndarray,
    percentile: float,
    n_groups: int,
) -> Selection:
    """The paper's pruning: per group and signal, the percentile over the candidate pairs is the threshold; a
    candidate is an edge when any signal exceeds its threshold (OR logic); structural pairs are always edges.
    Only candidates get signal votes, so a signal bit always means "a candidate above that signal's threshold"."""
    thresholds = percentile_thresholds(scores[is_candidate], groups[is_candidate], percentile, n_groups)
    votes = above(scores, groups, thresholds) & is_candidate[:, None]
    weights = np.asarray([BITS[s] for s in SIMILARITY_SIGNALS], np.int64)
    bits = (votes * weights).sum(axis=1) | np.where(is_structural, BITS["structure"], 0)
    return Selection(thresholds, bits, votes.any(axis=1) | is_structural)
