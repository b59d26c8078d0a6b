"""Conversions between the pipeline's Python objects and the `skbqa.v1` protobuf messages.

Free-form dictionaries (evidence, notes, options) travel as JSON object text rather than `google.protobuf.Struct`:
Struct stores every number as a double, which would turn node ids into floats.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from skbqa.common.answer import Answer, json_object
from skbqa.query.context import Candidate
from skbqa.query.grounded import GroundingResult, ScopeResult, TripletEvidence
from skbqa.query.structured import AttributeConstraint, Scalar, StructuredQuery, Symbol, Triplet
from skbqa.v1 import api_pb2, stages_pb2


def _plain(value: Any) -> Any:
    """json.dumps fallback for numpy scalars/arrays and tuples inside evidence and notes."""
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, set | frozenset):
        return sorted(value)
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def to_json(value: Any) -> str:
    return json.dumps(value, default=_plain, ensure_ascii=False, separators=(",", ":"))


from_json = json_object


# ---------------------------------------------------------------------------------------------- structured query


def _scalar_to_proto(value: Scalar) -> stages_pb2.Scalar:
    # bool before int: bool is an int subclass
    if isinstance(value, bool):
        return stages_pb2.Scalar(flag=value)
    if isinstance(value, int):
        return stages_pb2.Scalar(integer=value)
    if isinstance(value, float):
        return stages_pb2.Scalar(number=value)
    return stages_pb2.Scalar(text=str(value))


def _scalar_from_proto(message: stages_pb2.Scalar) -> Scalar:
    kind = message.WhichOneof("kind")
    return getattr(message, kind) if kind else ""


def query_to_proto(query: StructuredQuery) -> stages_pb2.StructuredQuery:
    message = stages_pb2.StructuredQuery(
        target=query.target,
        symbols=[
            stages_pb2.Symbol(name=s.name, type=s.type, names=list(s.names), sense=list(s.sense))
            for s in query.symbols.values()
        ],
        triplets=[
            stages_pb2.Triplet(
                head=t.head,
                edge=t.edge,
                tail=t.tail,
                direction=t.direction,
                min_hops=t.min_hops,
                max_hops=t.max_hops,
            )
            for t in query.triplets
        ],
        constraints=[
            stages_pb2.AttributeConstraint(
                symbol=c.symbol,
                attribute=c.attribute,
                op=c.op,
                values=[_scalar_to_proto(v) for v in (c.value if isinstance(c.value, tuple) else (c.value,))],
                is_list=isinstance(c.value, tuple),
                case_insensitive=c.case_insensitive,
            )
            for c in query.constraints
        ],
        text_constraints=list(query.text_constraints),
        alternatives=[query_to_proto(a) for a in query.alternatives],
        warnings=list(query.warnings),
        predicted_type=query.predicted_type,
        confidence=query.confidence,
        type_named=query.type_named,
    )
    return message


def query_from_proto(message: stages_pb2.StructuredQuery) -> StructuredQuery:
    symbols = {
        s.name: Symbol(s.name, s.type if s.HasField("type") else None, tuple(s.names), tuple(s.sense))
        for s in message.symbols
    }
    triplets = [
        Triplet(
            t.head,
            t.edge if t.HasField("edge") else None,
            t.tail,
            "undirected" if t.direction == "undirected" else "out",
            t.min_hops,
            t.max_hops,
        )
        for t in message.triplets
    ]
    constraints = []
    for c in message.constraints:
        values = tuple(_scalar_from_proto(v) for v in c.values)
        value: Scalar | tuple[Scalar, ...] = values if c.is_list else (values[0] if values else "")
        constraints.append(AttributeConstraint(c.symbol, c.attribute, c.op, value, c.case_insensitive))  # type: ignore[arg-type]
    return StructuredQuery(
        target=message.target,
        symbols=symbols,
        triplets=triplets,
        constraints=constraints,
        text_constraints=list(message.text_constraints),
        alternatives=[query_from_proto(a) for a in message.alternatives],
        warnings=list(message.warnings),
        predicted_type=message.predicted_type if message.HasField("predicted_type") else None,
        confidence=round(message.confidence, 4) if message.HasField("confidence") else None,
        type_named=message.type_named,
    )


# ---------------------------------------------------------------------------------------------- symbols, scope


def symbol_sets_to_proto(ranked: dict[str, np.ndarray]) -> list[stages_pb2.CandidateSet]:
    return [stages_pb2.CandidateSet(symbol=name, positions=arr.tolist()) for name, arr in ranked.items()]


def symbol_sets_from_proto(sets: Any) -> dict[str, np.ndarray]:
    return {s.symbol: np.asarray(s.positions, np.int64) for s in sets}


def scope_to_proto(scope: ScopeResult) -> stages_pb2.Scope:
    evidence = scope.result.evidence if scope.result is not None else []
    return stages_pb2.Scope(
        grounded=scope.grounded,
        candidates=scope.candidates.tolist(),
        scope=scope.scope,
        per_constant=scope.per_constant,
        iterations=[stages_pb2.ScopeIteration(scope=level, size=size) for level, size in scope.iterations],
        reason=scope.reason,
        levels=np.asarray(scope.levels).tolist(),
        evidence=[
            stages_pb2.TripletEvidence(
                triplet_index=e.triplet_index,
                other_symbol=e.other_symbol,
                target=e.target.tolist(),
                other=e.other.tolist(),
            )
            for e in evidence
        ],
        has_result=scope.result is not None,
    )


def scope_from_proto(message: stages_pb2.Scope, query: StructuredQuery) -> ScopeResult:
    """The ScopeResult later stages read: the target set, levels, iterations and per-triplet evidence (the
    grounding's intermediate symbol sets stay in the grounding service)."""
    candidates = np.asarray(message.candidates, np.int64)
    result = None
    if message.has_result:
        evidence = [
            TripletEvidence(
                e.triplet_index,
                query.triplets[e.triplet_index],
                e.other_symbol,
                np.asarray(e.target, np.int64),
                np.asarray(e.other, np.int64),
            )
            for e in message.evidence
        ]
        result = GroundingResult(query.target, candidates, {}, 0, True, evidence)
    return ScopeResult(
        message.grounded,
        candidates,
        message.scope,
        message.per_constant,
        [(i.scope, i.size) for i in message.iterations],
        result,
        message.reason,
        np.asarray(message.levels, np.int64),
    )


# ---------------------------------------------------------------------------------------------- candidates


def candidates_to_proto(candidates: list[Candidate]) -> list[stages_pb2.Candidate]:
    return [
        stages_pb2.Candidate(
            position=int(c.position),
            score=float(c.score),
            source=c.source,
            scores={k: float(v) for k, v in c.scores.items()},
            evidence_json=to_json(c.evidence),
        )
        for c in candidates
    ]


def candidates_from_proto(messages: Any) -> list[Candidate]:
    return [Candidate(m.position, m.score, m.source, dict(m.scores), from_json(m.evidence_json)) for m in messages]


# ---------------------------------------------------------------------------------------------- embeddings


def embedding_to_bytes(vector: np.ndarray | None) -> bytes:
    return b"" if vector is None else np.asarray(vector, "<f4").tobytes()


def embedding_from_bytes(data: bytes) -> np.ndarray | None:
    return np.frombuffer(data, "<f4").copy() if data else None


# ---------------------------------------------------------------------------------------------- answers


def answer_to_proto(answer: Answer, request_id: str = "", *, partial: bool = False) -> api_pb2.AskResponse:
    return api_pb2.AskResponse(
        request_id=request_id,
        question=answer.question,
        strategy=answer.strategy,
        k=answer.k,
        items=[
            api_pb2.AnswerItem(
                rank=i.rank,
                node_id=i.node_id,
                name=i.name,
                type=i.type,
                score=i.score,
                source=i.source,
                why=i.why,
                scores=i.scores,
                evidence_json=to_json(i.evidence),
            )
            for i in answer.items
        ],
        timings_ms=answer.timings_ms,
        notes_json=to_json(answer.notes),
        partial=partial,
        degraded=bool(answer.notes.get("degraded")),
        kb_version=answer.kb_version,
    )
