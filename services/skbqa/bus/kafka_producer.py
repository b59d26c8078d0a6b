"""The producer side of `KafkaBus`: one producer per bus, shared by all threads (kafka-python's is thread-safe).

``acks="all"``, a small linger so that concurrent publishers share batches, and `publish` waits on the record's
future, so a message is durable when `publish` returns. The producer is *not* idempotent
(``enable_idempotence=False``, against kafka-python's default): Tansu 0.6 on s3 storage answers concurrent
idempotent producers with OutOfOrderSequenceNumber and then fails InitProducerId. So a producer retry (or
`publish`'s own second attempt) can write a record twice; that is harmless because every consumer is idempotent
by request id. The key is the request id; the default partitioner hashes it (murmur2), so one request's messages
stay in one partition, in order.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from skbqa.bus.kafka_base import KafkaClientBase, _kafka, _quietly
from skbqa.common.errors import BackendUnavailableError, InvalidInputError


class KafkaProducerSide(KafkaClientBase):
    """`publish`, over a producer connected on first use and replaced after a failure."""

    _linger_ms: int
    _producer_lock: threading.Lock
    _producer: Any

    def publish(self, topic: str, key: str, value: bytes, headers: Mapping[str, str] | None = None) -> None:
        if not isinstance(value, bytes | bytearray | memoryview):
            raise InvalidInputError(f"message value must be bytes, not {type(value).__name__}")
        wire_topic = self._wire(topic)
        record_headers = [(name, text.encode("utf-8")) for name, text in (headers or {}).items()]
        errors = _kafka().errors
        # Whatever broke the producer (a broker restart mid-request, a stale connection; and, should idempotence
        # ever be turned back on, a broker that lost its producer state answering UnknownProducerId or an
        # endless sequence reset), a failed publish replaces the producer and tries once more (a broker that is
        # really down fails the second attempt within its own timeouts). A duplicate from the retry is harmless:
        # consumers are idempotent by request id.
        retryable = (errors.UnknownProducerIdError, errors.OutOfOrderSequenceNumberError, errors.KafkaTimeoutError)
        for attempt in (1, 2):
            producer = self._get_producer()
            try:
                with self._errors(f"publish to {wire_topic}"):
                    future = producer.send(
                        wire_topic, value=bytes(value), key=key.encode("utf-8"), headers=record_headers
                    )
                    # Waiting on this record's own future (not flush()) keeps other threads' publishes independent.
                    future.get(timeout=self._publish_timeout_s + 1)
                return
            except BackendUnavailableError as exc:
                self._drop_producer(producer)  # whatever failed, the next publish starts from a clean producer
                if attempt == 2 or not isinstance(exc.__cause__, retryable):
                    raise

    def _get_producer(self) -> Any:
        self._check_open()
        with self._producer_lock:
            if self._producer is None:
                publish_ms = int(self._publish_timeout_s * 1000)
                with self._errors("connect producer"):
                    self._producer = _kafka().KafkaProducer(
                        bootstrap_servers=self._servers,
                        **self._security,
                        client_id=self.client_id,
                        acks="all",
                        # Off: tansu (0.6) answers concurrent idempotent producers on s3 storage with
                        # OutOfOrderSequenceNumber and then fails InitProducerId, leaving the producer unusable.
                        # skbqa does not need it: a duplicate from a producer retry is dropped by request id.
                        enable_idempotence=False,
                        linger_ms=self._linger_ms,
                        max_block_ms=publish_ms,
                        request_timeout_ms=publish_ms,
                        # kafka-python requires delivery >= linger + request timeout
                        delivery_timeout_ms=publish_ms + self._linger_ms,
                        bootstrap_timeout_ms=self._connect_timeout_ms,
                    )
            return self._producer

    def _drop_producer(self, producer: Any) -> None:
        with self._producer_lock:
            if self._producer is producer:
                self._producer = None
        _quietly(lambda: producer.close(timeout=0))
