"""Step 5 of af: Algorithm 2 with scope expansion over the graph store. Serves the embedded strategy and the
grounding service."""

from __future__ import annotations

import numpy as np

from skbqa.query.context import QueryContext
from skbqa.query.grounded import ScopeResult
from skbqa.query.structured import StructuredQuery
from skbqa.stages.config import AfConfig
from skbqa.stages.grounding.relax import name_likeness, relaxations
from skbqa.stages.grounding.scope import expand_scope
from skbqa.stores.index import IndexStores


class GroundStep:
    def __init__(self, stores: IndexStores, type_codes: dict[str, int]) -> None:
        self._stores = stores
        self._type_codes = type_codes

    def run(
        self, query: QueryContext, parsed: StructuredQuery, ranked: dict[str, np.ndarray], config: AfConfig
    ) -> ScopeResult:
        with query.stage("ground"):
            scope = self._expand(parsed, ranked, config)
            if config.relax and scope.grounded and not scope.candidates.size:
                scope = self._relaxed(query, parsed, ranked, config) or scope
            target_set = ranked.get(parsed.target)
            target = parsed.symbols.get(parsed.target)
            if not scope.grounded and target_set is not None and target is not None and target.is_constant:
                # The answer is named itself ("which gene goes by the alias X"): its candidates in their ranked
                # order (exact names first), each its own level, so the best-named comes first.
                _, first = np.unique(target_set, return_index=True)
                ordered = target_set[np.sort(first)]
                levels = np.arange(1, ordered.size + 1)
                scope = ScopeResult(True, ordered, 0.0, 0, [], None, "the answer is named", levels)
            elif not scope.grounded and target_set is not None:
                # Attribute filters alone narrowed the target ("genes on chromosome 17 that mention X").
                ordered = np.unique(target_set)
                scope = ScopeResult(
                    True, ordered, 0.0, 0, [], None, "attribute filters only", np.ones_like(ordered)
                )
        return scope

    def _expand(self, parsed: StructuredQuery, ranked: dict[str, np.ndarray], config: AfConfig) -> ScopeResult:
        return expand_scope(
            parsed,
            ranked,
            self._stores.graph,
            node_types=self._stores.nodes.types,
            type_codes=self._type_codes,
            k=config.k,
            l_max=config.l_max,
            strict=config.strict,
        )

    def _relaxed(
        self, query: QueryContext, parsed: StructuredQuery, ranked: dict[str, np.ndarray], config: AfConfig
    ) -> ScopeResult | None:
        """Of the readings without one constant that the graph answers, the one without the least name-like
        constant; among equally name-like ones, the one the remaining constants' best-ranked nodes ground (the
        smallest scope that found an answer): the reading that fits the graph best (relax.py)."""
        best: tuple[tuple[int, float, int], str, ScopeResult, StructuredQuery] | None = None
        for order, (dropped, reading) in enumerate(relaxations(parsed)):
            kept = {name: ranked[name] for name in reading.symbols if name in ranked}
            scope = self._expand(reading, kept, config)
            if not (scope.grounded and scope.candidates.size):
                continue
            found_at = next((level for level, size in scope.iterations if size), 0.0)
            key = (name_likeness(parsed.symbols[dropped]), found_at, order)
            if best is None or key < best[0]:
                best = (key, dropped, scope, reading)
        if best is None:
            return None
        _, dropped, scope, reading = best
        query.notes["relaxed"] = {"dropped": list(parsed.symbols[dropped].names)}
        scope.relaxed = reading
        return scope
