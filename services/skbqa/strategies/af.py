"""`af`: the AF-Retriever pipeline (Algorithm 1) over the embedded stores.

1–3  parse the question (encoder parser by default; the LLM parser when configured) into a StructuredQuery;
4    symbol candidates: up to l_max nodes per constant (exact names/aliases, then name-vector search), and
     attribute-filtered sets for symbols with hard constraints;
5    ground the triplets, widening the scope l ← l^1.5 + 0.5 until ≥ k answers or l_max (grounding/scope.py);
6    rank the grounded set and keep round(α·k): cosine to the question, mixed with BM25 over the question's text
     constraints when it has any; with `tiered`, answers grounded with fewer candidates per constant come first;
7    fill up to k from the predicted type (hybrid cosine + BM25 over documents that include relations);
8    rerank the k (local scored reranker by default; LLM rerankers when configured).
`steps` selects the paper's ablation rows: 1+7, 1-5, 1-6, 1-7, 1-8.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import replace

import numpy as np

from skbqa.common.errors import InvalidInputError
from skbqa.grounding.scope import ScopeResult, expand_scope
from skbqa.models.chat import ChatModel, LlmError
from skbqa.models.encoder import Encoder
from skbqa.parser.attribute_mentions import AttributeSpotter
from skbqa.parser.base import Parser
from skbqa.parser.query import AttributeConstraint, StructuredQuery, Symbol
from skbqa.reranker.base import Reranker
from skbqa.stores.index import IndexStores
from skbqa.strategies.af_config import AfConfig
from skbqa.strategies.af_evidence import grounded_evidence, parse_summary
from skbqa.strategies.base import Candidate, QueryContext
from skbqa.strategies.hybrid import fused_pool, min_max
from skbqa.strategies.phrases import phrase_matches
from skbqa.symbols.attributes import AttributeCatalog
from skbqa.symbols.candidates import constant_candidates
from skbqa.symbols.filters import apply_constraints
from skbqa.symbols.lexicon import NAME, NameLexicon

FILL_POOL = 100


class AfStrategy:
    name = "af"

    def __init__(
        self,
        stores: IndexStores,
        *,
        parser: Parser | None = None,
        chat: ChatModel | None = None,
        rerankers: Mapping[str, Reranker] | None = None,
        config: AfConfig | None = None,
    ) -> None:
        self._stores = stores
        self.config = config or AfConfig()
        self.config.validate()
        if rerankers is None:
            from skbqa.reranker.registry import LLM_RERANKERS, build_reranker

            # Without an LLM: the local reranker; the LLM rerankers when a ChatModel is given.
            names = ["local", *(LLM_RERANKERS if chat is not None else ())]
            rerankers = {name: build_reranker(name, stores, chat) for name in names}
        self._rerankers = dict(rerankers)
        self._lexicon: NameLexicon | None = None
        self._lock = threading.Lock()
        self._type_codes = {t.name: i for i, t in enumerate(stores.nodes.schema.node_types)}
        self._catalog: AttributeCatalog | None = None
        self._spotter: AttributeSpotter | None = None
        from skbqa.parser.encoder_parser import EncoderParser

        self._encoder_parser = EncoderParser(
            stores,
            self.lexicon,
            attribute_spotter=lambda text, node_type: self.spotter()(text, node_type),
            guess_target_type=self.guess_target_type,
        )
        self._parsers: dict[str, Parser] = {"encoder": parser or self._encoder_parser}
        if chat is not None:
            from skbqa.parser.llm_parser import LlmParser

            self._parsers["llm"] = LlmParser.from_stores(
                stores, chat, mode="strict" if self.config.strict else "lenient"
            )
            if config is None:
                self.config = replace(self.config, parser="llm")

    def use_rerankers(self, rerankers: Mapping[str, Reranker]) -> None:
        """Serve step 8 with these rerankers (e.g. Ray Serve deployments) instead of the in-process ones."""
        self._rerankers.update(rerankers)

    def warm(self, encoder: Encoder) -> None:
        """Build what the first request would otherwise pay for (lexicon, attribute catalog, edge embeddings)."""
        self.lexicon()
        spotter = self.spotter()
        for node_type in self._stores.nodes.schema.node_type_names:
            spotter.prepare(node_type)
        self._encoder_parser.warm(encoder)

    @property
    def parser(self) -> Parser:
        """The parser used unless a request names another."""
        return self._parsers[self.config.parser]

    def lexicon(self) -> NameLexicon:
        """Built on first use (a few seconds for 100k nodes), then shared by every request."""
        with self._lock:
            if self._lexicon is None:
                self._lexicon = NameLexicon.build(self._stores.nodes)
            return self._lexicon

    def catalog(self) -> AttributeCatalog:
        """Attribute columns for hard filters and for spotting values in questions; built on first use."""
        with self._lock:
            if self._catalog is None:
                self._catalog = AttributeCatalog.build(self._stores.nodes)
            return self._catalog

    def spotter(self) -> AttributeSpotter:
        catalog = self.catalog()
        with self._lock:
            if self._spotter is None:
                self._spotter = AttributeSpotter(catalog)
            return self._spotter

    def guess_target_type(self, query: QueryContext) -> str | None:
        """Without a type word: the type with the largest summed cosine among the question's 20 nearest nodes."""
        hits = self._stores.vectors[self.config.embedding_set].search(query.embedding[None, :], 20)[0]
        if not hits.keys.size:
            return None
        codes = self._stores.nodes.types[hits.keys]
        totals = np.bincount(codes, weights=np.maximum(hits.scores, 0.0))
        return self._stores.nodes.schema.node_types[int(np.argmax(totals))].name

    # ------------------------------------------------------------------------------------------------ retrieve

    def retrieve(self, query: QueryContext, k: int) -> list[Candidate]:
        """The pipeline's top `config.k`, then (for longer lists, e.g. MRR at depth 100) step 7's next best.

        The same stage methods run one after another here and, in the distributed form, one per service
        (skbqa.distributed.stages): `parse` → `symbols` → `ground` → `rank` → `rerank`.
        """
        config = self.config.with_options(query.options)
        parsed = self.parse(query, config)
        ranked = self.symbols(query, parsed, config) if self.grounds(config) else None
        scope = self.ground(query, parsed, ranked, config) if ranked is not None else None
        candidates, head = self.rank(query, parsed, scope, config, k)
        return self.rerank(query, parsed, candidates, head, config)

    @staticmethod
    def grounds(config: AfConfig) -> bool:
        """Whether steps 4–5 run (the 1+7 row skips the graph strand)."""
        return config.steps != "1+7"

    def parse(self, query: QueryContext, config: AfConfig) -> StructuredQuery:
        """Steps 1–3."""
        with query.stage("parse"):
            parsed = self._parse(query, config)
        query.notes["parsed"] = parse_summary(parsed)
        return parsed

    def rank(
        self, query: QueryContext, parsed: StructuredQuery, scope: ScopeResult | None, config: AfConfig, k: int
    ) -> tuple[list[Candidate], int]:
        """Steps 6–7 (and the ablation rows that stop earlier). Returns the ranked list and how many of its first
        entries are the pipeline's k — the ones step 8 may reorder; the rest continue the list by step 7 when a
        longer list is asked for (MRR at depth 100)."""
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
        fill = self._fill(query, config, taken, config.k - len(grounded))
        for candidate in fill:
            candidate.evidence["strand"] = "vector fill (step 7)"
        top = grounded + fill
        if k <= len(top):
            return top, len(top)  # step 8 reorders the pipeline's k before the caller cuts the list to k
        taken = np.asarray([c.position for c in top], np.int64)
        more = self._fill(query, config, taken, k - len(top))
        for candidate in more:
            candidate.evidence["strand"] = "beyond the pipeline's k (step 7 order)"
        return top + more, len(top)

    def grounded_candidates(self, parsed: StructuredQuery, scope: ScopeResult, limit: int) -> list[Candidate]:
        """Step 5's answers before ranking: those found with fewer candidates per constant first (the 1-5 row,
        and the distributed form's partial results)."""
        if not scope.grounded:
            return []
        order = np.lexsort((scope.candidates, scope.levels))
        return [self._grounded(parsed, scope, int(i), 0.0, {}) for i in order[:limit]]

    def rerank(
        self,
        query: QueryContext,
        parsed: StructuredQuery | None,
        candidates: list[Candidate],
        head: int,
        config: AfConfig,
    ) -> list[Candidate]:
        """Step 8: reorder the first `head` candidates (the pipeline's k); never adds or drops one."""
        if config.steps != "1-8" or config.reranker == "none" or head == 0:
            return candidates
        reranker = self._rerankers.get(config.reranker)
        if reranker is None:
            raise InvalidInputError(
                f"reranker {config.reranker!r} is not configured (LLM rerankers need an LLM: `--llm`); "
                f"available: none, {', '.join(sorted(self._rerankers))}"
            )
        with query.stage("rerank"):
            outcome = reranker.rerank(query, parsed, candidates[:head])
        if outcome.note:
            query.notes["rerank"] = outcome.note
        if outcome.usage:
            query.notes["rerank_usage"] = outcome.usage
        return outcome.candidates + candidates[head:]

    def _fill(self, query: QueryContext, config: AfConfig, taken: np.ndarray, count: int) -> list[Candidate]:
        parsed = query.notes.get("parsed", {})
        type_code = self._type_codes.get(parsed.get("predicted_type") or parsed.get("target_type") or "")
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
            return pool.candidates(count, "vss")

    def _parse(self, query: QueryContext, config: AfConfig) -> StructuredQuery:
        parser = self._parsers.get(config.parser)
        if parser is None:
            hint = " (the LLM parser needs an LLM: `--llm`, docs/llm.md)" if config.parser == "llm" else ""
            raise InvalidInputError(
                f"parser {config.parser!r} is not configured{hint}; available: {', '.join(sorted(self._parsers))}"
            )
        try:
            traced = getattr(parser, "parse_traced", None)
            if traced is None:
                return parser.parse(query)
            trace = traced(query)
            query.notes["llm_usage"] = {
                "calls": trace.calls,
                "prompt_tokens": trace.prompt_tokens,
                "completion_tokens": trace.completion_tokens,
            }
            return trace.query
        except LlmError as exc:
            # The LLM is down or too slow: answer with the encoder parser rather than not at all.
            query.notes["parser_fallback"] = f"llm parser failed ({exc}); encoder parser used"
            return self._encoder_parser.parse(query)

    # ------------------------------------------------------------------------------------------------ steps 4–5

    def symbols(self, query: QueryContext, parsed: StructuredQuery, config: AfConfig) -> dict[str, np.ndarray]:
        """Step 4: ranked candidate positions per constant, and attribute-filtered sets per symbol."""
        nodes = self._stores.nodes
        with query.stage("symbols"):
            ranked: dict[str, np.ndarray] = {}
            constants = parsed.constants
            passing, extra_words = self.filter_symbols(parsed) if parsed.constraints else ({}, {})
            if constants:
                vectors = self.search_vectors(query, constants, extra_words)
                for constant, own in zip(constants, vectors, strict=True):
                    ranked[constant.name] = constant_candidates(
                        constant,
                        own,
                        lexicon=self.lexicon(),
                        names=self._stores.vectors["name"],
                        node_types=nodes.types,
                        type_code=self._type_codes.get(constant.type or ""),
                        l_max=config.l_max,
                    )
            for name, allowed in passing.items():
                # A constant keeps its ranked candidates that pass (in order); a variable starts from the set.
                ranked[name] = ranked[name][np.isin(ranked[name], allowed)] if name in ranked else allowed
            if parsed.constraints:
                query.notes["parsed"] = parse_summary(parsed)
            ids = nodes.ids
            query.notes["constants"] = {
                c.name: {
                    "names": list(c.names),
                    "search_extra": extra_words.get(c.name, []),
                    "candidates": [int(ids[p]) for p in ranked.get(c.name, [])[:5]],
                }
                for c in constants
            }
        return ranked

    def ground(
        self, query: QueryContext, parsed: StructuredQuery, ranked: dict[str, np.ndarray], config: AfConfig
    ) -> ScopeResult:
        """Step 5: Algorithm 2 with scope expansion, over the graph store."""
        nodes = self._stores.nodes
        with query.stage("ground"):
            scope = expand_scope(
                parsed,
                ranked,
                self._stores.graph,
                node_types=nodes.types,
                type_codes=self._type_codes,
                k=config.k,
                l_max=config.l_max,
                strict=config.strict,
            )
            target_set = ranked.get(parsed.target)
            if not scope.grounded and target_set is not None:
                # Attribute filters alone narrowed the target ("genes on chromosome 17 that mention X").
                ordered = np.unique(target_set)
                scope = ScopeResult(
                    True, ordered, 0.0, 0, [], None, "attribute filters only", np.ones_like(ordered)
                )
        return scope

    def filter_symbols(self, parsed: StructuredQuery) -> tuple[dict[str, np.ndarray], dict[str, list[str]]]:
        """Attribute constraints as hard filters: the nodes passing every applicable constraint, per symbol.

        What cannot be applied (an attribute or value the SKB does not have) joins, as the paper does, a
        constant's search string; for a variable it joins the question's text constraints for ranking.
        """
        by_symbol: dict[str, list[AttributeConstraint]] = {}
        for constraint in parsed.constraints:
            by_symbol.setdefault(constraint.symbol, []).append(constraint)
        passing: dict[str, np.ndarray] = {}
        extra: dict[str, list[str]] = {}
        for name, constraints in by_symbol.items():
            symbol = parsed.symbols.get(name)
            result = apply_constraints(self.catalog(), constraints, symbol.type if symbol else None)
            for skipped in result.not_applied:
                if skipped.reason == "name":
                    continue  # a name equality is the constant's own search string already
                if symbol is not None and symbol.is_constant:
                    extra.setdefault(name, []).append(skipped.search_text)
                else:
                    parsed.text_constraints.append(skipped.search_text)
                parsed.warnings.append(
                    f"constraint on {name} not applied ({skipped.reason}): {skipped.search_text}"
                )
            if result.positions is not None:
                passing[name] = result.positions
        return passing, extra

    def search_vectors(
        self, query: QueryContext, constants: list[Symbol], extra_words: dict[str, list[str]]
    ) -> list[np.ndarray]:
        """One embedding per search string of each constant. A string that is exactly a node's name reuses that
        node's stored name vector (the same text through the same encoder); only the others are encoded."""
        names = self._stores.vectors["name"]
        lexicon = self.lexicon()
        strings = [[" ".join([n, *extra_words.get(c.name, [])]) for n in c.names] for c in constants]
        found: dict[str, np.ndarray] = {}
        missing: list[str] = []
        for text in {t for group in strings for t in group}:
            exact = [e.position for e in lexicon.lookup(text, original=text) if e.kind == NAME]
            stored = names.vectors_for(np.asarray(exact[:1], np.int64)) if exact else np.zeros((0, 0))
            if stored.shape[0]:
                found[text] = stored[0]
            else:
                missing.append(text)
        for text, vector in zip(missing, query.encode_with_question(missing), strict=True):
            found[text] = vector
        return [np.stack([found[t] for t in group]) for group in strings]

    # ------------------------------------------------------------------------------------------------ step 6

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
