"""The similarity signals of the graph build: candidate neighbourhoods, pair scores and percentile thresholds.

Candidates are each node's top-M neighbours of its own type under each signal (exact: chunked matrix products,
dense for the name and content vectors, sparse for the entity matrix), so the final threshold never scores all
pairs. Every candidate pair is then scored by *every* signal, so each signal's percentile is estimated on the
same candidate population and the OR of the signals is well defined.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from skbqa.sage.store import BITS, SIMILARITY_SIGNALS

ROW_CHUNK = 1024  # rows per matrix product: 1024 × 28k float32 scores ≈ 115 MB
PAIR_CHUNK = 1 << 18  # pairs scored at a time: 262k × 384 float32 gathers ≈ 400 MB per side


def type_groups(local_types: np.ndarray) -> Iterator[np.ndarray]:
    """Local indices of each type present (the graph's nodes are grouped by type for candidate search)."""
    for code in np.unique(local_types):
        yield np.flatnonzero(local_types == code)


def canonical_pairs(rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """Both columns as (min, max) pairs, shape (n, 2), self-pairs dropped."""
    keep = rows != cols
    return np.stack([np.minimum(rows, cols)[keep], np.maximum(rows, cols)[keep]], axis=1)


def dense_top_m(vectors: np.ndarray, members: np.ndarray, m: int) -> np.ndarray:
    """Each member's m most similar other members (cosine of unit vectors), as (min, max) local pairs."""
    if members.size < 2 or m <= 0:
        return np.zeros((0, 2), np.int64)
    block = vectors[members]
    kk = min(m, members.size - 1)
    found: list[np.ndarray] = []
    for start in range(0, members.size, ROW_CHUNK):
        rows = np.arange(start, min(start + ROW_CHUNK, members.size))
        scores = block[rows] @ block.T
        scores[np.arange(rows.size), rows] = -np.inf  # not its own neighbour
        top = np.argpartition(-scores, kk - 1, axis=1)[:, :kk]
        found.append(canonical_pairs(members[np.repeat(rows, kk)], members[top.ravel()]))
    return np.concatenate(found)


def sparse_top_m(matrix: sp.csr_matrix, members: np.ndarray, m: int) -> np.ndarray:
    """Each member's m best other members by sparse dot product (positive scores only), as (min, max) pairs."""
    if members.size < 2 or m <= 0:
        return np.zeros((0, 2), np.int64)
    block = matrix[members]
    transposed = block.T.tocsr()
    found: list[np.ndarray] = []
    for start in range(0, members.size, ROW_CHUNK):
        product = (block[start : start + ROW_CHUNK] @ transposed).tocoo()
        rows, cols, values = product.row.astype(np.int64) + start, product.col.astype(np.int64), product.data
        keep = (rows != cols) & (values > 0)
        rows, cols, values = rows[keep], cols[keep], values[keep]
        order = np.lexsort((cols, -values, rows))  # per row, best first (ties by column, reproducibly)
        rows, cols = rows[order], cols[order]
        run_start = np.searchsorted(rows, rows, side="left")
        top = np.arange(rows.size) - run_start < m
        found.append(canonical_pairs(members[rows[top]], members[cols[top]]))
    return np.concatenate(found) if found else np.zeros((0, 2), np.int64)


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
