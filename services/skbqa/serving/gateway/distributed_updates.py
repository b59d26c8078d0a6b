"""`ApplyChanges` and `Ask.min_version` on a gateway of the distributed form (the `LiveUpdates` of the gateway).

A checked batch (the same checks and policy as the embedded server's, in `gateway.updates`) is published as ONE
record to `skbqa.changes` (acks=all) under a fresh batch id, and the call waits for the updater's answer on
`skbqa.answer`: the version it gave the batch once the batch was in the index's fsync'd change log, or the
refusal the embedded server would give (`changes:LINE: problem`). Versions are given out by the updater alone,
in the topic's one order, so two gateways can never hand out the same one. The caller's idempotency key (scoped,
`gateway.idempotency`) rides in the record: the updater keeps it with the batch, so a resend through any gateway,
before or after an updater restart, is answered as the batch was.

What is served is read from `skbqa.versions` (`serving.kb_feed`): the served version is the lowest any live stage
replica reports, so `min_version = V` waits until every stage answers at V or later.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections import Counter
from typing import Any

import grpc

from skbqa.bus import topics
from skbqa.changes.format import Change
from skbqa.changes.record import encode_batch
from skbqa.serving.gateway.bus_backend import BusBackend
from skbqa.serving.gateway.updates import UpdateRefused
from skbqa.serving.kb_feed import VersionFeed
from skbqa.serving.stages.core import AnswerEnvelope
from skbqa.v1 import api_pb2

logger = logging.getLogger(__name__)

_CODES = {status.value[0]: status for status in grpc.StatusCode}
# how long a min_version above every version this gateway has heard of waits for the news (another gateway may
# have acknowledged it a moment ago) before it is refused as never acknowledged
LEARN_ACCEPTED_S = 3.0


class DistributedUpdates:
    def __init__(self, backend: BusBackend, feed: VersionFeed, *, start_version: int, timeout_s: float) -> None:
        """`start_version`: the index's version when this gateway started (what it reports until a stage has).
        `timeout_s`: the longest wait for the updater's answer."""
        self._backend = backend
        self._feed = feed
        self._start = start_version
        self._timeout = timeout_s

    @property
    def served_version(self) -> int:
        lowest = self._feed.min_serving()
        return lowest if lowest is not None else max(self._start, self._feed.published)

    @property
    def accepted_version(self) -> int:
        return max(self._feed.accepted, self.served_version)

    def learn_accepted(self, version: int, timeout_s: float) -> None:
        self._feed.wait(lambda: self.accepted_version >= version, min(timeout_s, LEARN_ACCEPTED_S))

    def wait_for(self, version: int, timeout_s: float) -> bool:
        return self._feed.wait(lambda: self.served_version >= version, timeout_s)

    def apply(self, batch: list[tuple[int, Change]], where: str, key_id: str = "") -> tuple[int, Any]:
        """`key_id`: the caller's scoped idempotency key, carried in the record; the updater, which alone knows
        every batch accepted (through any gateway, before any restart), answers a resend under it."""
        self._check_deployment()
        batch_id = (
            uuid.uuid4().hex
        )  # this record's own id (a redelivery of it); the key spans the client's resends
        value = encode_batch(batch_id, self._backend.gateway_id, [change for _, change in batch], key_id)
        started = time.monotonic()
        try:
            waiter = self._backend.request(topics.CHANGES, batch_id, value, self._timeout)
        except TimeoutError:
            raise UpdateRefused(
                grpc.StatusCode.UNAVAILABLE, "the message bus did not take the batch in time; nothing was applied"
            ) from None
        except UpdateRefused:
            raise
        except Exception as exc:  # refused by the bus (too large, broker away): never in the topic
            logger.warning("ApplyChanges: publishing the batch failed: %s", exc)
            raise UpdateRefused(
                grpc.StatusCode.UNAVAILABLE,
                "the message bus refused the batch (too large for one record, or the broker is away); "
                "nothing was applied",
            ) from None
        try:
            envelope = waiter.next(self._timeout - (time.monotonic() - started))
        except TimeoutError:
            raise UpdateRefused(
                grpc.StatusCode.DEADLINE_EXCEEDED,
                "the batch is in the change topic but the updater has not acknowledged it yet; it will be "
                "applied once the updater runs: resend it with the same idempotency-key to learn its version "
                "(without one, check IndexStatus.accepted_version before sending it again)",
            ) from None
        finally:
            self._backend.forget(waiter)
        if envelope.kind == AnswerEnvelope.ERROR:
            raise UpdateRefused(_CODES[envelope.status_code], envelope.status_message)
        response = api_pb2.ApplyChangesResponse.FromString(envelope.answer)
        self._feed.note({"kind": "updater", "accepted": response.version})
        return int(response.version), Counter(dict(response.outcome))

    def _check_deployment(self) -> None:
        if not self._feed.updater_live():
            raise UpdateRefused(
                grpc.StatusCode.FAILED_PRECONDITION,
                "this deployment runs no updater (skbqa serve --role updater), so it takes no changes",
            )
        fixed = sorted({r.role for r in self._feed.live_replicas().values() if not r.follows})
        if fixed:
            raise UpdateRefused(
                grpc.StatusCode.FAILED_PRECONDITION,
                f"the {', '.join(fixed)} service serves copies of the index in NebulaGraph "
                "that do not follow changes; this deployment takes no changes",
            )
