"""The updater role (`skbqa serve --role updater`): the one writer of the knowledge base in the distributed form.

It consumes `skbqa.changes` (one partition: batches in one total order) in its group `skbqa-updater`, and for
each record, in order: checks the batch against the knowledge base and writes it to the index's change log
(`IndexUpdater.submit`, fsync'd; the version is the next one, so versions are given out by this process alone),
answers the gateway that sent it on `skbqa.answer`, and commits the record. A background fold
(`changes.folding.FoldLoop`, the embedded server's machinery) turns the accepted batches into a new snapshot of
the shared index directory and announces the version on `skbqa.versions`; every stage replica then opens it.
With `--snapshots`, each snapshot is also shipped to an object store before it is renamed over the index, and the
record says where (changes/shipping.py), for replicas whose index directory is their own.

Crash safety: a record is committed only after its batch is logged (or refused), and the log keeps each batch's
id, so a record redelivered after a kill -9 is recognised and answered with its version without being applied
again. A client's resend of a batch (its acknowledgement was lost) is a new record under the same idempotency key,
recognised by the key the log keeps with the batch and answered as the first one was. A fold killed midway leaves
its work directory, which the next start removes, and the logged batches are folded again.
"""

from __future__ import annotations

import logging
import threading
from typing import Any
from zlib import error as zlib_error

from skbqa.bus import topics
from skbqa.bus.base import Bus, Message
from skbqa.changes.folding import FoldLoop
from skbqa.changes.format import ChangeError
from skbqa.changes.idempotency import IdempotencyKeyReused
from skbqa.changes.record import STREAM, decode_batch
from skbqa.changes.shipping import SnapshotShipper
from skbqa.changes.snapshot import SnapshotReport
from skbqa.changes.updater import IndexUpdater
from skbqa.common.errors import IndexStoreError
from skbqa.ingest.snapshot_fetch import RECORD_KEY
from skbqa.observability.metrics import get_metrics
from skbqa.serving.stages.core import AnswerEnvelope
from skbqa.serving.status import FAILED_PRECONDITION, INVALID_ARGUMENT
from skbqa.v1 import api_pb2

logger = logging.getLogger(__name__)

GROUP = "skbqa-updater"


class ChangeApplier:
    """One record → the batch logged (or refused) → the gateway's answer published."""

    def __init__(self, updater: IndexUpdater, bus: Bus) -> None:
        self.updater = updater
        self._bus = bus

    def handle(self, message: Message) -> AnswerEnvelope:
        envelope = AnswerEnvelope(request_id=message.key, stage="updater")
        try:
            record = decode_batch(message.value)
            envelope.gateway_id = record.gateway_id
            version, outcome = self.updater.submit(record.changes, STREAM, record.batch_id, record.key_id)
            response = api_pb2.ApplyChangesResponse(
                version=version, changes=len(record.changes), outcome=dict(outcome)
            )
            envelope.kind, envelope.answer = AnswerEnvelope.FINAL, response.SerializeToString()
        except IdempotencyKeyReused as exc:  # nothing applied: the key's first batch stands
            envelope.kind, envelope.status_code, envelope.status_message = (
                AnswerEnvelope.ERROR,
                FAILED_PRECONDITION,
                str(exc),
            )
        except ChangeError as exc:  # refused whole, as the embedded server refuses it
            envelope.kind, envelope.status_code, envelope.status_message = (
                AnswerEnvelope.ERROR,
                INVALID_ARGUMENT,
                str(exc),
            )
        except IndexStoreError as exc:
            logger.warning("a batch was refused: %s", exc)  # the detail names server paths: the log only
            envelope.kind, envelope.status_code = AnswerEnvelope.ERROR, FAILED_PRECONDITION
            envelope.status_message = (
                "the updater cannot change the index: it is read-only or another process writes it"
            )
        except (ValueError, KeyError, TypeError, zlib_error):
            envelope.kind, envelope.status_code = AnswerEnvelope.ERROR, INVALID_ARGUMENT
            envelope.status_message = "the change record could not be read"
        self._bus.publish(topics.ANSWER, envelope.request_id, envelope.SerializeToString())
        return envelope


class UpdaterService:
    def __init__(
        self,
        updater: IndexUpdater,
        bus: Bus,
        *,
        poll_timeout_s: float = 0.05,
        shipper: SnapshotShipper | None = None,
    ) -> None:
        """`shipper`: the object store each snapshot was pushed to (its record then says where the version is)."""
        from skbqa.serving.kb_feed import VersionFeed

        self.updater = updater
        self._shipper = shipper
        self._bus = bus
        self._applier = ChangeApplier(updater, bus)
        self._poll_timeout_s = poll_timeout_s
        self._stop = threading.Event()
        self.joined = threading.Event()
        self.feed = VersionFeed(bus, report=self.report)
        # folded in this process: it does nothing else, and a child's start-up would add seconds to visibility
        self.folds = FoldLoop(lambda: updater, self._folded, in_child=False, name="skbqa-updater-fold")
        get_metrics().set_kb_version("updater", updater.snapshot_version)
        if updater.pending:  # acknowledged before a crash, never folded: now
            self.folds.wake()
        self._thread = threading.Thread(target=self._run, name="skbqa-updater", daemon=True)
        self._thread.start()

    def report(self) -> dict[str, Any]:
        record: dict[str, Any] = {
            "kind": "updater",
            "accepted": self.updater.accepted,
            "published": self.updater.snapshot_version,
        }
        shipped = self._shipper.shipped if self._shipper is not None else None
        if shipped is not None:
            record[RECORD_KEY] = shipped.to_record()
        return record

    def _folded(self, report: SnapshotReport) -> None:
        get_metrics().set_kb_version("updater", report.version)
        self.feed.announce()

    def _run(self) -> None:
        while not self._stop.is_set():
            consumer = self._bus.consumer([topics.CHANGES], group=GROUP, from_beginning=True)
            try:
                while not self._stop.is_set():
                    batch = consumer.poll(self._poll_timeout_s, max_records=64)
                    if not self.joined.is_set() and consumer.assignment():
                        self.joined.set()
                    for message in batch:
                        self._applier.handle(message)
                    if batch:
                        consumer.commit(batch)  # after every batch of it is logged and answered
                        self.feed.announce()
                        self.folds.wake()
            except Exception as exc:  # broker away: uncommitted records come again (and are recognised)
                logger.warning(
                    "updater: %s; rejoining", str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                )
                self._stop.wait(1.0)
            finally:
                consumer.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        self.folds.close()
        self.feed.close()
        self.updater.close()
