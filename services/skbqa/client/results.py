"""Typed results of the public API, as the client SDK returns them."""

from __future__ import annotations

import json
from collections.abc import Mapping
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
    kb_version: int = 0  # the knowledge-base version served
    accepted_version: int = 0  # the newest acknowledged change batch


@dataclass(frozen=True)
class AppliedChanges:
    version: int  # ask with min_version=version to read these changes
    changes: int
    outcome: dict[str, int]
    idempotency_key: str = ""  # the key the batch was sent with: resend under it to learn its answer again


def change_message(change: Mapping[str, Any]) -> api_pb2.Change:
    """A change in the change-file form (`{"op": "add_edge", "src": 1, "type": "t", "dst": 2}`, docs/updates.md)
    → its message; the server checks it (a malformed one fails the whole batch with INVALID_ARGUMENT)."""
    op = change.get("op")
    if op == "upsert_node":
        node = dict(change.get("node") or {})
        attrs = node.pop("attrs", None) or {}
        return api_pb2.Change(
            upsert_node=api_pb2.NodeRecord(**node, attrs_json=json.dumps(attrs) if attrs else "")
        )
    if op == "delete_node":
        return api_pb2.Change(delete_node=change["id"])
    if op in ("add_edge", "remove_edge"):
        edge = api_pb2.EdgeRef(src=change["src"], type=change["type"], dst=change["dst"])
        return api_pb2.Change(**{op: edge})
    raise ValueError(
        f"unknown change op {str(op)[:40]!r}; expected upsert_node, delete_node, add_edge, remove_edge"
    )


def applied_changes(message: api_pb2.ApplyChangesResponse, idempotency_key: str = "") -> AppliedChanges:
    return AppliedChanges(
        int(message.version),
        int(message.changes),
        {k: int(v) for k, v in message.outcome.items()},
        idempotency_key,
    )


def remote_answer(message: api_pb2.AskResponse, client_ms: float = 0.0) -> RemoteAnswer:
    base = answer_from_proto(message)
    return RemoteAnswer(
        base.question,
        base.strategy,
        base.k,
        base.items,
        base.timings_ms,
        base.notes,
        base.kb_version,
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
        kb_version=int(message.kb_version),
        accepted_version=int(message.accepted_version),
    )
