"""Typed results of the public API, as the client SDK returns them."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

from skbqa.common.answer import Answer, answer_from_proto
from skbqa.v1 import api_pb2


@dataclass
class RemoteAnswer(Answer):
    """An `Answer` as a server gave it, with what the call itself adds: the request id the server answered (a
    retried call keeps its id and is answered once), whether it is AskStream's early result, whether a fallback
    answered, and the latency measured at the client (retries and the network included)."""

    request_id: str = ""
    partial: bool = False
    degraded: bool = False
    client_ms: float = 0.0


@dataclass(frozen=True)
class AskEvent:
    kind: Literal["partial", "final"]
    answer: RemoteAnswer


@dataclass(frozen=True)
class Explained:
    answer: RemoteAnswer
    explanation: str


@dataclass(frozen=True)
class IndexStatus:
    index: str
    skb_name: str
    nodes: int
    edges: int
    encoder: str
    strategies: list[str]
    manifest: dict[str, Any] = field(default_factory=dict)


def remote_answer(message: api_pb2.AskResponse, client_ms: float = 0.0) -> RemoteAnswer:
    base = answer_from_proto(message)
    return RemoteAnswer(
        base.question,
        base.strategy,
        base.k,
        base.items,
        base.timings_ms,
        base.notes,
        request_id=message.request_id,
        partial=message.partial,
        degraded=message.degraded,
        client_ms=client_ms,
    )


def ask_event(message: api_pb2.AskEvent, client_ms: float = 0.0) -> AskEvent:
    kind: Literal["partial", "final"] = "partial" if message.WhichOneof("event") == "partial" else "final"
    return AskEvent(kind, remote_answer(getattr(message, kind), client_ms))


def index_status(message: api_pb2.IndexStatusResponse) -> IndexStatus:
    return IndexStatus(
        index=message.index,
        skb_name=message.skb_name,
        nodes=int(message.nodes),
        edges=int(message.edges),
        encoder=message.encoder,
        strategies=list(message.strategies),
        manifest=json.loads(message.manifest_json) if message.manifest_json else {},
    )
