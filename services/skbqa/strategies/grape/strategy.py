"""`grape`: GRAPE retrieval over the embedded stores, with no LLM in the loop.

Per request:
1. parse the question with the af strategy's parser and build the anonymous query graph (query_graph.py);
2. link each constant to its best few candidate nodes (anchors.py);
3. per constant, beam-search KG paths towards the target (beam.py: b = 10, D = 3, bi-encoder shortlist,
   relation clusters with deferred decompression, trained scorer and completeness judge);
4. re-query the winning path patterns for every answer and rank them (collect.py);
5. if fewer than k answers, fill up to k with the af strategy's ranking (same order af would give, minus the
   answers already listed) — the paper's final LLM aggregation has no counterpart here, and the fill keeps
   long lists (MRR at depth 100) comparable with the other strategies.
A question whose AKG links no constant to the target (e.g. "which phenotype is described as …") gives GRAPE
nothing to explore: the af ranking answers it, and the notes say so.

`query.notes["grape"]` records the AKG, each chain's winning pattern, the number of model calls (batched scorer
and judge invocations), the continuations scored, beam expansions and the seconds spent.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import replace
from typing import Any

from skbqa.common.errors import IndexStoreError, InvalidInputError, clip
from skbqa.query.context import Candidate, QueryContext
from skbqa.query.encoder import Encoder
from skbqa.query.structured import StructuredQuery
from skbqa.stores.index import IndexStores
from skbqa.strategies.af import AfStrategy
from skbqa.strategies.grape.anchors import find_anchors
from skbqa.strategies.grape.beam import BeamConfig, SearchOutcome, SearchStats, beam_search
from skbqa.strategies.grape.collect import add_path_evidence, pattern_text, rank_answers, winning_patterns
from skbqa.strategies.grape.features import ChainContext, PathTexts, build_context
from skbqa.strategies.grape.models import GrapeModels, load_models
from skbqa.strategies.grape.paths import Explorer
from skbqa.strategies.grape.query_graph import QueryGraph

logger = logging.getLogger(__name__)

OPTIONS = ("beam", "depth", "shortlist", "patterns", "fill")


def chain_contexts(
    stores: IndexStores, af: AfStrategy, query: QueryContext, graph: QueryGraph, texts: PathTexts, seeds: int
) -> list[ChainContext]:
    """One context per AKG chain whose constant has candidate nodes."""
    anchors = find_anchors(stores, af.lookups.lexicon(), query, graph.constants, per_constant=seeds)
    out = []
    for chain in graph.chains():
        anchor = anchors.get(chain.constant.name)
        if anchor is None:
            continue
        others = [a.neighbourhood for name, a in anchors.items() if name != chain.constant.name]
        out.append(
            build_context(
                chain,
                query.embedding,
                anchor,
                others,
                texts,
                type_names=stores.nodes.schema.node_type_names,
                edge_names=stores.graph.edge_names,
                node_types=stores.nodes.types,
            )
        )
    return out


class GrapeStrategy:
    name = "grape"

    def __init__(
        self,
        stores: IndexStores,
        af: AfStrategy | None = None,
        *,
        models: GrapeModels | None = None,
        config: BeamConfig | None = None,
        fill: bool = True,
    ) -> None:
        self._stores = stores
        self._af = af if af is not None else AfStrategy(stores)
        self._models = models  # loaded from INDEX_DIR/grape/ on first use when not given
        self.config = config or BeamConfig()
        self.fill = fill
        self._explorer = Explorer(stores.graph, stores.nodes.types, member_cap=self.config.member_cap)
        self._texts: PathTexts | None = None
        self._lock = threading.Lock()

    def models(self) -> GrapeModels:
        with self._lock:
            if self._models is None:
                self._models = load_models(self._stores.directory)
            return self._models

    def warm(self, encoder: Encoder) -> None:
        """Build the af structures and load the models; an index without models still serves other strategies,
        so their absence is logged here and reported by `retrieve`."""
        self._af.warm(encoder)
        try:
            self.models()
        except IndexStoreError as exc:
            logger.warning("grape: %s", exc)

    def texts(self, encoder: Encoder) -> PathTexts:
        with self._lock:
            if self._texts is None or self._texts.encoder.name != encoder.name:
                self._texts = PathTexts(encoder)
            return self._texts

    def _settings(self, options: dict[str, Any]) -> tuple[BeamConfig, bool]:
        unknown = set(options) - set(OPTIONS)
        if unknown:
            raise InvalidInputError(
                f"unknown grape option(s): {', '.join(clip(name) for name in sorted(unknown)[:3])}; known: {OPTIONS}"
            )
        config, fill = self.config, self.fill
        for key in ("beam", "depth", "shortlist", "patterns"):
            if key in options:
                value = options[key]
                if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= 100:
                    raise InvalidInputError(f"grape option {key} must be an integer from 1 to 100, got {value!r}")
                config = replace(config, **{key: value})
        if "fill" in options:
            if not isinstance(options["fill"], bool):
                raise InvalidInputError("grape option fill must be true or false")
            fill = options["fill"]
        return config, fill

    def retrieve(self, query: QueryContext, k: int) -> list[Candidate]:
        models = self.models()  # fails before any work when the index has no trained models
        config, fill = self._settings(query.options)
        started = time.perf_counter()
        texts = self.texts(query.encoder)
        encoded_before = texts.encoded
        with query.stage("parse"):
            parsed = self._af.parser.parse(query)
        graph = QueryGraph.from_structured(parsed)
        with query.stage("anchors"):
            contexts = chain_contexts(self._stores, self._af, query, graph, texts, config.seeds)
        stats = SearchStats()
        outcomes: list[SearchOutcome] = []
        with query.stage("explore"):
            for ctx in contexts:
                outcome = beam_search(
                    ctx, self._explorer, models, texts, self._stores.vectors["relations"], config
                )
                stats.add(outcome.stats)
                outcomes.append(outcome)
        with query.stage("requery"):
            patterns = winning_patterns(contexts, outcomes, self._explorer, config.patterns)
            top, summary = rank_answers(
                self._stores,
                query,
                parsed,
                patterns,
                self._af.lookups.catalog() if parsed.constraints else None,
                k,
            )
            add_path_evidence(self._stores, self._explorer, patterns, top)
        notes: dict[str, Any] = {
            "akg": graph.describe(),
            "target": f"{graph.nodes[graph.target].label} ({graph.target_type or '?'})",
            "chains": [self._chain_note(ctx, out) for ctx, out in zip(contexts, outcomes, strict=True)],
            "model_calls": stats.model_calls,
            "scored": stats.scored,
            "expansions": stats.expansions,
            "clusters": stats.clusters,
            "texts_encoded": texts.encoded - encoded_before,
            **summary,
            "fallback": self._fallback(parsed, graph, contexts, patterns),
        }
        notes["seconds"] = round(time.perf_counter() - started, 4)
        query.notes["grape"] = notes
        if fill and len(top) < k:
            top += self._fill(query, k, top)
        notes["filled"] = sum(1 for c in top if c.source != "grape")
        return top[:k]

    def _chain_note(self, ctx: ChainContext, outcome: SearchOutcome) -> dict[str, Any]:
        ids = self._stores.nodes.ids
        best = outcome.stops[0] if outcome.stops else None
        return {
            "constant": ctx.chain.constant.label,
            "chain": ctx.chain.text,
            "seeds": [int(ids[s]) for s in ctx.anchor.seeds],
            "stops": len(outcome.stops),
            "winner": pattern_text(self._stores, best) if best else None,
            "winner_score": round(best.score, 4) if best else None,
            "levels": outcome.stats.levels,
        }

    @staticmethod
    def _fallback(
        parsed: StructuredQuery, graph: QueryGraph, contexts: list[ChainContext], patterns: list[Any]
    ) -> str | None:
        if not graph.constants:
            return "no constant in the query: af ranking"
        if not contexts:
            return "no constant with candidates linked to the target: af ranking"
        if not patterns:
            return "no path reached the target: af ranking"
        if all(p.fallback for p in patterns):
            return "no path judged complete: best continuing path re-queried"
        return None

    def _fill(self, query: QueryContext, k: int, taken: list[Candidate]) -> list[Candidate]:
        """The af ranking minus what GRAPE already returned. af runs on its own context (af rejects grape's
        options) that reuses the question's embedding; its notes are kept under notes["af"]."""
        own = QueryContext(query.question, query.encoder, _embedding=query.embedding)
        with query.stage("af_fill"):
            ranked = self._af.retrieve(own, k)
        query.notes["af"] = own.notes
        have = {c.position for c in taken}
        out = []
        for candidate in ranked:
            if candidate.position in have:
                continue
            candidate.evidence = {**candidate.evidence, "strand": f"af fill ({candidate.source})"}
            out.append(candidate)
        return out[: max(0, k - len(taken))]
