"""One `skbqa.changes` record: a checked batch of changes on its way from a gateway to the updater."""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass
from typing import Any

from skbqa.changes.format import Change, change_to_json, parse_change

STREAM = "changes"  # as the embedded server names a streamed batch in its errors ("changes:LINE: problem")


@dataclass(frozen=True)
class BatchRecord:
    batch_id: str  # the gateway's own id of this record (a redelivery is recognised by it)
    gateway_id: str  # who waits for the answer
    changes: list[tuple[int, Change]]
    key_id: str = ""  # the client's idempotency key, scoped to the caller (changes.idempotency); "" = none


def encode_batch(batch_id: str, gateway_id: str, changes: list[Change], key_id: str = "") -> bytes:
    """One `skbqa.changes` record: the batch's id, who waits for the answer, the caller's scoped idempotency key
    if any, and its changes (zlib'd JSON: a batch is one record, and brokers cap a record's size, 1 MiB by
    default)."""
    body: dict[str, Any] = {"batch": batch_id, "gateway": gateway_id}
    if key_id:
        body["key"] = key_id
    body["changes"] = [change_to_json(c) for c in changes]
    return zlib.compress(json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode())


def decode_batch(value: bytes) -> BatchRecord:
    body = json.loads(zlib.decompress(value))
    changes = [(line, parse_change(obj, STREAM, line)) for line, obj in enumerate(body["changes"], start=1)]
    return BatchRecord(str(body["batch"]), str(body.get("gateway", "")), changes, str(body.get("key") or ""))
