"""Step 5 of af: Algorithm 2 with scope expansion over the graph store. Serves the embedded strategy and the
grounding service."""

from __future__ import annotations

import numpy as np

from skbqa.query.context import QueryContext
from skbqa.query.grounded import ScopeResult
from skbqa.query.structured import StructuredQuery
from skbqa.stages.config import AfConfig
from skbqa.stages.grounding.relax import loosenings, name_likeness, relaxations
from skbqa.stages.grounding.scope import expand_scope
from skbqa.stages.grounding.widen import hierarchies, widenings
from skbqa.stores.index import IndexStores


class GroundStep:
    def __init__(self, stores: IndexStores, type_codes: dict[str, int]) -> None:
        self._stores = stores
        self._type_codes = type_codes
        self._hierarchy = hierarchies(stores.nodes.schema)

    def run(
        self, query: QueryContext, parsed: StructuredQuery, ranked: dict[str, np.ndarray], config: AfConfig
    ) -> ScopeResult:
        with query.stage("ground"):
            scope = self._expand(parsed, ranked, config)
            if config.relax and scope.grounded and not scope.candidates.size:
                scope = (
                    self._loosened(query, parsed, ranked, config)
                    or self._widened(query, parsed, ranked, config, scope)
                    or self._relaxed(query, parsed, ranked, config)
                    or scope
                )
            elif config.relax and scope.grounded and _first_found(scope) > 1.0:
                scope = self._widened(query, parsed, ranked, config, scope) or scope
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

    def _widened(
        self,
        query: QueryContext,
        parsed: StructuredQuery,
        ranked: dict[str, np.ndarray],
        config: AfConfig,
        found: ScopeResult,
    ) -> ScopeResult | None:
        """The parse's answers were not found at its names' best-matched nodes: the reading that reaches a name's
        node through its type's hierarchy (widen.py), when that reading finds answers there."""
        for name, reading in widenings(parsed, self._hierarchy):
            scope = self._expand(reading, ranked, config)
            if scope.grounded and scope.candidates.size and _first_found(scope) <= 1.0 < _first_found(found):
                query.notes["widened"] = {"constant": list(parsed.symbols[name].names)}
                scope.relaxed = reading
                return scope
        return None

    def _loosened(
        self, query: QueryContext, parsed: StructuredQuery, ranked: dict[str, np.ndarray], config: AfConfig
    ) -> ScopeResult | None:
        """Before any name is dropped: the reading with one chosen edge left open (relax.loosenings) that the
        graph answers soonest (the smallest scope); the words may pick the wrong one of two edges joining the same
        two types, and no name of the question is lost by trying the others."""
        best: tuple[tuple[float, int], str, ScopeResult] | None = None
        for order, (edge, reading) in enumerate(loosenings(parsed)):
            scope = self._expand(reading, ranked, config)
            if not (scope.grounded and scope.candidates.size):
                continue
            found_at = next((level for level, size in scope.iterations if size), 0.0)
            if best is None or (found_at, order) < best[0]:
                scope.relaxed = reading
                best = ((found_at, order), edge, scope)
        if best is None:
            return None
        query.notes["loosened"] = {"edge": best[1]}
        return best[2]

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


def _first_found(scope: ScopeResult) -> float:
    """The scope (l) at which the grounding first found an answer; infinite when it found none."""
    return next((level for level, size in scope.iterations if size), float("inf"))
