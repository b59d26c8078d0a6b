"""The safe executor of SPARK plans: every step runs on skbqa's own stores, never in a database.

- search: hybrid semantic search for the step's text — cosine over the `search_embedding` vectors and BM25, each
  over a pool of 100, fused like `strategies.hybrid` — restricted to the step's type and, with `within`, to an
  earlier step's nodes; the top `k` are kept.
- cypher: the text is parsed by `parse_cypher` (the MATCH / WHERE / RETURN subset; anything else is a warning,
  nothing is ever executed) and grounded with the af machinery: named nodes get step 4's candidates (name
  lexicon, then name vectors), attribute conditions become hard filters (`apply_constraints`), variables bound
  with `from` start as the earlier step's nodes, and the triplets are grounded over the CSR graph —
  `expand_scope` (the widening loop; answers keep the level they were found at) when a named node is linked to
  the target, else `ground_triplets` from the bound or filtered sets. A target linked to nothing that narrows
  it (no named node, binding or filter) gives no nodes and a warning rather than "every node of that type".
  OR / UNION alternatives are grounded one by one and united.
- intersect / union: set operations on the inputs' nodes.

Unknown labels and edge types are dropped with warnings (the Cypher parser in strict mode; search types are
mapped to a near-identical label or dropped), every step keeps at most `max_set` nodes, and steps not started
before `deadline_s` are skipped. Each node carries a *tier* — the number of candidates per named node needed to
reach it (1 = through the named nodes' best candidates) — which the strategy ranks by first, as af step 6 does.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from skbqa.query.context import QueryContext
from skbqa.query.grounded import ScopeResult
from skbqa.query.structured import StructuredQuery, parse_summary
from skbqa.stages.grounding.algorithm import ground_triplets
from skbqa.stages.grounding.scope import expand_scope
from skbqa.stages.parse.cypher.parser import parse_cypher
from skbqa.stages.parse.cypher.schema import closest_type
from skbqa.stages.ranking.evidence import grounded_evidence
from skbqa.stages.ranking.fusion import min_max
from skbqa.stages.symbols.candidates import constant_candidates
from skbqa.stores.index import IndexStores
from skbqa.strategies.af import AfStrategy
from skbqa.strategies.hybrid import DEFAULT_POOL
from skbqa.strategies.spark.config import SparkConfig
from skbqa.strategies.spark.plan import CombineStep, CypherStep, Plan, SearchStep, Step

EMPTY = np.zeros(0, np.int64)
BEST_TIER = 1  # search hits, filtered / bound sets and exact name matches: as good as a level-1 grounding
UNREACHED = np.iinfo(np.int64).max  # the tier of a node a combine input does not hold


@dataclass
class StepResult:
    step: Step
    positions: np.ndarray  # sorted unique node positions
    tiers: np.ndarray  # parallel to positions; smaller is better
    warnings: list[str] = field(default_factory=list)
    detail: dict[str, Any] = field(default_factory=dict)
    texts: list[str] = field(default_factory=list)  # words for the final BM25 ranking
    groundings: list[tuple[StructuredQuery, ScopeResult]] = field(default_factory=list)  # for evidence

    def tiers_at(self, positions: np.ndarray) -> np.ndarray:
        """This step's tier of each position (`UNREACHED` where the step does not hold it)."""
        out = np.full(positions.size, UNREACHED, np.int64)
        if self.positions.size and positions.size:
            at = np.minimum(np.searchsorted(self.positions, positions), self.positions.size - 1)
            hit = self.positions[at] == positions
            out[hit] = self.tiers[at[hit]]
        return out

    def summary(self, ids: np.ndarray) -> dict[str, Any]:
        return {
            "id": self.step.id,
            "nodes": int(self.positions.size),
            "first": [int(ids[p]) for p in self.positions[np.lexsort((self.positions, self.tiers))][:5]],
            **self.detail,
            "warnings": self.warnings,
        }


@dataclass
class Execution:
    results: dict[str, StepResult]
    answer: StepResult | None
    answer_type: str | None  # the plan's target type when it names a known label, else the answer step's type
    warnings: list[str]

    @property
    def texts(self) -> list[str]:
        return list(dict.fromkeys(t for r in self.results.values() for t in r.texts))

    def steps_holding(self, position: int) -> list[str]:
        return [i for i, r in self.results.items() if r.tiers_at(np.asarray([position]))[0] != UNREACHED]

    def graph_evidence(self, stores: IndexStores, position: int) -> dict[str, Any]:
        """Triplets and conditions that put `position` in the first graph query that holds it."""
        for result in self.results.values():
            for parsed, scope in result.groundings:
                if scope.result is not None and np.isin(position, scope.candidates):
                    evidence = grounded_evidence(stores, parsed, scope, position)
                    return {"triplets": evidence["triplets"], "constraints": evidence["constraints"]}
        return {}


def _empty(step: Step, *warnings: str, **detail: Any) -> StepResult:
    return StepResult(step, EMPTY, EMPTY, list(warnings), dict(detail))


def _component(parsed: StructuredQuery) -> set[str]:
    """The symbols linked to the target through triplets (the target included)."""
    seen, stack = {parsed.target}, [parsed.target]
    while stack:
        current = stack.pop()
        for t in parsed.triplets:
            for a, b in ((t.head, t.tail), (t.tail, t.head)):
                if a == current and b not in seen:
                    seen.add(b)
                    stack.append(b)
    return seen


class PlanExecutor:
    def __init__(self, stores: IndexStores, af: AfStrategy) -> None:
        self._stores = stores
        self._af = af
        self._schema = stores.nodes.schema
        self._type_codes = {t.name: i for i, t in enumerate(self._schema.node_types)}

    @property
    def type_codes(self) -> dict[str, int]:
        return dict(self._type_codes)

    def resolve_type(self, name: str | None, where: str, warnings: list[str]) -> str | None:
        """A schema label for what the plan wrote: exact, else a near-identical one (case, plural), else None."""
        if not name:
            return None
        known = self._schema.node_type_names
        if name in known:
            return name
        close = closest_type(name, known)
        if close is None:
            warnings.append(f"{where}: label {name!r} is not in the schema; dropped")
        else:
            warnings.append(f"{where}: label {name!r} read as {close!r}")
        return close

    def execute(self, query: QueryContext, plan: Plan, config: SparkConfig, k: int) -> Execution:
        deadline = time.monotonic() + config.deadline_s
        warnings: list[str] = []
        results: dict[str, StepResult] = {}
        searches = [s for s in plan.steps if isinstance(s, SearchStep)]
        encoded = query.encode_with_question([s.text for s in searches])  # one encoder call for every search
        vectors = dict(zip([s.id for s in searches], encoded, strict=True))
        skipped: list[str] = []
        for step in plan.steps:
            if time.monotonic() > deadline:
                skipped.append(step.id)
                result = _empty(step, kind=type(step).__name__, skipped=True)
            elif isinstance(step, SearchStep):
                with query.stage("spark.search"):
                    result = self._search(step, vectors[step.id], results, config)
            elif isinstance(step, CypherStep):
                with query.stage("spark.cypher"):
                    result = self._cypher(query, step, results, config, k)
            else:
                with query.stage("spark.combine"):
                    result = self._combine(step, results)
            results[step.id] = self._cap(result, config.max_set)
        if skipped:
            warnings.append(f"plan deadline of {config.deadline_s:g}s passed; skipped: {', '.join(skipped)}")
        answer = results.get(plan.answer or "")
        answer_type = self.resolve_type(plan.target_type, "target_type", warnings)
        if answer is not None and answer.positions.size:
            codes = np.unique(self._stores.nodes.types[answer.positions])
            found = [self._schema.node_types[int(c)].name for c in codes]
            if answer_type is None and len(found) == 1:
                answer_type = found[0]
            elif answer_type is not None and answer_type not in found:
                warnings.append(f"target_type {answer_type!r} differs from the answer's types {found}")
        return Execution(results, answer, answer_type, warnings)

    @staticmethod
    def _cap(result: StepResult, max_set: int) -> StepResult:
        if result.positions.size <= max_set:
            return result
        keep = np.sort(np.lexsort((result.positions, result.tiers))[:max_set])
        result.warnings.append(f"{result.positions.size} nodes; the best {max_set} kept")
        result.positions, result.tiers = result.positions[keep], result.tiers[keep]
        return result

    # --- search ---------------------------------------------------------------------------------------------

    def _search(
        self, step: SearchStep, vector: np.ndarray, results: dict[str, StepResult], config: SparkConfig
    ) -> StepResult:
        warnings: list[str] = []
        type_name = self.resolve_type(step.type, f"step {step.id!r}", warnings)
        detail: dict[str, Any] = {"kind": "search", "type": type_name, "k": step.k}
        within = None
        if step.within is not None:
            within = results[step.within].positions
            detail["within"] = step.within
            if within.size == 0:
                return _empty(step, *warnings, **detail)
        node_types = None if type_name is None else [self._type_codes[type_name]]
        keys = self.hybrid_search(step.text, vector, step.k, node_types, within, config)
        found = np.unique(keys)
        return StepResult(step, found, np.full(found.size, BEST_TIER), warnings, detail, [step.text])

    def hybrid_search(
        self,
        text: str,
        vector: np.ndarray,
        k: int,
        node_types: list[int] | None,
        within: np.ndarray | None,
        config: SparkConfig,
    ) -> np.ndarray:
        """The top `k` positions for `text` by fused cosine + BM25, each retriever proposing a pool of 100."""
        vectors, bm25 = self._stores.vectors[config.search_embedding], self._stores.bm25
        pool = max(k, DEFAULT_POOL)
        dense_keys = vectors.search(vector[None, :], pool, node_types=node_types, keys=within)[0].keys
        sparse_all = bm25.scores(text)
        mask = sparse_all > 0
        if node_types is not None:
            mask &= np.isin(bm25.node_types, node_types)
        if within is not None:
            inside = np.zeros(mask.size, bool)
            inside[within] = True
            mask &= inside
        rows = np.flatnonzero(mask)
        if rows.size > pool:
            rows = rows[np.argpartition(-sparse_all[rows], pool - 1)[:pool]]
        keys = np.union1d(dense_keys, rows).astype(np.int64)
        if keys.size == 0:
            return EMPTY
        dense = vectors.vectors_for(keys) @ vector  # rows come back in ascending key order, like `keys`
        fused = config.dense_weight * min_max(dense) + (1 - config.dense_weight) * min_max(sparse_all[keys])
        return keys[np.lexsort((keys, -fused))[:k]]

    # --- cypher ---------------------------------------------------------------------------------------------

    def _cypher(
        self, query: QueryContext, step: CypherStep, results: dict[str, StepResult], config: SparkConfig, k: int
    ) -> StepResult:
        parsed = parse_cypher(step.cypher, self._schema, mode="strict" if config.strict else "lenient")
        warnings = [f"step {step.id!r}: {w}" for w in parsed.warnings]
        detail: dict[str, Any] = {"kind": "cypher", "parsed": parse_summary(parsed)}
        if not parsed.target or parsed.target not in parsed.symbols:
            return _empty(step, *warnings, f"step {step.id!r}: the query returns no node variable", **detail)
        bound: dict[str, np.ndarray] = {}
        for variable, ref in step.bind:
            if variable in parsed.symbols:
                bound[variable] = results[ref].positions
            else:
                warnings.append(f"step {step.id!r}: 'from' names {variable!r}, which the query does not use")
        if bound:
            detail["from"] = {v: int(p.size) for v, p in bound.items()}
        positions, tiers = EMPTY, EMPTY
        result = StepResult(step, EMPTY, EMPTY, warnings, detail)
        for variant in parsed.alternatives or [parsed]:
            found, levels = self._ground(query, step.id, variant, bound, config, k, result)
            union = np.union1d(positions, found)
            old = StepResult(step, positions, tiers).tiers_at(union)
            new = StepResult(step, found, levels).tiers_at(union)
            positions, tiers = union, np.minimum(old, new)
        result.positions, result.tiers = positions, tiers
        return result

    def _ground(
        self,
        query: QueryContext,
        step_id: str,
        parsed: StructuredQuery,
        bound: dict[str, np.ndarray],
        config: SparkConfig,
        k: int,
        out: StepResult,
    ) -> tuple[np.ndarray, np.ndarray]:
        """One complete query (no alternatives) → (sorted target positions, their tiers); notes go to `out`."""
        nodes = self._stores.nodes
        ranked: dict[str, np.ndarray] = {}
        exact: dict[str, np.ndarray] = {}
        constants = parsed.constants
        noted = len(parsed.warnings)
        # af step 4: conditions as hard filters; one that cannot be applied joins a named node's search string
        # or, for a variable, the text constraints (ranking words)
        passing, extra_words = self._af.symbols.filter(parsed) if parsed.constraints else ({}, {})
        if constants:
            lexicon = self._af.lookups.lexicon()
            vectors = self._af.symbols.search_vectors(query, constants, extra_words)
            for constant, own in zip(constants, vectors, strict=True):
                ranked[constant.name] = constant_candidates(
                    constant,
                    own,
                    lexicon=lexicon,
                    names=self._stores.vectors["name"],
                    node_types=nodes.types,
                    type_code=self._type_codes.get(constant.type or ""),
                    l_max=config.l_max,
                )
                exact[constant.name] = np.concatenate(
                    [EMPTY, *(lexicon.positions(n, original=n) for n in constant.names)]
                )
        for restriction in (passing, bound):
            for name, allowed in restriction.items():
                current = ranked.get(name)
                ranked[name] = allowed if current is None else current[np.isin(current, allowed)]
        out.warnings.extend(f"step {step_id!r}: {w}" for w in parsed.warnings[noted:])
        out.texts.extend(parsed.text_constraints)

        target, component = parsed.target, _component(parsed)
        linked = [c.name for c in constants if c.name in component]
        if not any(t.head in component for t in parsed.triplets):  # the target stands alone
            if target not in ranked:
                out.warnings.append(
                    f"step {step_id!r}: nothing narrows '{target}' (no named node, 'from' binding or condition)"
                )
                return EMPTY, EMPTY
            found = np.unique(ranked[target])
            code = self._type_codes.get(parsed.symbols[target].type or "")
            if code is not None:
                found = found[nodes.types[found] == code]
            best = np.isin(found, exact.get(target, found))
            return found, np.where(best, BEST_TIER, config.l_max).astype(np.int64)
        if linked:
            scope = expand_scope(
                parsed,
                ranked,
                self._stores.graph,
                node_types=nodes.types,
                type_codes=self._type_codes,
                k=k,
                l_max=config.l_max,
                strict=config.strict,
            )
            out.detail.setdefault("scope", []).append({"reason": scope.reason, "iterations": scope.iterations})
        elif any(name in component for name in ranked):
            grounding = ground_triplets(
                parsed,
                ranked,
                self._stores.graph,
                node_types=nodes.types,
                type_codes=self._type_codes,
                strict=config.strict,
            )
            levels = np.full(grounding.candidates.size, BEST_TIER, np.int64)
            scope = ScopeResult(True, grounding.candidates, 0.0, 0, [], grounding, levels=levels)
        else:
            out.warnings.append(
                f"step {step_id!r}: nothing anchors the pattern around '{target}' "
                "(no named node, 'from' binding or condition)"
            )
            return EMPTY, EMPTY
        if scope.result is not None:
            out.warnings.extend(f"step {step_id!r}: {w}" for w in scope.result.warnings)
        out.groundings.append((parsed, scope))
        order = np.argsort(scope.candidates, kind="stable")
        return scope.candidates[order].astype(np.int64), scope.levels[order].astype(np.int64)

    # --- combine --------------------------------------------------------------------------------------------

    @staticmethod
    def _combine(step: CombineStep, results: dict[str, StepResult]) -> StepResult:
        inputs = [results[i] for i in step.inputs]
        positions = inputs[0].positions
        for other in inputs[1:]:
            positions = (np.intersect1d if step.op == "intersect" else np.union1d)(positions, other.positions)
        stacked = np.stack([r.tiers_at(positions) for r in inputs]) if positions.size else np.zeros((1, 0))
        # a node is as well supported as its weakest input (intersect) or its strongest (union)
        tiers = (stacked.max(axis=0) if step.op == "intersect" else stacked.min(axis=0)).astype(np.int64)
        detail = {"kind": step.op, "inputs": list(step.inputs)}
        return StepResult(step, positions.astype(np.int64), tiers, [], detail)
