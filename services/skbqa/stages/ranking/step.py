"""Steps 6–7 of af (and the ablation rows that stop earlier): rank the grounded set and keep round(α·k) — cosine to
the question, mixed with BM25 over the question's text constraints when it has any; with `tiered`, answers
grounded with fewer candidates per constant come first — then fill up to k from the predicted type (hybrid cosine +
BM25 over documents that include relations). Serves the embedded strategy and the ranking service."""

from __future__ import annotations

import numpy as np

from skbqa.query.context import Candidate, QueryContext
from skbqa.query.grounded import ScopeResult
from skbqa.query.structured import StructuredQuery
from skbqa.stages.config import AfConfig
from skbqa.stages.ranking.evidence import grounded_evidence
from skbqa.stages.ranking.fusion import FusedPool, fused_pool, min_max
from skbqa.stages.ranking.phrases import phrase_matches
from skbqa.stores.index import IndexStores

FILL_POOL = 100
# Below this parse confidence the grounded answers no longer come first: the grounded and vector strands are merged
# by it (`blend`), so a wrong parse cannot push the vector strand's right answers out of the top.
TRUST_PARSE = 0.6
# Below this confidence (the target type was guessed and nothing in the parse supports it) step 7 searches every
# type.
TYPED_FILL_MIN = 0.25


def blend(grounded: list[Candidate], fill: list[Candidate], confidence: float) -> list[Candidate]:
    """The two ranked strands merged by rank, weighted by the parse's confidence: the i-th grounded answer weighs
    confidence / i, the j-th vector answer (1 − confidence) / j (i, j from 1); ties keep the grounded first."""
    weighted = [(confidence / (i + 1), 0, i, c) for i, c in enumerate(grounded)]
    weighted += [((1.0 - confidence) / (j + 1), 1, j, c) for j, c in enumerate(fill)]
    weighted.sort(key=lambda item: (-item[0], item[1], item[2]))
    return [c for *_, c in weighted]


class RankStep:
    def __init__(self, stores: IndexStores, type_codes: dict[str, int]) -> None:
        self._stores = stores
        self._type_codes = type_codes

    def run(
        self, query: QueryContext, parsed: StructuredQuery, scope: ScopeResult | None, config: AfConfig, k: int
    ) -> tuple[list[Candidate], int]:
        """The ranked list and how many of its first entries are the pipeline's k — the ones step 8 may reorder;
        the rest continue the list by step 7 when a longer list is asked for (MRR at depth 100)."""
        if scope is not None:
            query.notes["scope"] = {
                "grounded": scope.grounded,
                "reason": scope.reason,
                "iterations": scope.iterations,
                "candidates": int(scope.candidates.size),
            }
        if config.steps == "1-5":
            assert scope is not None
            top = self.grounded_candidates(parsed, scope, config.k)
            return top[:k], min(k, len(top))  # graph-only rows are measured on their own answers
        grounded = self._rank_grounded(query, parsed, scope, config.k, config) if scope is not None else []
        if config.steps == "1-6":
            return grounded[:k], min(k, len(grounded))
        taken = np.asarray([c.position for c in grounded], np.int64)
        confidence = parsed.confidence
        unsure = config.blend and confidence is not None and confidence < TRUST_PARSE and bool(grounded)
        wanted = config.k if unsure else config.k - len(grounded)
        refuted = config.blend and confidence is not None and _refuted(parsed, scope)
        # a type read off the relations of a parse the graph refutes is no better than a guess
        every_type = refuted and not parsed.type_named
        if refuted:
            query.notes["refuted"] = "the graph has no answer to this parse" + (
                ": the vector strand searches every type" if every_type else ""
            )
        # one pool for the pipeline's fill and for the rest of a longer list (MRR at depth 100)
        pool = self._fill_pool(query, config, taken, max(wanted, k - len(grounded)), every_type=every_type)
        fill = self._named_last(pool.candidates(wanted, "vss"), parsed)
        for candidate in fill:
            candidate.evidence["strand"] = "vector fill (step 7)"
        if unsure:
            assert confidence is not None
            top = blend(grounded, fill, confidence)[: config.k]
            query.notes["blend"] = {
                "confidence": confidence,
                "grounded_in_top": sum(c.source == "grounded" for c in top),
            }
        else:
            top = grounded + fill
        if k <= len(top):
            return top, len(top)  # step 8 reorders the pipeline's k before the caller cuts the list to k
        listed = {c.position for c in top}
        more = [c for c in pool.candidates(k + len(fill), "vss") if c.position not in listed][: k - len(top)]
        if len(more) < k - len(top) and pool.keys.size >= k - len(grounded):
            # the pool ran short of nodes outside the list (its own top were taken): search past them
            taken = np.asarray(sorted(listed), np.int64)
            more = self._fill_pool(query, config, taken, k - len(top), every_type=every_type).candidates(
                k - len(top), "vss"
            )
        for candidate in more:
            candidate.evidence["strand"] = "beyond the pipeline's k (step 7 order)"
        return top + more, len(top)

    def _named_last(self, fill: list[Candidate], parsed: StructuredQuery) -> list[Candidate]:
        """The vector strand with the nodes the question names as its constants after the others: a question
        asks for what is related to them ("kinds of *lookout*"), and their own name in the question makes them
        its nearest texts."""
        named = {n.lower() for s in parsed.symbols.values() for n in s.names if s.name != parsed.target}
        if not named:
            return fill
        names = self._stores.nodes.names
        return sorted(fill, key=lambda c: names[c.position].lower() in named)  # stable: order kept otherwise

    def grounded_candidates(self, parsed: StructuredQuery, scope: ScopeResult, limit: int) -> list[Candidate]:
        """Step 5's answers before ranking: those found with fewer candidates per constant first (the 1-5 row,
        and the distributed form's partial results)."""
        if not scope.grounded:
            return []
        order = np.lexsort((scope.candidates, scope.levels))
        return [self._grounded(parsed, scope, int(i), 0.0, {}) for i in order[:limit]]

    def _fill_pool(
        self, query: QueryContext, config: AfConfig, taken: np.ndarray, count: int, *, every_type: bool = False
    ) -> FusedPool:
        """Step 7's pool from the predicted type (at least `count` nodes when the index has them), minus `taken`;
        from every type with `every_type`."""
        parsed = query.notes.get("parsed", {})
        type_code = self._type_codes.get(parsed.get("predicted_type") or parsed.get("target_type") or "")
        confidence = parsed.get("confidence")
        if config.blend and confidence is not None and confidence < TYPED_FILL_MIN:
            type_code = None  # the target type itself is a guess: search every type, as plain vector search does
        if every_type:
            type_code = None
        with query.stage("fill"):
            pool = fused_pool(
                self._stores.bm25,
                self._stores.vectors[config.embedding_set],
                query,
                max(FILL_POOL, count),
                node_types=None if type_code is None else [type_code],
                exclude=taken,
            )
            matches = phrase_matches(self._stores.nodes, parsed.get("text", []), pool.keys)
            if matches.any():
                pool.fused = pool.fused + matches  # a verbatim phrase outranks any fused score (those are ≤ 1)
            return pool

    def _rank_grounded(
        self, query: QueryContext, parsed: StructuredQuery, scope: ScopeResult, k: int, config: AfConfig
    ) -> list[Candidate]:
        if not scope.grounded or not scope.candidates.size:
            return []
        with query.stage("rank_grounded"):
            keys = scope.candidates
            dense = self._stores.vectors[config.embedding_set].vectors_for(keys) @ query.embedding
            score = min_max(dense) if keys.size > 1 else np.ones(1, np.float32)
            lexical = np.zeros(keys.size, np.float32)
            if parsed.text_constraints and config.text_weight > 0:
                lexical = self._stores.bm25.scores(" ".join(parsed.text_constraints))[keys]
                if lexical.max() > 0:
                    score = (1 - config.text_weight) * score + config.text_weight * min_max(lexical)
            score = score + phrase_matches(self._stores.nodes, parsed.text_constraints, keys)
            primary = scope.levels if config.tiered else np.zeros(keys.size, np.int64)
            order = np.lexsort((keys, -score, primary))[: max(0, round(config.alpha * k))]
            return [
                self._grounded(
                    parsed,
                    scope,
                    int(i),
                    float(score[i]),
                    {
                        "cosine": float(dense[i]),
                        "text_bm25": float(lexical[i]),
                        "scope_level": int(scope.levels[i]),
                    },
                )
                for i in order
            ]

    def _grounded(
        self, parsed: StructuredQuery, scope: ScopeResult, i: int, score: float, scores: dict[str, float]
    ) -> Candidate:
        position = int(scope.candidates[i])
        evidence = grounded_evidence(self._stores, parsed, scope, position)
        return Candidate(position, score, "grounded", {"grounded": 1.0, **scores}, evidence)


def _refuted(parsed: StructuredQuery, scope: ScopeResult | None) -> bool:
    """The parse links the answer to named nodes and the graph has no node that fits it at any scope: some of its
    constants, relations or its target type are wrong (which, it cannot tell)."""
    return scope is not None and scope.grounded and not scope.candidates.size and bool(parsed.constants)
