"""One-line reasons for an answer: which signal put it there and, for lexical signals, which words matched."""

from __future__ import annotations

from skbqa.ingest.documents import document
from skbqa.query.context import Candidate
from skbqa.stores.index import IndexStores
from skbqa.stores.text.bm25 import words

MAX_TERMS_SHOWN = 6


def matched_terms(stores: IndexStores, question: str, position: int) -> list[str]:
    question_tokens = words(question)
    doc_tokens = set(words(document(stores.nodes, position)))
    seen: list[str] = []
    for token in question_tokens:
        if token in doc_tokens and token not in seen:
            seen.append(token)
    return seen[:MAX_TERMS_SHOWN]


def _graph_reason(candidate: Candidate) -> str:
    """ "fits (…)-[edge]->(…) via X; chromosome = 11" for answers the af strategy grounded."""
    parts: list[str] = []
    for triplet in candidate.evidence.get("triplets", []):
        via = ", ".join(n["name"] for n in triplet.get("through", [])[:2])
        parts.append(f"fits {triplet['pattern']}" + (f" via {via}" if via else ""))
    parts.extend(f"has {c}" for c in candidate.evidence.get("constraints", []))
    return "; ".join(parts)


def reason(stores: IndexStores, question: str, candidate: Candidate) -> str:
    parts: list[str] = []
    graph = _graph_reason(candidate)
    if graph:
        parts.append(graph)
    scores = candidate.scores
    if "cosine" in scores:
        parts.append(f"similar to the question (cosine {scores['cosine']:.3f})")
    if "bm25" in scores and scores["bm25"] > 0:
        terms = matched_terms(stores, question, candidate.position)
        shown = f": {', '.join(terms)}" if terms else ""
        parts.append(f"shares words with the question (bm25 {scores['bm25']:.2f}{shown})")
    if "fused" in scores:
        parts.append(f"fused score {scores['fused']:.3f}")
    return "; ".join(parts) or f"ranked by {candidate.source}"
