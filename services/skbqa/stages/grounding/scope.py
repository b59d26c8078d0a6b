"""Incremental scope expansion (AF-Retriever Algorithm 1, lines 5–10) around `ground_triplets`."""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from skbqa.query.grounded import GroundingResult, ScopeResult
from skbqa.query.structured import StructuredQuery, linked_to
from skbqa.stages.grounding.algorithm import ground_triplets
from skbqa.stages.grounding.sets import EMPTY
from skbqa.stores.graph.base import GraphStore

# ---------------------------------------------------------------------------------------------------- scope loop


def candidates_per_constant(scope: float, l_max: int) -> int:
    """S[l] takes the first round(l) candidates (half rounds up: l = 1.5 → 2), never more than l_max."""
    return min(math.floor(scope + 0.5), l_max)


def _grounding_component_has_constant(query: StructuredQuery, anchors: set[str] | None = None) -> bool:
    """Whether the target is linked through triplets to a constant, or to one of `anchors` (otherwise the graph
    strand cannot focus)."""
    constants = {s.name for s in query.constants} if anchors is None else anchors
    if not any(query.target in (t.head, t.tail) for t in query.triplets):
        return False
    return bool(linked_to(query.target, query.triplets) & constants)


def expand_scope(
    query: StructuredQuery,
    ranked_candidates: Mapping[str, np.ndarray],
    graph: GraphStore,
    *,
    node_types: np.ndarray,
    type_codes: Mapping[str, int],
    k: int = 20,
    l_max: int = 100,
    strict: bool = True,
    strict_types: bool | None = None,
    strict_edges: bool | None = None,
    max_rounds: int = 50,
    max_evidence: int = 3,
) -> ScopeResult:
    """Algorithm 1 lines 5–10: ground with the first l candidates per constant, growing l until ≥ k answers.

    l starts at 1 and grows as l ← l^1.5 + 0.5 (1, 1.5, 2.34, 4.07, 8.72, 26.25, 135.0, …); S[l] takes the first
    round(l) candidates of each constant (`candidates_per_constant`). The paper's loop guard `l < l_max` would
    never ground with l_max candidates (l jumps from 26.25 to 135.0 for l_max = 100) and would not run at all for
    l_max = 1, although its Table 19 reports results for l_max = 1; here the guard is l ≤ l_max and, when l
    jumps past l_max while fewer than k answers are found, a last grounding runs with l = l_max exactly. An
    iteration whose per-constant count equals the previous one (1.5 and 2.34 both take 2) or that cannot add a
    candidate (every constant's list is shorter) reuses the previous grounding; the loop stops once every list
    is exhausted. Entries of `ranked_candidates` for variables (attribute-filtered sets) are used whole.

    Without a constant, a query whose target is linked to an attribute-filtered variable ("genes on chromosome 21
    with some disease") is grounded once from those sets, whole.

    Ungrounded (graph strand skipped, the pipeline falls back to step 7): no triplet, no constant (nor filtered
    set), no triplet chain linking the target to one, or l_max < 1.
    """
    constants = [s.name for s in query.constants]
    filtered = {name for name in ranked_candidates if name not in constants}
    reason = ""
    if not query.triplets:
        reason = "the query has no triplet"
    elif not constants and not filtered:
        reason = "the query has no constant"
    elif not _grounding_component_has_constant(query, None if constants else filtered):
        reason = "no triplet chain links the target to a constant"
    elif l_max < 1:
        reason = "l_max < 1 disables graph grounding"
    if reason:
        return ScopeResult(False, EMPTY, 0.0, 0, [], None, reason)

    ranked = {name: np.asarray(ranked_candidates.get(name, EMPTY), np.int64) for name in constants}
    fixed = {name: arr for name, arr in ranked_candidates.items() if name not in ranked}
    longest = max((arr.size for arr in ranked.values()), default=0)

    def ground(count: int) -> GroundingResult:
        subset = {name: arr[:count] for name, arr in ranked.items()}
        return ground_triplets(
            query,
            {**fixed, **subset},
            graph,
            node_types=node_types,
            type_codes=type_codes,
            strict=strict,
            strict_types=strict_types,
            strict_edges=strict_edges,
            max_rounds=max_rounds,
            max_evidence=max_evidence,
        )

    if not constants:
        only = ground(0)
        size = int(only.candidates.size)
        return ScopeResult(True, only.candidates, 0.0, 0, [(0.0, size)], only, levels=np.ones(size, np.int64))
    iterations: list[tuple[float, int]] = []
    scope = 1.0  # the paper's l
    result: GroundingResult | None = None
    effective = -1  # per-constant count the current `result` was computed with, after exhausting lists
    count = 0
    seen = EMPTY
    seen_levels = EMPTY
    while scope <= l_max:
        count = candidates_per_constant(scope, l_max)
        if min(count, longest) != effective:
            result = ground(count)
            effective = min(count, longest)
            new = np.setdiff1d(result.candidates, seen, assume_unique=True)
            if new.size:
                seen = np.concatenate([seen, new])
                seen_levels = np.concatenate([seen_levels, np.full(new.size, effective, np.int64)])
        assert result is not None
        iterations.append((scope, int(result.candidates.size)))
        if result.candidates.size >= k or count >= l_max or count >= longest:
            break
        nxt = scope**1.5 + 0.5
        scope = nxt if nxt <= l_max else float(l_max)
    assert result is not None
    # Widening the scope only adds candidates in practice, but arc consistency does not promise it: report the
    # last grounding's set, each with the level it was first seen at.
    order = np.argsort(seen, kind="stable")
    at = np.searchsorted(seen[order], result.candidates)
    levels = seen_levels[order][at] if result.candidates.size else EMPTY
    return ScopeResult(True, result.candidates, scope, count, iterations, result, levels=levels)
