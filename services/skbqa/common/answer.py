"""What a question gets back — ranked answers with their evidence — as plain dataclasses, and the reading of the
public API's `AskResponse` into them.

Light on purpose: the client SDK (`skbqa.client`) returns these without importing the engine, numpy or the
stores, and the embedded engine returns the very same types, so code written against one runs against the other.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from skbqa.v1 import api_pb2


@dataclass
class AnswerItem:
    rank: int
    node_id: int
    name: str
    type: str
    score: float
    source: str
    why: str
    scores: dict[str, float] = field(default_factory=dict)
    evidence: dict[str, Any] = field(default_factory=dict)


@dataclass
class Answer:
    question: str
    strategy: str
    k: int
    items: list[AnswerItem]
    timings_ms: dict[str, float]
    notes: dict[str, Any] = field(default_factory=dict)  # strategy reports: the parsed query, scope, reranking
    kb_version: int = 0  # the knowledge-base version the answer was computed at (0: as ingested)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def json_object(text: str) -> Any:
    """A JSON field of the API (evidence, notes): "" is an empty object."""
    return json.loads(text) if text else {}


def answer_from_proto(message: api_pb2.AskResponse) -> Answer:
    items = [
        AnswerItem(
            rank=i.rank,
            node_id=i.node_id,
            name=i.name,
            type=i.type,
            score=i.score,
            source=i.source,
            why=i.why,
            scores=dict(i.scores),
            evidence=json_object(i.evidence_json),
        )
        for i in message.items
    ]
    return Answer(
        message.question,
        message.strategy,
        message.k,
        items,
        dict(message.timings_ms),
        json_object(message.notes_json),
        message.kb_version,
    )
