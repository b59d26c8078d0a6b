"""What every Kafka client of a `KafkaBus` shares: the lazy kafka-python import, prefixed wire names, and
turning client failures into one-line `BackendUnavailableError`s.

kafka-python is optional (``pip install skbqa[kafka]``): `_kafka()` imports it when a client is built, never at
module import.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from skbqa.bus import topics as topic_names
from skbqa.common.errors import BackendUnavailableError

logger = logging.getLogger(__name__)

_MESSAGE_LIMIT = 200  # characters of a client error kept in our one-line message


def _kafka() -> Any:
    try:
        import kafka
    except ImportError:
        raise BackendUnavailableError(
            "the Kafka bus needs kafka-python: pip install 'skbqa[kafka]' (kafka-python==3.0.12)"
        ) from None
    return kafka


def _one_line(exc: BaseException) -> str:
    """The first line of a client error, shortened, with its class name once (kafka-python often repeats it)."""
    name = type(exc).__name__
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    if len(text) > _MESSAGE_LIMIT:
        text = text[: _MESSAGE_LIMIT - 3] + "..."
    if not text:
        return name
    return text if name in text else f"{name}: {text}"


def _quietly(close: Any) -> None:
    try:
        close()
    except Exception as exc:  # closing must not mask the caller's own error path
        logger.warning("closing a Kafka client failed: %s", _one_line(exc))


class KafkaClientBase:
    """The state and helpers every side of `KafkaBus` (producer, consumers, admin) uses; `KafkaBus` sets it."""

    bootstrap: str
    topic_prefix: str
    client_id: str
    _servers: list[str]
    _security: dict[str, Any]
    _connect_timeout_ms: int
    _publish_timeout_s: float
    _lock: threading.Lock  # _closed and _consumers
    _closed: bool

    def _wire(self, topic: str) -> str:
        return topic_names.with_prefix(topic, self.topic_prefix)

    def _check_open(self) -> None:
        if self._closed:
            raise BackendUnavailableError("the Kafka bus is closed")

    @contextmanager
    def _errors(self, action: str) -> Iterator[None]:
        """Turn every client failure into one `BackendUnavailableError` naming the broker and the action."""
        kafka = _kafka()
        try:
            yield
        except BackendUnavailableError:
            raise
        except (kafka.errors.KafkaError, OSError) as exc:
            raise BackendUnavailableError(
                f"Kafka at {self.bootstrap}: {action} failed ({_one_line(exc)})", bootstrap=self.bootstrap
            ) from exc
