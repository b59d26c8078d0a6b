"""From the search's winning paths to ranked answers (GRAPE §3.4 without the LLM).

Per chain, the best Stop patterns (at most `BeamConfig.patterns`) are re-queried over the whole graph, so every
node that instantiates a winning pattern is an answer — not only the beam's representatives. Every Stop pattern
counts fully (the judge called each complete; the paper likewise unions its matches), and a node's *join* is
the number of chains with a pattern reaching it, so nodes that satisfy every constant of the AKG come first (the
AKG's triplets meet at the target). When nothing stopped, the best Continue path ending on the target type
stands in with half weight (recorded as a fallback).

The paper's final LLM call picks among the candidates; without an LLM, ties inside a join level are broken by
the query's attribute constraints on the target (passing nodes first) and then, as the af strategy ranks its
grounded set, by cosine to the question mixed with BM25 over the question's leftover text constraints.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from skbqa.query.context import Candidate, QueryContext
from skbqa.query.structured import StructuredQuery
from skbqa.stages.ranking.fusion import min_max
from skbqa.stages.ranking.phrases import phrase_matches
from skbqa.stages.symbols.filters import apply_constraints
from skbqa.stores.attributes.catalog import AttributeCatalog
from skbqa.stores.index import IndexStores
from skbqa.strategies.grape.beam import SearchOutcome
from skbqa.strategies.grape.features import ChainContext
from skbqa.strategies.grape.paths import Explorer, PathState, Step

TEXT_WEIGHT = 0.5  # as the af strategy's step 6
FALLBACK_WEIGHT = 0.5  # a Continue path standing in for a chain where nothing stopped


@dataclass
class Pattern:
    chain: int
    state: PathState
    weight: float
    fallback: bool
    levels: list[np.ndarray] = field(default_factory=list)

    @property
    def answers(self) -> np.ndarray:
        return self.levels[-1]


def pattern_text(stores: IndexStores, state: PathState) -> str:
    """`Fidiria College (institution) <-affiliated_with- author`: the logical path schema of a pattern."""
    nodes = stores.nodes
    edges = stores.graph.edge_names
    types = nodes.schema.node_type_names
    out = f"{nodes.names[state.seed]} ({nodes.type_name(state.seed)})"
    for step in state.steps:
        edge = edges[step.edge]
        arrow = f" -{edge}-> " if step.walk == "out" else f" <-{edge}- "
        out += arrow + types[step.node_type]
    return out


def winning_patterns(
    contexts: list[ChainContext], outcomes: list[SearchOutcome], explorer: Explorer, limit: int
) -> list[Pattern]:
    patterns: list[Pattern] = []
    for i, (ctx, outcome) in enumerate(zip(contexts, outcomes, strict=True)):
        chosen: list[PathState] = []
        seen: set[tuple[int, tuple[Step, ...]]] = set()
        for state in outcome.stops:
            if state.key not in seen and len(chosen) < limit:
                seen.add(state.key)
                chosen.append(state)
        fallback = not chosen
        if fallback:
            typed = [s for s in outcome.alive if ctx.target_code in (None, s.steps[-1].node_type)]
            chosen = typed[:1]
        if not chosen:
            continue
        for state in chosen:
            levels = explorer.levels(state.seed, state.steps)
            patterns.append(Pattern(i, state, FALLBACK_WEIGHT if fallback else 1.0, fallback, levels))
    return patterns


def rank_answers(
    stores: IndexStores,
    query: QueryContext,
    parsed: StructuredQuery,
    patterns: list[Pattern],
    catalog: AttributeCatalog | None,
    limit: int,
) -> tuple[list[Candidate], dict[str, Any]]:
    """The best `limit` answers with their component scores; and a summary for the notes."""
    if not patterns:
        return [], {"answers": 0}
    keys = np.unique(np.concatenate([p.answers for p in patterns]))
    chains = sorted({p.chain for p in patterns})
    join = np.zeros(keys.size)
    best: dict[int, np.ndarray] = {}  # chain → index of the pattern reaching each key with the highest weight
    for chain in chains:
        weight = np.zeros(keys.size)
        which = np.full(keys.size, -1)
        for j, p in enumerate(patterns):
            if p.chain != chain:
                continue
            hit = np.isin(keys, p.answers, assume_unique=True) & (p.weight > weight)
            weight[hit] = p.weight
            which[hit] = j
        join += weight
        best[chain] = which
    attr, applied = _attribute_pass(parsed, keys, catalog)
    relevance, dense, lexical = _relevance(stores, query, parsed, keys)
    # Ties (e.g. two answers whose cosine and BM25 ranks cross) go to the explicit text match, then cosine.
    order = np.lexsort((keys, -dense, -lexical, -relevance, -attr, -np.round(join, 6)))
    candidates = []
    for i in order[:limit]:
        reached = {c: int(best[c][i]) for c in chains if best[c][i] >= 0}
        scores = {
            "join": float(join[i]),
            "attributes": float(attr[i]),
            "relevance": float(relevance[i]),
            "cosine": float(dense[i]),
            "text_bm25": float(lexical[i]),
            "path_score": max(patterns[j].state.score for j in reached.values()),
        }
        evidence = {"strand": "grape", "reached_by": reached}  # filled with paths for the returned top only
        candidates.append(
            Candidate(int(keys[i]), float(join[i] + attr[i] + relevance[i]), "grape", scores, evidence)
        )
    summary = {"answers": int(keys.size), "attribute_constraints_applied": applied}
    return candidates, summary


def add_path_evidence(
    stores: IndexStores, explorer: Explorer, patterns: list[Pattern], candidates: list[Candidate]
) -> None:
    """Replace `reached_by` with the pattern text and one bound path per chain (only for returned answers)."""
    nodes = stores.nodes
    for candidate in candidates:
        reached: dict[int, int] = candidate.evidence.pop("reached_by", {})
        paths = []
        for j in reached.values():
            p = patterns[j]
            bound = explorer.bound_path(p.levels, p.state.steps, candidate.position)
            paths.append(
                {
                    "pattern": pattern_text(stores, p.state),
                    "judge": p.state.label,
                    "path_score": round(p.state.score, 4),
                    "fallback": p.fallback,
                    "path": [{"id": int(nodes.ids[n]), "name": nodes.names[n]} for n in bound],
                }
            )
        candidate.evidence["paths"] = paths


def _attribute_pass(
    parsed: StructuredQuery, keys: np.ndarray, catalog: AttributeCatalog | None
) -> tuple[np.ndarray, int]:
    constraints = [c for c in parsed.constraints if c.symbol == parsed.target]
    if not constraints or catalog is None:
        return np.zeros(keys.size), 0
    result = apply_constraints(catalog, constraints, parsed.target_type)
    if result.positions is None:
        return np.zeros(keys.size), 0
    return np.isin(keys, result.positions).astype(np.float64), len(result.applied)


def _relevance(
    stores: IndexStores, query: QueryContext, parsed: StructuredQuery, keys: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    dense = stores.vectors["relations"].vectors_for(keys) @ query.embedding
    score = min_max(dense) if keys.size > 1 else np.ones(1, np.float32)
    lexical = np.zeros(keys.size, np.float32)
    if parsed.text_constraints:
        lexical = stores.bm25.scores(" ".join(parsed.text_constraints))[keys]
        if lexical.max() > 0:
            score = (1 - TEXT_WEIGHT) * score + TEXT_WEIGHT * min_max(lexical)
        score = score + phrase_matches(stores.nodes, parsed.text_constraints, keys)
    return score.astype(np.float64), dense, lexical
