"""Encoder-guided beam search over typed neighbours (GRAPE §3.3), one AKG chain at a time.

Per level: expand every path of the beam into relation clusters (paths.Explorer) → bi-encoder shortlist of the
continuations by cosine(question, anonymous path text) → a representative per shortlisted cluster (the member
nearest the question) → one batched scorer call (s_rank) and one batched judge call (S / C / D) →
  score = 1[S]·(1 + s_rank) + 1[C]·s_rank      (the paper's eq. with s_rank added to Stop as a tie-breaker)
Stop paths are finished, Drop paths discarded, Continue paths compete for the b beam slots of the next level.
The search ends at depth D or when no path continues.

Simplification: the paper expands the beam best-first and backtracks to the next path when a branch degrades;
here every beam path of a level is expanded in one batch (level-synchronous), which visits the same b paths
per level, needs no backtracking bookkeeping and keeps model calls at two per level.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from skbqa.stores.vectors.base import VectorIndex
from skbqa.strategies.grape.anchors import vectors_in_order
from skbqa.strategies.grape.features import ChainContext, PathTexts, featurize, path_texts
from skbqa.strategies.grape.models import CONTINUE, LABELS, STOP, GrapeModels
from skbqa.strategies.grape.paths import Explorer, PathState, root


@dataclass(frozen=True)
class BeamConfig:
    beam: int = 10  # b
    depth: int = 3  # D_max
    shortlist: int = 30  # continuations per level passed from the bi-encoder to the scorer and judge
    seeds: int = 3  # candidate nodes per constant that start paths
    rep_pool: int = 128  # cluster members considered for the representative v*_r
    member_cap: int = 20_000  # nodes of one cluster expanded further (re-query is uncapped)
    patterns: int = 1  # Stop patterns per chain re-queried for answers (dev: 1 beats 2 and 3 on hit@1)


@dataclass
class SearchStats:
    model_calls: int = 0  # scorer + judge invocations (each one batched call over a level)
    scored: int = 0  # continuations the models scored
    expansions: int = 0  # beam paths expanded into clusters
    clusters: int = 0  # relation clusters generated
    levels: int = 0

    def add(self, other: SearchStats) -> None:
        for name in ("model_calls", "scored", "expansions", "clusters", "levels"):
            setattr(self, name, getattr(self, name) + getattr(other, name))


@dataclass
class SearchOutcome:
    stops: list[PathState]  # judged complete, best first
    alive: list[PathState]  # judged Continue at some level (the fallback when nothing stopped), best first
    stats: SearchStats = field(default_factory=SearchStats)


def describe(
    ctx: ChainContext,
    children: list[PathState],
    texts: PathTexts,
    documents: VectorIndex,
    *,
    rep_pool: int,
    shortlist: int | None,
) -> tuple[list[PathState], np.ndarray]:
    """Shortlist children by the bi-encoder (best first), choose representatives, return (kept, features)."""
    if not children:
        return [], np.zeros((0, 0), np.float32)
    pairs = [path_texts(ctx, c) for c in children]
    full = texts.embed([p[0] for p in pairs])
    bi = full @ ctx.question
    # Without a shortlist (training) the children keep their order, so rows stay aligned with the input.
    order = np.arange(len(children)) if shortlist is None else np.argsort(-bi, kind="stable")[:shortlist]
    kept = [children[i] for i in order]
    last = texts.embed([pairs[i][1] for i in order])
    # Representatives: one gather of document vectors for all pools, then a segmented max.
    pools = [c.members[:rep_pool] for c in kept]
    sizes = np.asarray([p.size for p in pools])
    flat = np.concatenate(pools)
    cosine = vectors_in_order(documents, flat) @ ctx.question
    starts = np.cumsum(sizes) - sizes
    rep_cosine = np.maximum.reduceat(cosine, starts)
    for child, pool, start, size in zip(kept, pools, starts, sizes, strict=True):
        child.representative = int(pool[int(np.argmax(cosine[start : start + size]))])
    return kept, featurize(ctx, kept, full[order], last, rep_cosine)


def beam_search(
    ctx: ChainContext,
    explorer: Explorer,
    models: GrapeModels,
    texts: PathTexts,
    documents: VectorIndex,
    config: BeamConfig,
) -> SearchOutcome:
    stats = SearchStats()
    beam = [root(int(s), r) for r, s in enumerate(ctx.anchor.seeds)]
    stops: list[PathState] = []
    alive: list[PathState] = []
    for _ in range(config.depth):
        children: list[PathState] = []
        for state in beam:
            children.extend(explorer.children(state))
        stats.expansions += len(beam)
        stats.clusters += len(children)
        if not children:
            break
        stats.levels += 1
        kept, x = describe(ctx, children, texts, documents, rep_pool=config.rep_pool, shortlist=config.shortlist)
        s_rank = models.score(x)
        decision = models.decide(x)
        stats.model_calls += 2
        stats.scored += len(kept)
        following: list[PathState] = []
        for i, (child, s, d) in enumerate(zip(kept, s_rank, decision, strict=True)):
            child.label = LABELS[int(d)]
            child.scores = {"s_rank": float(s), "bi_cosine_gap": float(x[i, 0])}
            if d == STOP:
                child.score = 1.0 + float(s)
                stops.append(child)
            elif d == CONTINUE:
                child.score = float(s)
                following.append(child)
        beam = sorted(following, key=lambda p: -p.score)[: config.beam]
        alive.extend(beam)
        if not beam:
            break
    stops.sort(key=lambda p: -p.score)
    alive.sort(key=lambda p: -p.score)
    return SearchOutcome(stops, alive, stats)
