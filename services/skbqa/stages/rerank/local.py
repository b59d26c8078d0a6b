"""`local`: a reranker without LLM or hub — a weighted sum of four signals, each min-max normalised over the k
candidates so the weights, not the signals' scales, decide.

- graph: how much of the parsed query graph the candidate satisfies: `scores["grounded"]` (1.0 when the graph
  strand found it) plus the fraction of the query's triplets and attribute constraints it matched, counted
  from `evidence["triplets"]` and `evidence["constraints"]` (any sized collection; absent = none);
- lexical: BM25 of the question's text constraints (or the whole question when the parser left none) against
  the candidate's document. By default idf and length normalisation are computed over the k candidates
  themselves, which rewards the words that tell *these* candidates apart; `lexical_source="index"` reads the
  global BM25 scores instead (one pass over the whole index per question);
- dense: bi-encoder similarity: `scores["dense"]` (or `scores["cosine"]`) when every candidate has it,
  otherwise the question embedding · the candidate's stored vector from `embedding_set`;
- prior: the candidate's rank before reranking, linearly from 1 (first) to 0 (last), so the retrieval order
  still counts and weights (prior=1, rest 0) reproduce it exactly — the baseline to measure against.

To find out whether it helps, `components()` returns the normalised signals and `combine()` mixes them, so an
evaluation can try many weightings on one retrieval run.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any, Literal

import numpy as np

from skbqa.common.errors import InvalidInputError
from skbqa.ingest.documents import document
from skbqa.query.context import Candidate, QueryContext
from skbqa.query.structured import StructuredQuery
from skbqa.stages.rerank.base import RerankOutcome
from skbqa.stores.index import IndexStores
from skbqa.stores.text.bm25 import words

LexicalSource = Literal["candidates", "index"]
BM25_K1 = 1.2
BM25_B = 0.75


@dataclass(frozen=True)
class LocalWeights:
    graph: float = 0.4
    lexical: float = 0.2
    dense: float = 0.2
    prior: float = 0.2

    def __post_init__(self) -> None:
        values = [getattr(self, f.name) for f in fields(self)]
        if any(v < 0 or not math.isfinite(v) for v in values) or sum(values) <= 0:
            raise InvalidInputError(f"local reranker weights must be non-negative and not all zero: {self}")

    def as_dict(self) -> dict[str, float]:
        return {f.name: float(getattr(self, f.name)) for f in fields(self)}


def normalise(values: np.ndarray) -> np.ndarray:
    """Min-max to [0, 1]; a constant signal becomes 0 (it cannot order these candidates, so it adds nothing)."""
    if values.size == 0:
        return values
    low, high = float(values.min()), float(values.max())
    if high - low < 1e-12:
        return np.zeros_like(values, dtype=np.float64)
    return (values - low) / (high - low)


def combine(components: Mapping[str, np.ndarray], weights: LocalWeights) -> np.ndarray:
    total = np.zeros(len(next(iter(components.values()))), np.float64)
    for name, weight in weights.as_dict().items():
        total += weight * components[name]
    return total


def bm25_over(query_terms: Sequence[str], docs: Sequence[Sequence[str]]) -> np.ndarray:
    """Okapi BM25 of one query against a small corpus (the candidates), with the corpus' own idf."""
    n = len(docs)
    scores = np.zeros(n, np.float64)
    terms = list(dict.fromkeys(query_terms))
    if n == 0 or not terms:
        return scores
    counts = [Counter(d) for d in docs]
    lengths = np.array([len(d) for d in docs], np.float64)
    average = max(float(lengths.mean()), 1.0)
    for term in terms:
        tf = np.array([c.get(term, 0) for c in counts], np.float64)
        df = int((tf > 0).sum())
        if df == 0:
            continue
        idf = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
        scores += idf * tf * (BM25_K1 + 1) / (tf + BM25_K1 * (1 - BM25_B + BM25_B * lengths / average))
    return scores


def _size(value: Any) -> int:
    try:
        return len(value)
    except TypeError:
        return 0


class LocalReranker:
    """LocalReranker(stores, *, weights=LocalWeights(), lexical_source="candidates", embedding_set="document")."""

    name = "local"

    def __init__(
        self,
        stores: IndexStores,
        *,
        weights: LocalWeights | None = None,
        lexical_source: LexicalSource = "candidates",
        embedding_set: str = "document",
    ) -> None:
        if lexical_source not in ("candidates", "index"):
            raise InvalidInputError(f"lexical_source must be 'candidates' or 'index', got {lexical_source!r}")
        if embedding_set not in stores.vectors:
            raise InvalidInputError(f"unknown embedding set {embedding_set!r}; have {', '.join(stores.vectors)}")
        self._stores = stores
        self.weights = weights or LocalWeights()
        self._lexical_source = lexical_source
        self._embedding_set = embedding_set

    def rerank(
        self, query: QueryContext, parsed: StructuredQuery | None, candidates: list[Candidate]
    ) -> RerankOutcome:
        if len(candidates) < 2:
            return RerankOutcome(list(candidates))
        with query.stage("rerank_local"):
            parts = self.components(query, parsed, candidates)
            total = combine(parts, self.weights)
            order = sorted(range(len(candidates)), key=lambda i: (-total[i], i))
        out = []
        for i in order:
            c = candidates[i]
            extra = {f"local_{name}": float(v[i]) for name, v in parts.items() if name != "prior"}
            out.append(replace(c, scores={**c.scores, **extra, "local": float(total[i])}))
        return RerankOutcome(out)

    def components(
        self, query: QueryContext, parsed: StructuredQuery | None, candidates: Sequence[Candidate]
    ) -> dict[str, np.ndarray]:
        """Each signal, min-max normalised over the candidates (in their given order)."""
        k = len(candidates)
        prior = np.linspace(1.0, 0.0, k) if k > 1 else np.ones(k)
        return {
            "graph": normalise(self._graph(parsed, candidates)),
            "lexical": normalise(self._lexical(query, parsed, candidates)),
            "dense": normalise(self._dense(query, candidates)),
            "prior": prior,
        }

    @staticmethod
    def _graph(parsed: StructuredQuery | None, candidates: Sequence[Candidate]) -> np.ndarray:
        asked = len(parsed.triplets) + len(parsed.constraints) if parsed is not None else 0
        raw = []
        for c in candidates:
            matched = _size(c.evidence.get("triplets")) + _size(c.evidence.get("constraints"))
            # Without a parsed query the matched count itself orders the candidates (scale is normalised away).
            fraction = min(1.0, matched / asked) if asked else float(matched)
            raw.append(float(c.scores.get("grounded", 0.0)) + fraction)
        return np.array(raw, np.float64)

    def _lexical(
        self, query: QueryContext, parsed: StructuredQuery | None, candidates: Sequence[Candidate]
    ) -> np.ndarray:
        constraints = [t for t in (parsed.text_constraints if parsed is not None else []) if t.strip()]
        text = " ".join(constraints) if constraints else query.question
        positions = np.array([c.position for c in candidates], np.int64)
        if self._lexical_source == "index":
            return self._stores.bm25.scores(text)[positions].astype(np.float64)
        docs = [words(document(self._stores.nodes, int(p))) for p in positions]
        return bm25_over(words(text), docs)

    def _dense(self, query: QueryContext, candidates: Sequence[Candidate]) -> np.ndarray:
        for key in ("dense", "cosine"):
            if all(key in c.scores for c in candidates):
                return np.array([c.scores[key] for c in candidates], np.float64)
        # Mixed sources (e.g. grounded candidates without a VSS score): score every candidate the same way.
        index = self._stores.vectors[self._embedding_set]
        vector = np.asarray(query.embedding, np.float32)
        out = np.zeros(len(candidates), np.float64)
        for i, c in enumerate(candidates):
            try:
                stored = index.vectors_for(np.array([c.position], np.int64))
            except KeyError:
                continue  # a node without a stored vector gets no dense credit rather than failing the rerank
            if stored.shape[0]:
                out[i] = float(stored[0] @ vector)
        return out
