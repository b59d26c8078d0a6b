"""Features of a (chain T_X, candidate path P') pair: what the scorer and the completeness judge see.

The paper feeds both to cross-encoders fine-tuned on KGQA data. Here they are small models over a fixed feature
vector, and the features are chosen to *transfer across schemas* (train on synthetic papers/authors, apply to
biomed): none names an edge or a type. They are
* semantic similarities from the bi-encoder between anonymous texts — question vs path, AKG chain vs path, AKG
  step vs the path's last hop, question vs the cluster's representative node;
* set agreement between the path's hops and the AKG's (edge, direction) pairs, order-free as in A.2 (the
  parser names edge types of *this* schema, so "the path uses the edge the parser named" means the same thing
  in every SKB), and whether the parser named any edge at all;
* type agreement of the reached nodes with the target and the chain's intermediate variables;
* hop counts against the chain's hop range;
* degree statistics that do not depend on the SKB's scale: the cluster's share of all neighbours of the expanded
  nodes and its rank among the siblings (absolute sizes do not transfer: synthetic questions have at most 20
  answers, a biomed hub thousands);
* the seed's quality (rank among the constant's candidates, name cosine) and the coverage of the *other*
  constants (share whose neighbourhood the cluster touches) — the joins of T_X that this path does not walk.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from skbqa.query.encoder import Encoder
from skbqa.strategies.grape.anchors import Anchor
from skbqa.strategies.grape.paths import PathState
from skbqa.strategies.grape.query_graph import Chain, step_text

FEATURE_NAMES = (
    "bi_cosine_gap",
    "chain_cosine",
    "last_step_cosine",
    "rep_cosine_gap",
    "rel_in_chain",
    "rel_walk_in_chain",
    "last_rel_in_chain",
    "chain_covered",
    "edge_known",
    "type_match",
    "type_on_chain",
    "hops",
    "hops_short",
    "hops_in_range",
    "hops_over",
    "cluster_share",
    "seed_rank_inv",
    "seed_name_cosine",
    "coverage",
    "has_others",
    "returns_to_seed",
)
FEATURES_VERSION = 2


class PathTexts:
    """Embeddings of anonymous texts, cached: pattern texts repeat across requests, so after warm-up the beam
    costs no encoder calls for them."""

    def __init__(self, encoder: Encoder, max_entries: int = 50_000) -> None:
        self.encoder = encoder
        self._cache: dict[str, np.ndarray] = {}
        self._lock = threading.Lock()
        self._max = max_entries
        self.encoded = 0  # texts sent to the encoder (cache misses)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        with self._lock:
            missing = sorted({t for t in texts if t not in self._cache})
        if missing:
            vectors = self.encoder.encode(missing)
            with self._lock:
                if len(self._cache) + len(missing) > self._max:
                    self._cache.clear()  # a simple bound; patterns are few, so this is a safety valve only
                self._cache.update(zip(missing, vectors, strict=True))
                self.encoded += len(missing)
        with self._lock:
            return np.stack([self._cache[t] for t in texts]) if texts else np.zeros((0, self.encoder.dim))


@dataclass
class ChainContext:
    """What features need about one chain of the AKG, computed once per request and chain."""

    chain: Chain
    question: np.ndarray
    chain_vector: np.ndarray
    step_vectors: np.ndarray  # one row per AKG step
    anchor: Anchor
    others: list[np.ndarray]  # neighbourhoods of the other constants' seeds
    target_code: int | None
    chain_type_codes: frozenset[int]
    relation_codes: frozenset[int]
    relation_walks: frozenset[tuple[int, str]]
    type_names: list[str]
    edge_names: list[str]
    seed_types: dict[int, int]


def build_context(
    chain: Chain,
    question: np.ndarray,
    anchor: Anchor,
    others: list[np.ndarray],
    texts: PathTexts,
    *,
    type_names: list[str],
    edge_names: list[str],
    node_types: np.ndarray,
) -> ChainContext:
    vectors = texts.embed([chain.text, *(s.text for s in chain.steps)])
    codes = {n: i for i, n in enumerate(type_names)}
    edges = {n: i for i, n in enumerate(edge_names)}
    return ChainContext(
        chain=chain,
        question=question,
        chain_vector=vectors[0],
        step_vectors=vectors[1:],
        anchor=anchor,
        others=others,
        target_code=codes.get(chain.target_type or ""),
        chain_type_codes=frozenset(codes[t] for t in chain.types if t in codes),
        relation_codes=frozenset(edges[r] for r in chain.relations if r in edges),
        relation_walks=frozenset((edges[r], w) for r, w in chain.relation_walks if r in edges),
        type_names=type_names,
        edge_names=edge_names,
        seed_types={int(s): int(node_types[s]) for s in anchor.seeds},
    )


def path_texts(ctx: ChainContext, state: PathState) -> tuple[str, str]:
    """(whole path, last hop) as anonymous text."""
    parts = []
    at = ctx.seed_types[state.seed]
    for step in state.steps:
        parts.append(
            step_text(ctx.type_names[at], ctx.edge_names[step.edge], ctx.type_names[step.node_type], step.walk)
        )
        at = step.node_type
    return "; ".join(parts), parts[-1]


def featurize(
    ctx: ChainContext,
    states: Sequence[PathState],
    path_vectors: np.ndarray,
    last_vectors: np.ndarray,
    rep_cosine: np.ndarray,
) -> np.ndarray:
    """(n, len(FEATURE_NAMES)) float32; row i describes states[i]."""
    n = len(states)
    if n == 0:
        return np.zeros((0, len(FEATURE_NAMES)), np.float32)
    chain = ctx.chain
    col: dict[str, np.ndarray] = {name: np.zeros(n, np.float64) for name in FEATURE_NAMES}
    # Question cosines enter as gaps to the best sibling: absolute cosine levels differ between SKBs (names,
    # text lengths), the margin to the best continuation much less.
    bi = path_vectors @ ctx.question
    col["bi_cosine_gap"][:] = bi - bi.max()
    col["chain_cosine"][:] = path_vectors @ ctx.chain_vector
    if ctx.step_vectors.size:
        col["last_step_cosine"][:] = (last_vectors @ ctx.step_vectors.T).max(axis=1)
    col["rep_cosine_gap"][:] = rep_cosine - rep_cosine.max()
    col["edge_known"][:] = sum(1 for s in chain.steps if s.relation) / max(1, len(chain.steps))
    col["has_others"][:] = float(bool(ctx.others))
    for i, state in enumerate(states):
        hops = [s.edge for s in state.steps]
        col["rel_in_chain"][i] = np.mean([h in ctx.relation_codes for h in hops])
        col["rel_walk_in_chain"][i] = np.mean([(s.edge, s.walk) in ctx.relation_walks for s in state.steps])
        col["last_rel_in_chain"][i] = float(hops[-1] in ctx.relation_codes)
        if ctx.relation_codes:
            col["chain_covered"][i] = len(ctx.relation_codes & set(hops)) / len(ctx.relation_codes)
        terminal = state.steps[-1].node_type
        col["type_match"][i] = 0.5 if ctx.target_code is None else float(terminal == ctx.target_code)
        col["type_on_chain"][i] = float(terminal in ctx.chain_type_codes)
        depth = state.depth
        col["hops"][i] = depth
        col["hops_short"][i] = float(depth < chain.min_hops)
        col["hops_in_range"][i] = float(chain.min_hops <= depth <= chain.max_hops)
        col["hops_over"][i] = float(depth > chain.max_hops)
        col["cluster_share"][i] = state.share
        col["seed_rank_inv"][i] = 1.0 / (1.0 + state.seed_rank)
        col["seed_name_cosine"][i] = ctx.anchor.name_cosine[state.seed_rank]
        if ctx.others:
            touched = [np.intersect1d(state.members, o, assume_unique=True).size > 0 for o in ctx.others]
            col["coverage"][i] = float(np.mean(touched))
        at = np.searchsorted(state.members, state.seed)
        col["returns_to_seed"][i] = float(at < state.members.size and state.members[at] == state.seed)
    return np.stack([col[name] for name in FEATURE_NAMES], axis=1).astype(np.float32)
