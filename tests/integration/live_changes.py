"""Changes the distributed live-update tests send, and sending them once the gateway takes changes."""

from __future__ import annotations

import time

from skbqa.client import SkbqaClient
from skbqa.client.errors import ServerError
from skbqa.client.results import AppliedChanges

NEW_ID = 10_000_001
NEW_NAME = "zorblaxic fever syndrome"


def disease(node_id: int, name: str) -> dict:
    text = f"{name} is a rare inherited disorder with recurrent fevers and joint pain."
    return {
        "op": "upsert_node",
        "node": {"id": node_id, "type": "disease", "name": name, "attrs": {}, "text": text},
    }


def apply_when_ready(client: SkbqaClient, changes: list[dict]) -> AppliedChanges:
    """apply_changes, once the gateway has heard from the updater (it refuses changes until then)."""
    deadline = time.monotonic() + 30
    while True:
        try:
            return client.apply_changes(changes)
        except ServerError as exc:
            if exc.code != "FAILED_PRECONDITION" or "no updater" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.5)
