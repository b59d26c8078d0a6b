"""A stage's time is its own work: publishing its output is measured apart (skbqa_publish_seconds), so stage
times, publish times and queue waits add up instead of counting the publish twice."""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping

from skbqa.bus import topics
from skbqa.bus.memory import MemoryBus
from skbqa.observability.metrics import get_metrics
from skbqa.serving.stages.core import StageMessage
from skbqa.serving.worker import StageWorker
from tests.fakes.backends import GatedStageCore

PUBLISH_S = 0.3


class SlowPublishBus(MemoryBus):
    def publish(self, topic: str, key: str, value: bytes, headers: Mapping[str, str] | None = None) -> None:
        if topic != topics.QUERY:
            time.sleep(PUBLISH_S)  # a broker that takes its time to acknowledge
        super().publish(topic, key, value, headers)


def sample(name: str, **labels: str) -> float:
    return get_metrics().registry.get_sample_value(name, labels) or 0.0


def test_publishing_is_not_part_of_the_stage_time() -> None:
    bus = SlowPublishBus()
    bus.ensure_topics(topics.ALL)
    core = GatedStageCore(open_gate=True, role="parser")
    stage_before = sample("skbqa_stage_seconds_sum", stage="parser", strategy="bm25", status="ok")
    publish_before = sample("skbqa_publish_seconds_sum", stage="parser")
    worker = StageWorker(
        core, bus, group=f"g-{uuid.uuid4().hex[:6]}", poll_timeout_s=0.02, lag_interval_s=0
    ).start()
    try:
        message = StageMessage(request_id="r-1", question="q", strategy="bm25", k=1)
        bus.publish(topics.QUERY, "r-1", message.SerializeToString())
        deadline = time.monotonic() + 10
        while worker.processed < 1 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert worker.processed == 1
    finally:
        worker.stop()
        bus.close()
    stage = sample("skbqa_stage_seconds_sum", stage="parser", strategy="bm25", status="ok") - stage_before
    publish = sample("skbqa_publish_seconds_sum", stage="parser") - publish_before
    assert publish >= PUBLISH_S
    assert stage < PUBLISH_S / 2, stage
