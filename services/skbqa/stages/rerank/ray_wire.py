"""The wire format between `RayServeReranker` (the caller) and a reranker replica, and its conversions.

```
caller process                                  Ray Serve replica (× num_replicas)
RayServeReranker.rerank(query, parsed, cands)   RerankerDeployment
  └─ RerankRequest ──── handle.rerank.remote ──▶  @serve.batch: up to max_batch_size requests, or whatever came
                                                  within batch_wait_timeout_s ──▶ RerankerCore.rerank_batch
  ◀── RerankResponse (positions, note, usage) ──  one QueryContext + build_reranker(name) per request
```
Plain frozen dataclasses (question, options, the picklable StructuredQuery, candidates as tuples); a response
carries the candidates' positions in the new order and the scores the reranker added, so evidence never travels
back: the caller reorders its own Candidate objects (`reorder`).

Knowledge-base versions: a request carries the version its caller computes at (`kb_version`, None = whatever the
replica serves) and a response says the version the replica computed at (or, when it could not, the one it
serves), so a caller uses only an answer of its own version: the replica reads node data by position from its
own snapshot of the index, and positions and texts change from one version to the next.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from skbqa.ingest.snapshot_fetch import SnapshotLocation
from skbqa.query.context import Candidate, QueryContext
from skbqa.query.structured import StructuredQuery

# (position, score, source, scores, evidence): a tuple pickles smaller and faster than a dataclass instance.
WireCandidate = tuple[int, float, str, dict[str, float], dict[str, Any]]


@dataclass(frozen=True)
class RerankRequest:
    question: str
    candidates: list[WireCandidate]
    parsed: StructuredQuery | None = None
    options: dict[str, Any] = field(default_factory=dict)
    kb_version: int | None = None  # the caller's knowledge-base version; None: the replica's
    # where the caller's version was shipped (its replica fetched it there); None: the shared index directory. A
    # replica without the version fetches it from there rather than wait for a directory it may not share.
    snapshot: SnapshotLocation | None = None

    @classmethod
    def build(
        cls,
        query: QueryContext,
        parsed: StructuredQuery | None,
        candidates: Sequence[Candidate],
        kb_version: int | None = None,
        snapshot: SnapshotLocation | None = None,
    ) -> RerankRequest:
        wire = [(c.position, c.score, c.source, dict(c.scores), dict(c.evidence)) for c in candidates]
        return cls(query.question, wire, parsed, dict(query.options), kb_version, snapshot)


@dataclass(frozen=True)
class RerankResponse:
    positions: list[int]  # the candidates' positions, in the new order
    scores: list[dict[str, float]] = field(default_factory=list)  # per entry of positions: scores added/changed
    note: str = ""
    usage: dict[str, int] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)  # the replica's stages (rerank_local, encode, ...)
    invalid_input: str | None = None  # the reranker refused the request (InvalidInputError); the caller raises
    # the version the replica computed at; one other than the request's: not computed (the replica does not hold
    # the request's version), the positions are the input order and the caller must rerank elsewhere
    kb_version: int | None = None


def input_order(request: RerankRequest, note: str, kb_version: int | None = None) -> RerankResponse:
    return RerankResponse([c[0] for c in request.candidates], note=note, kb_version=kb_version)


def added_scores(sent: Sequence[WireCandidate], ranked: Sequence[Candidate]) -> list[dict[str, float]]:
    """Per ranked candidate, the scores its reranker added or changed (only those travel back)."""
    original: dict[int, deque[dict[str, float]]] = {}
    for position, _, _, scores, _ in sent:
        original.setdefault(position, deque()).append(scores)
    out = []
    for c in ranked:
        before = original[c.position].popleft() if original.get(c.position) else {}
        out.append({k: float(v) for k, v in c.scores.items() if before.get(k) != v})
    return out


def reorder(candidates: Sequence[Candidate], reply: RerankResponse) -> list[Candidate] | str:
    """The caller's candidates in the reply's order (with the scores it added), or why the reply is unusable."""
    positions = reply.positions
    if not isinstance(positions, list) or Counter(positions) != Counter(c.position for c in candidates):
        return "not a permutation of the candidates"
    if reply.scores and len(reply.scores) != len(positions):
        return "scores do not match positions"
    waiting: dict[int, deque[Candidate]] = {}
    for c in candidates:
        waiting.setdefault(c.position, deque()).append(c)
    out = []
    for i, position in enumerate(positions):
        c = waiting[position].popleft()
        extra = reply.scores[i] if reply.scores else {}
        out.append(replace(c, scores={**c.scores, **extra}) if extra else c)
    return out
