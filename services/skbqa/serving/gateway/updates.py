"""The public API's side of live updates: `ApplyChanges` (a client stream of changes → one acknowledgement with
the version at which they are visible), who may call it, its idempotency key (`gateway.idempotency`), and
`Ask.min_version`."""

from __future__ import annotations

import hmac
import json
import logging
import time
from collections.abc import Iterable
from typing import Any, Protocol

import grpc

from skbqa.changes.format import MAX_BATCH, Change, ChangeError, parse_change
from skbqa.changes.idempotency import IdempotencyKeyReused
from skbqa.common.errors import IndexStoreError
from skbqa.serving.gateway import idempotency
from skbqa.serving.security import admitted_token
from skbqa.v1 import api_pb2

logger = logging.getLogger(__name__)
STREAM = "changes"  # how errors name the stream: "changes:LINE: problem", LINE counting from 1


class LiveUpdates(Protocol):
    @property
    def served_version(self) -> int: ...

    @property
    def accepted_version(self) -> int: ...

    def apply(self, batch: list[tuple[int, Change]], where: str, key_id: str = "") -> tuple[int, Any]:
        """`key_id`: the caller's scoped idempotency key ("" = none): a batch already accepted under it is
        answered as it was then; UpdateRefused(FAILED_PRECONDITION) when the key came with another batch."""
        ...

    def wait_for(self, version: int, timeout_s: float) -> bool: ...


class UpdateRefused(Exception):
    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class UpdatePolicy:
    """Who may change the knowledge base: anyone on a server without tokens; only an admin token's holder on one
    that checks tokens (asking and changing are separate scopes)."""

    def __init__(self, *, tokens_on: bool, admin_tokens: list[bytes] | None) -> None:
        self._tokens_on = tokens_on
        self._admins = list(admin_tokens or [])

    def check(self, context: grpc.ServicerContext) -> None:
        if not self._tokens_on:
            return
        token = admitted_token(context)
        if token is None or not any([hmac.compare_digest(token, admin) for admin in self._admins]):
            raise UpdateRefused(
                grpc.StatusCode.PERMISSION_DENIED, "changing the knowledge base needs an admin token"
            )


def change_from_proto(message: api_pb2.Change, line: int) -> Change:
    """A streamed change → the same checked `Change` a change file's line gives."""
    op = message.WhichOneof("op")
    if op == "upsert_node":
        node = message.upsert_node
        try:
            attrs = json.loads(node.attrs_json) if node.attrs_json else {}
        except ValueError:
            raise ChangeError(STREAM, line, "'attrs_json' must be a JSON object of scalar values") from None
        record = {"id": node.id, "type": node.type, "name": node.name, "text": node.text, "attrs": attrs}
        return parse_change({"op": op, "node": record}, STREAM, line)
    if op == "delete_node":
        return parse_change({"op": op, "id": message.delete_node}, STREAM, line)
    if op in ("add_edge", "remove_edge"):
        edge = getattr(message, op)
        return parse_change({"op": op, "src": edge.src, "type": edge.type, "dst": edge.dst}, STREAM, line)
    raise ChangeError(STREAM, line, "a change must set one of upsert_node, delete_node, add_edge, remove_edge")


def apply_changes(
    live: LiveUpdates | None,
    policy: UpdatePolicy,
    requests: Iterable[api_pb2.Change],
    context: grpc.ServicerContext,
) -> api_pb2.ApplyChangesResponse:
    if live is None:
        raise UpdateRefused(
            grpc.StatusCode.FAILED_PRECONDITION,
            "this server does not take changes: send them to an embedded server (skbqa serve --index DIR)",
        )
    policy.check(context)  # first: a caller who may not change anything learns nothing about its key
    try:
        scoped_key = idempotency.key_id(context)
    except idempotency.BadIdempotencyKey as exc:
        raise UpdateRefused(grpc.StatusCode.INVALID_ARGUMENT, str(exc)) from None
    batch: list[tuple[int, Change]] = []
    for line, message in enumerate(requests, start=1):
        if line > MAX_BATCH:
            raise ChangeError(STREAM, line, f"more than {MAX_BATCH:,} changes in one call; split the batch")
        batch.append((line, change_from_proto(message, line)))
    if not batch:
        raise ChangeError(STREAM, None, "no changes were sent")
    try:
        version, outcome = live.apply(batch, STREAM, scoped_key)
    except IdempotencyKeyReused as exc:  # the embedded writer's refusal (the distributed one answers it itself)
        raise UpdateRefused(grpc.StatusCode.FAILED_PRECONDITION, str(exc)) from None
    except IndexStoreError as exc:  # the index is read-only here, or another process is its writer
        logger.warning("ApplyChanges refused: %s", exc)  # the detail names server paths: the log, not the client
        raise UpdateRefused(
            grpc.StatusCode.FAILED_PRECONDITION,
            "this server cannot change its index: it is read-only here or another process is changing it",
        ) from None
    return api_pb2.ApplyChangesResponse(version=version, changes=len(batch), outcome=dict(outcome))


def wait_for_version(live: LiveUpdates | None, version: int, timeout_s: float) -> float:
    """Return once `version` is served, with what is left of `timeout_s`; UpdateRefused when it cannot be."""
    if version == 0:
        return timeout_s
    started = time.monotonic()
    served = 0 if live is None else live.served_version
    accepted = 0 if live is None else live.accepted_version
    learn = getattr(live, "learn_accepted", None)
    if version > accepted and learn is not None:  # distributed: another gateway may have acknowledged it just now
        learn(version, timeout_s)
        accepted = live.accepted_version if live is not None else 0
    if version > accepted:
        raise UpdateRefused(
            grpc.StatusCode.INVALID_ARGUMENT,
            f"min_version {version} was never acknowledged here (newest acknowledged version: {accepted})",
        )
    if live is not None and version > served and not live.wait_for(version, timeout_s):
        raise UpdateRefused(
            grpc.StatusCode.UNAVAILABLE,
            f"knowledge-base version {version} is not visible yet (serving {live.served_version}); "
            "it is being folded in: retry shortly",
        )
    return timeout_s - (time.monotonic() - started)
