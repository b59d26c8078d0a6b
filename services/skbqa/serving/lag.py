"""Export a consumer group's lag on its input topics as `skbqa_kafka_lag{topic,group}`.

A stage worker starts one `LagExporter`: a daemon thread that every `interval_s` asks the Bus port for the
group's lag (`bus.lag(group, topics)`) and sets the gauge. Lag is group-wide (the Bus port has no per-member
view), so every replica of a group reports the same value: aggregate it with `max`, not `sum`.

The exporter must never hurt the worker: each call runs on its own daemon thread and is waited for at most
`timeout_s` (a Kafka admin call can block for its connect timeout); while a timed-out call is still running no
new one starts, so a hung broker costs one thread, not one per tick. Failures are logged and counted as
`skbqa_errors_total{stage, kind="lag"|"lag_timeout"}`; the last good value stays on the gauge.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence

from skbqa.bus.base import Bus
from skbqa.observability.metrics import Metrics, get_metrics

logger = logging.getLogger(__name__)

DEFAULT_INTERVAL_S = 5.0
DEFAULT_TIMEOUT_S = 3.0


class LagExporter:
    def __init__(
        self,
        bus: Bus,
        group: str,
        topics: Sequence[str],
        *,
        stage: str,
        interval_s: float = DEFAULT_INTERVAL_S,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        metrics: Metrics | None = None,
    ) -> None:
        if interval_s <= 0 or timeout_s <= 0:
            raise ValueError("lag interval and timeout must be > 0")
        self._bus = bus
        self.group = group
        self.topics = tuple(topics)
        self._stage = stage
        self._interval_s = interval_s
        self._timeout_s = timeout_s
        self._metrics = metrics or get_metrics()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._call: threading.Thread | None = None  # the lag call in progress (it may outlive its timeout)
        self._failing = False
        self.exports = 0  # successful exports (tests, diagnostics)

    def start(self) -> LagExporter:
        self._thread = threading.Thread(target=self._loop, name=f"skbqa-{self._stage}-lag", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout_s: float = 2.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout_s)

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.export_once()
            self._stop.wait(self._interval_s)

    def export_once(self) -> dict[str, int] | None:
        """Read the lag once and set the gauge; None when the call failed, timed out or one is still running."""
        if self._call is not None and self._call.is_alive():
            return None  # the previous call is still stuck: do not pile up threads behind it
        box: dict[str, dict[str, int] | BaseException] = {}

        def call() -> None:
            try:
                box["lag"] = self._bus.lag(self.group, self.topics)
            except BaseException as exc:  # reported by the waiting thread
                box["lag"] = exc

        self._call = threading.Thread(target=call, name=f"skbqa-{self._stage}-lag-call", daemon=True)
        self._call.start()
        self._call.join(self._timeout_s)
        result = box.get("lag")
        if result is None:
            self._fail("lag_timeout", f"no answer within {self._timeout_s:g} s")
            return None
        if isinstance(result, BaseException):
            self._fail("lag", f"{type(result).__name__}: {str(result).splitlines()[0] if str(result) else ''}")
            return None
        for topic in self.topics:
            self._metrics.set_lag(topic, self.group, result.get(topic, 0))
        if self._failing:
            logger.info("%s: consumer lag readable again", self._stage)
        self._failing = False
        self.exports += 1
        return result

    def _fail(self, kind: str, why: str) -> None:
        self._metrics.count_error(self._stage, kind)
        # once per failure streak at WARNING: a broker outage must not flood the log every interval
        log = logger.debug if self._failing else logger.warning
        log("%s: reading the lag of group %s failed: %s", self._stage, self.group, why)
        self._failing = True
