"""`sage`: Structure-Aware Graph Expansion (paper §2.2, Listing 1) over a base strategy's seeds.

    S = TopK(BL(q), k)                      the base strategy's first `seeds` answers (option `seed`: af | hybrid)
    N = OneHopNeighbors(G, S)               their neighbours in the offline similarity graph (skbqa build-sage)
    R = TopK(BM25DenseRank(q, N), k')       0.6 · BM25 + 0.4 · cosine (relations vectors), min-max within N
    return Union(S, R)                      S in the base's order, then R by fused score

The paper returns the k seeds followed by the k′ re-ranked neighbours (it never re-ranks the seeds), and compares
at equal budgets: at k = k1 + k2 on OTT-QA, Recall@20 on STaRK. So the request's k is the *list length*, and the
paper's k is the option `seeds` (default 10) with `k_prime` (default = seeds): the first seeds + k′ = 20 answers
are the paper's context at the STaRK cut-off, against the base strategy's own first 20. Positions beyond
seeds + k′ (an eval depth of 100, for MRR) continue with the base's ranking, skipping what is already listed.

Policy (`policy`): "edge" is the paper's SAGE-Edge — no expansion when the base's structured query has explicit
edges (the af parse has triplets), so relational answers are not diluted by similar-looking neighbours; a base
without a parse (hybrid) always expands. "always" is SPARK+SAGE+Edge: expand every question. Other options are
passed to the base strategy (e.g. `sage[seed=af,reranker=local]`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from skbqa.common.errors import IndexStoreError, InvalidInputError
from skbqa.query.context import Candidate, QueryContext, Strategy
from skbqa.query.encoder import Encoder
from skbqa.stages.ranking.fusion import min_max
from skbqa.stores.index import IndexStores
from skbqa.strategies.sage.store import SIMILARITY_SIGNALS, Expansion, SageGraph, signal_names

logger = logging.getLogger(__name__)

BM25_WEIGHT = 0.6  # paper appendix E: α = 0.6 for BM25, β = 0.4 for embeddings
DEFAULT_SEEDS = 10
POLICIES = ("edge", "always")
SEEDS_SHOWN = 3  # seeds listed in an expansion's evidence


@dataclass(frozen=True)
class SageOptions:
    seed: str = "af"
    policy: str = "edge"
    seeds: int = DEFAULT_SEEDS
    k_prime: int | None = None  # None: as many as seeds
    base_options: Mapping[str, Any] | None = None

    @classmethod
    def parse(cls, options: Mapping[str, Any], bases: Mapping[str, Strategy]) -> SageOptions:
        own = {key: options[key] for key in ("seed", "policy", "seeds", "k_prime") if key in options}
        rest = {key: value for key, value in options.items() if key not in own}
        parsed = cls(**own, base_options=rest)
        choices = sorted(name for name in bases if name != SageStrategy.name)
        if parsed.seed not in choices:
            raise InvalidInputError(f"sage seed must be one of {', '.join(choices)}, got {parsed.seed!r}")
        if parsed.policy not in POLICIES:
            raise InvalidInputError(f"sage policy must be one of {', '.join(POLICIES)}, got {parsed.policy!r}")
        for key, low in (("seeds", 1), ("k_prime", 0)):
            value = getattr(parsed, key)
            if value is not None and (
                not isinstance(value, int) or isinstance(value, bool) or not low <= value <= 1000
            ):
                raise InvalidInputError(f"sage {key} must be an integer from {low} to 1000, got {value!r}")
        return parsed


def base_query(query: QueryContext, options: SageOptions) -> QueryContext:
    """The base strategy's view of the request: its own options; the question, embedding, timings and notes
    are shared with the sage request's context."""
    return replace(query, options=dict(options.base_options or {}))


class SageStrategy:
    name = "sage"

    def __init__(
        self, stores: IndexStores, bases: Mapping[str, Strategy], *, embedding_set: str = "relations"
    ) -> None:
        # `bases` may be the engine's own strategy table (this strategy included): it is read per request.
        self._stores = stores
        self._bases = bases
        self._embedding_set = embedding_set
        self._graph: SageGraph | None = None
        self._lock = threading.Lock()

    def warm(self, encoder: Encoder) -> None:
        """Load the graph if the index has one; without it only `sage` requests fail, not the whole engine."""
        try:
            self.graph()
        except IndexStoreError as exc:
            logger.info("sage strategy unavailable until the graph is built: %s", exc)

    def graph(self) -> SageGraph:
        with self._lock:
            if self._graph is None:
                graph = SageGraph.load(self._stores.directory)
                graph.check_built_for(self._stores.manifest, len(self._stores.nodes))
                self._graph = graph
            return self._graph

    def retrieve(self, query: QueryContext, k: int) -> list[Candidate]:
        options = SageOptions.parse(query.options, self._bases)
        self.graph()  # fail before running the base when the graph is missing
        query.embedding  # noqa: B018 -- embed once here, so the base's context below inherits the vector
        ranked = self._bases[options.seed].retrieve(base_query(query, options), k)
        return self.expand(query, options, ranked, k)

    def expand(
        self, query: QueryContext, options: SageOptions, ranked: list[Candidate], k: int
    ) -> list[Candidate]:
        """Listing 1 after the base: its first `seeds` answers, then k′ fused-ranked neighbours, then the rest of
        its ranking. `ranked` is the base's finished list (af: after step 8). The distributed form calls this
        in the ranking stage, or after step 8 in the reranker stage (skbqa.serving.stages.core), so both forms
        give the same list."""
        graph = self.graph()
        n_seeds = min(options.seeds, k)
        n_prime = min(options.seeds if options.k_prime is None else options.k_prime, k - n_seeds)
        seeds = ranked[:n_seeds]
        # The base's structured query, when it made one (af does; hybrid has none and always expands).
        skip = options.policy == "edge" and bool(query.notes.get("parsed", {}).get("triplets"))
        report: dict[str, Any] = {"seed": options.seed, "policy": options.policy, "seeds": len(seeds)}
        expansions: list[Candidate] = []
        if skip:
            report["expanded"] = False
            report["reason"] = "the structured query has explicit edges (SAGE-Edge keeps the seeds' ranking)"
        elif n_prime > 0 and seeds:
            expansions = self._expand(query, graph, seeds, n_prime, report)
        listed = {c.position for c in seeds} | {c.position for c in expansions}
        tail = [c for c in ranked[n_seeds:] if c.position not in listed]
        query.notes["sage"] = report
        return (seeds + expansions + tail)[:k]

    def _expand(
        self, query: QueryContext, graph: SageGraph, seeds: list[Candidate], n_prime: int, report: dict[str, Any]
    ) -> list[Candidate]:
        seed_positions = np.asarray([c.position for c in seeds], np.int64)
        with query.stage("sage_expand"):
            found = graph.expand(seed_positions)
            fresh = ~np.isin(found.neighbours, seed_positions)
            found = Expansion(found.seeds[fresh], found.neighbours[fresh], found.edges[fresh])
            pool = np.unique(found.neighbours)
        report.update(
            expanded=True, seeds_in_graph=int(graph.rich[seed_positions].sum()), neighbours=int(pool.size)
        )
        if pool.size == 0:
            report["added"] = 0
            return []
        with query.stage("sage_rank"):
            sparse = self._stores.bm25.scores(query.question)[pool]
            dense = self._stores.vectors[self._embedding_set].vectors_for(pool) @ query.embedding
            fused = BM25_WEIGHT * min_max(sparse) + (1 - BM25_WEIGHT) * min_max(dense)
            chosen = np.lexsort((pool, -fused))[:n_prime]
        seed_rank = {int(p): rank for rank, p in enumerate(seed_positions, start=1)}
        out = [
            Candidate(
                int(pool[i]),
                float(fused[i]),
                self.name,
                {"fused": float(fused[i]), "cosine": float(dense[i]), "bm25": float(sparse[i])},
                self._evidence(graph, found, int(pool[i]), seed_rank),
            )
            for i in chosen
        ]
        report["added"] = len(out)
        return out

    def _evidence(
        self, graph: SageGraph, found: Expansion, position: int, seed_rank: dict[int, int]
    ) -> dict[str, Any]:
        """The seeds this neighbour hangs off (best-ranked first), each with the edge's signals and scores."""
        nodes = self._stores.nodes
        rows = np.flatnonzero(found.neighbours == position)
        rows = rows[np.argsort([seed_rank[int(found.seeds[r])] for r in rows], kind="stable")]
        via: list[dict[str, Any]] = []
        for row in rows[:SEEDS_SHOWN]:
            seed, edge = int(found.seeds[row]), int(found.edges[row])
            entity = int(graph.entity[edge])
            via.append(
                {
                    "seed": {"id": int(nodes.ids[seed]), "name": nodes.names[seed], "rank": seed_rank[seed]},
                    "signals": signal_names(int(graph.signals[edge])),
                    "scores": {
                        s: round(float(v), 4) for s, v in zip(SIMILARITY_SIGNALS, graph.scores[edge], strict=True)
                    },
                    "shared_entity": None if entity < 0 else nodes.names[entity],
                }
            )
        return {
            "strand": "sage expansion (first-hop neighbour of a seed)",
            "via": via,
            "seed_edges": int(rows.size),
        }
