"""Client-supplied idempotency keys of change batches, as the index's one writer remembers them.

A client whose acknowledgement was lost resends its batch under the same key and gets the first answer again
(the same version and outcome) instead of a second application. What the writer is given is not the client's
key itself but a key id: a hash of the caller's scope and the key (`serving.gateway.idempotency`), so one
client's key never matches another's batch. The id, a digest of the batch and the answer are written with the
batch into the change log (`changes.log`), so they survive a restart exactly as long as the batch stays in the
log: compaction drops them with their batches. In memory at most `MAX_REMEMBERED` of them are kept (the newest):
the log only shrinks when someone compacts it, and a writer that runs for months must not grow without bound.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter, OrderedDict
from dataclasses import dataclass
from typing import Any

# about 50 MB of remembered answers at most; at a batch a minute, over two months of keyed batches
MAX_REMEMBERED = 100_000
REUSED = "idempotency key already used for another batch"


class IdempotencyKeyReused(Exception):
    """A key resent with a batch other than the one first sent under it (nothing is applied)."""

    def __init__(self) -> None:
        super().__init__(REUSED)


@dataclass(frozen=True, slots=True)  # slots: a hundred thousand of them may be held
class KeyedAnswer:
    """What a batch sent under a key was answered with: enough to answer a resend in the same words."""

    version: int
    digest: str  # of the batch's changes: a resend must carry the same batch
    outcome: tuple[tuple[str, int], ...]

    def counter(self) -> Counter[str]:
        return Counter(dict(self.outcome))

    def to_json(self, key_id: str) -> dict[str, Any]:
        return {"id": key_id, "digest": self.digest, "outcome": dict(self.outcome)}

    @staticmethod
    def from_json(version: int, record: dict[str, Any]) -> tuple[str, KeyedAnswer]:
        outcome = tuple(sorted((str(k), int(v)) for k, v in dict(record["outcome"]).items()))
        return str(record["id"]), KeyedAnswer(version, str(record["digest"]), outcome)


def batch_digest(changes: list[dict[str, Any]]) -> str:
    """A digest of a batch's changes in their logged form (`format.change_to_json`), key order ignored."""
    canonical = json.dumps(changes, separators=(",", ":"), ensure_ascii=False, sort_keys=True)
    return hashlib.sha256(canonical.encode()).hexdigest()[:32]


class RememberedKeys:
    """Key id → the answer its batch got, the newest `limit` of them (oldest forgotten first)."""

    def __init__(self, limit: int = MAX_REMEMBERED) -> None:
        self._limit = limit
        self._answers: OrderedDict[str, KeyedAnswer] = OrderedDict()

    def __len__(self) -> int:
        return len(self._answers)

    def get(self, key_id: str) -> KeyedAnswer | None:
        return self._answers.get(key_id)

    def add(self, key_id: str, answer: KeyedAnswer) -> None:
        self._answers[key_id] = answer
        self._answers.move_to_end(key_id)
        while len(self._answers) > self._limit:
            self._answers.popitem(last=False)

    def drop_through(self, version: int) -> None:
        """Forget the keys of the batches up to `version` (compaction dropped them from the log)."""
        for key_id in [k for k, answer in self._answers.items() if answer.version <= version]:
            del self._answers[key_id]
