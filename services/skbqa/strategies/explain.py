"""One-line reasons for an answer: which signal put it there and, for lexical signals, which words matched."""

from __future__ import annotations

import re
from functools import lru_cache

from skbqa.ingest.documents import document
from skbqa.query.context import Candidate
from skbqa.stores.index import IndexStores
from skbqa.stores.text.bm25 import words

MAX_TERMS_SHOWN = 6


@lru_cache(maxsize=64)
def _question_terms(question: str) -> tuple[tuple[str, ...], re.Pattern[str] | None]:
    """The question's terms in order, and one pattern that finds any of them as a whole word (a list of up to
    100 answers is explained against one question: its terms are read once, and each document is scanned once
    for them instead of being split into words)."""
    terms = tuple(dict.fromkeys(words(question)))
    if not terms:
        return terms, None
    alternatives = "|".join(re.escape(t) for t in sorted(terms, key=len, reverse=True))
    return terms, re.compile(rf"(?<!\w)(?:{alternatives})(?!\w)")


def matched_terms(stores: IndexStores, question: str, position: int) -> list[str]:
    terms, pattern = _question_terms(question)
    if pattern is None:
        return []
    found = set(pattern.findall(document(stores.nodes, position).lower()))
    return [t for t in terms if t in found][:MAX_TERMS_SHOWN]


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
