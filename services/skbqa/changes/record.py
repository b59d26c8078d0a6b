"""One `skbqa.changes` record: a checked batch of changes on its way from a gateway to the updater."""

from __future__ import annotations

import json
import zlib

from skbqa.changes.format import Change, change_to_json, parse_change

STREAM = "changes"  # as the embedded server names a streamed batch in its errors ("changes:LINE: problem")


def encode_batch(batch_id: str, gateway_id: str, changes: list[Change]) -> bytes:
    """One `skbqa.changes` record: the batch's id, who waits for the answer, and its changes (zlib'd JSON: a
    batch is one record, and brokers cap a record's size, 1 MiB by default)."""
    body = {"batch": batch_id, "gateway": gateway_id, "changes": [change_to_json(c) for c in changes]}
    return zlib.compress(json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode())


def decode_batch(value: bytes) -> tuple[str, str, list[tuple[int, Change]]]:
    body = json.loads(zlib.decompress(value))
    changes = [(line, parse_change(obj, STREAM, line)) for line, obj in enumerate(body["changes"], start=1)]
    return str(body["batch"]), str(body.get("gateway", "")), changes
