"""Approximate top-M neighbourhoods for the graph build: an inverted-file (IVF) index in numpy.

Spherical k-means (a few Lloyd iterations on a sample, ~√n centroids) splits one node type's unit vectors into
clusters; every node is listed under its nearest centroid. A query scores only the members of its `nprobe` nearest
clusters, so a type of n nodes costs about n · nprobe · n/√n dot products instead of n², and the search stays matrix
products: each cluster's members against the block of queries that probe it, merged into a running top-M.
With `nprobe` = all clusters the search is exact, which is how the tests pin it down.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

KMEANS_ITERATIONS = 8  # Lloyd steps; spherical k-means on sentence vectors settles within a handful
SAMPLE_PER_CENTROID = 64  # training points per centroid (faiss warns below ~39)
ASSIGN_CHUNK = 8192  # rows per vectors × centroids product when assigning and probing
BLOCK_BUDGET = 1 << 22  # query × member scores per matrix product: 4M float32 ≈ 16 MB


def default_centroids(n: int) -> int:
    """√n clusters: each query then scores nprobe · √n members, the balance of probe cost and list length."""
    return max(1, math.ceil(math.sqrt(n)))


def _top_columns(scores: np.ndarray, k: int) -> np.ndarray:
    """Per row, the columns of the k largest scores (k >= 1), best first."""
    if k < scores.shape[1]:
        top = np.argpartition(-scores, k - 1, axis=1)[:, :k]
    else:
        top = np.broadcast_to(np.arange(scores.shape[1]), scores.shape)
    order = np.argsort(-np.take_along_axis(scores, top, axis=1), axis=1, kind="stable")
    return np.take_along_axis(top, order, axis=1)


def _nearest_centroids(vectors: np.ndarray, rows: np.ndarray, centroids: np.ndarray, k: int) -> np.ndarray:
    """The k nearest centroids of each of `rows` (of `vectors`), nearest first. Chunked, and gathering only a
    chunk of rows at a time, so probing all n rows never copies the whole matrix."""
    parts = [
        _top_columns(vectors[rows[s : s + ASSIGN_CHUNK]] @ centroids.T, k)
        for s in range(0, rows.size, ASSIGN_CHUNK)
    ]
    return np.concatenate(parts) if parts else np.zeros((0, k), np.int64)


def spherical_kmeans(
    vectors: np.ndarray, k: int, *, iterations: int = KMEANS_ITERATIONS, sample: int | None = None, seed: int = 0
) -> np.ndarray:
    """k unit centroids of unit `vectors` (cosine k-means), trained on a random sample of the rows."""
    rng = np.random.default_rng(seed)
    n = vectors.shape[0]
    k = max(1, min(k, n))
    size = min(n, sample if sample is not None else SAMPLE_PER_CENTROID * k)
    train = vectors[np.sort(rng.choice(n, size, replace=False))] if size < n else vectors
    centroids = train[rng.choice(train.shape[0], k, replace=False)].astype(np.float32)
    for _ in range(iterations):
        scores = train @ centroids.T
        labels = scores.argmax(axis=1)
        # One-hot (k × sample) times the sample sums each cluster's rows in one sparse product.
        onehot = sp.csr_matrix(
            (np.ones(labels.size, np.float32), (labels, np.arange(labels.size))), shape=(k, labels.size)
        )
        sums = np.asarray(onehot @ train, np.float32)
        norms = np.linalg.norm(sums, axis=1)
        empty = norms == 0
        if empty.any():
            # An empty cluster restarts at the sample points worst served by their own centroid, which splits the
            # loosest clusters instead of leaving a centroid that no node will ever be listed under.
            worst = np.argsort(scores[np.arange(labels.size), labels])[: int(empty.sum())]
            sums[empty], norms[empty] = train[worst], np.linalg.norm(train[worst], axis=1)
        centroids = sums / np.where(norms == 0, 1.0, norms)[:, None]
    return centroids


@dataclass
class Neighbours:
    """Each query's top-M: ids (rows of the indexed vectors, -1 where fewer exist) and scores, best first."""

    ids: np.ndarray  # (queries, M) int64
    scores: np.ndarray  # (queries, M) float32, -inf where ids is -1
    scored: int  # query × member dot products computed (exact search: queries × n)


@dataclass
class IvfIndex:
    """Unit vectors listed by nearest centroid (an inverted file), searched a few clusters per query."""

    vectors: np.ndarray  # (n, d) unit rows
    centroids: np.ndarray  # (k, d) unit rows
    order: np.ndarray  # row ids sorted by cluster: cluster c's members are order[offsets[c]:offsets[c + 1]]
    offsets: np.ndarray  # (k + 1,)

    @classmethod
    def train(
        cls,
        vectors: np.ndarray,
        centroids: int | None = None,
        *,
        iterations: int = KMEANS_ITERATIONS,
        sample: int | None = None,
        seed: int = 0,
    ) -> IvfIndex:
        n = vectors.shape[0]
        k = centroids if centroids is not None else default_centroids(n)
        trained = spherical_kmeans(vectors, k, iterations=iterations, sample=sample, seed=seed)
        labels = _nearest_centroids(vectors, np.arange(n), trained, 1)[:, 0]
        order = np.argsort(labels, kind="stable")
        offsets = np.searchsorted(labels[order], np.arange(trained.shape[0] + 1))
        return cls(vectors, trained, order.astype(np.int64), offsets.astype(np.int64))

    @property
    def sizes(self) -> np.ndarray:
        return np.diff(self.offsets)

    def probes(self, queries: np.ndarray, nprobe: int) -> np.ndarray:
        """Each query row's nprobe nearest clusters, nearest first, shape (queries, nprobe)."""
        return _nearest_centroids(self.vectors, queries, self.centroids, min(nprobe, self.centroids.shape[0]))

    def search(self, queries: np.ndarray, m: int, nprobe: int) -> Neighbours:
        """The top-m other rows of each query row (an index into `vectors`) among its nprobe nearest clusters.

        Work is batched by cluster: the (query, cluster) probe pairs are sorted by cluster, so each cluster's
        members are gathered once and scored against every query probing it in one product; its best m per query
        then merge into the running top-m. Clusters are disjoint, so no member is merged twice for one query."""
        queries = np.asarray(queries, np.int64)
        best_ids = np.full((queries.size, m), -1, np.int64)
        best = np.full((queries.size, m), -np.inf, np.float32)
        if queries.size == 0 or m <= 0:
            return Neighbours(best_ids, best, 0)
        probes = self.probes(queries, nprobe)
        slot = np.repeat(np.arange(queries.size), probes.shape[1])  # which query (row of best) probes
        cluster = probes.ravel()
        by_cluster = np.argsort(cluster, kind="stable")
        slot, cluster = slot[by_cluster], cluster[by_cluster]
        bounds = np.searchsorted(cluster, np.arange(self.centroids.shape[0] + 1))
        scored = 0
        for c in np.flatnonzero(np.diff(bounds)):
            members = self.order[self.offsets[c] : self.offsets[c + 1]]
            if members.size == 0:
                continue
            block = self.vectors[members].T
            step = max(1, BLOCK_BUDGET // members.size)
            for start in range(bounds[c], bounds[c + 1], step):
                rows = slot[start : min(start + step, bounds[c + 1])]
                scores = self.vectors[queries[rows]] @ block
                scores[queries[rows][:, None] == members[None, :]] = -np.inf  # not its own neighbour
                scored += scores.size
                top = _top_columns(scores, min(m, members.size))
                merged_scores = np.concatenate([best[rows], np.take_along_axis(scores, top, axis=1)], axis=1)
                merged_ids = np.concatenate([best_ids[rows], members[top]], axis=1)
                keep = _top_columns(merged_scores, m)
                best[rows] = np.take_along_axis(merged_scores, keep, axis=1)
                best_ids[rows] = np.take_along_axis(merged_ids, keep, axis=1)
        best_ids[~np.isfinite(best)] = -1  # fewer than m others within reach (or only the query itself)
        return Neighbours(best_ids, best, scored)


def exact_top_m(vectors: np.ndarray, queries: np.ndarray, m: int) -> Neighbours:
    """Brute-force reference: each query row's top-m other rows over all of `vectors` (for recall and tests)."""
    queries = np.asarray(queries, np.int64)
    m = min(m, vectors.shape[0] - 1)
    if m <= 0:
        return Neighbours(np.zeros((queries.size, 0), np.int64), np.zeros((queries.size, 0), np.float32), 0)
    ids, scores = [], []
    step = max(1, BLOCK_BUDGET // vectors.shape[0])  # rows × all n scores per product stay within the budget
    for start in range(0, queries.size, step):
        rows = queries[start : start + step]
        block = vectors[rows] @ vectors.T
        block[np.arange(rows.size), rows] = -np.inf
        top = _top_columns(block, m)
        ids.append(top)
        scores.append(np.take_along_axis(block, top, axis=1))
    return Neighbours(
        np.concatenate(ids) if ids else np.zeros((0, m), np.int64),
        np.concatenate(scores) if scores else np.zeros((0, m), np.float32),
        queries.size * vectors.shape[0],
    )


def recall_at_m(found: np.ndarray, truth: np.ndarray) -> float:
    """Mean share of each query's exact top-M ids that the approximate search also returned."""
    if truth.size == 0:
        return 1.0
    hits = (found[:, :, None] == truth[:, None, :]).any(axis=1) & (truth >= 0)
    return float(hits.sum() / max(1, (truth >= 0).sum()))
