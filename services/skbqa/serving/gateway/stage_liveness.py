"""Readiness that means the pipeline works: the gateway watches every stage's input topic and reports a stage
that has stopped taking work.

Every two seconds a watcher thread of the gateway (`BusBackend`) asks the bus for each stage group's lag on its
input topic; the health probe reads its last verdict, so lag calls blocked by a broker that died mid-call never
delay the probe's own check of the broker. A stage is stalled when messages wait for it, their number has not gone down for `stall_s` seconds, and
no answer has come back in that time either: its consumers are dead, or all of them are stuck. (Under a load
faster than a stage, its lag may only grow while answers still flow: that stage works.) A stage with nothing
waiting is never stalled (an idle pipeline is a working one), so a dead stage is reported within `stall_s` of the
first request it should have taken. The gateway's health then turns NOT_SERVING with the stage named in the reason, and
`skbqa_stage_stalled{stage}` is 1 for it (0 otherwise): Kubernetes stops routing to a gateway whose pipeline
cannot answer, while its liveness probe (`grpc_server.LIVENESS`) keeps the pod from being restarted for it.

Co-located stages (one service running, say, `parser+symbols+grounding`: serving/stages/chain.py) consume only
their first stage's topic, in its group; the topics between them carry nothing and have no group. The gateway is
told the deployment's co-located groups (`--colocated`, `SKBQA_COLOCATED`) and watches each group through its
first stage alone (`watched_stages`): a reason names the whole service, and the other members' gauges stay 0.
Without being told, an empty in-between topic still reads as lag 0 (never stalled); only messages left on it by an
earlier layout would be reported.

The lag calls are the Bus port's (`Bus.lag`), so the memory bus and Kafka are watched alike; a lag call that
fails leaves the last verdict in place (the probe reports the broker itself as unreachable separately).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from skbqa.bus import topics
from skbqa.bus.base import Bus
from skbqa.observability.metrics import get_metrics

logger = logging.getLogger(__name__)

DEFAULT_STALL_S = 10.0
# Each stage of the pipeline, in order, with the topic it consumes (its group is `skbqa-<stage>`, as in
# `serving.worker.StageWorker`).
PIPELINE: tuple[tuple[str, str], ...] = (
    ("parser", topics.QUERY),
    ("symbols", topics.PARSED),
    ("grounding", topics.SYMBOLS),
    ("ranking", topics.GROUNDED),
    ("reranker", topics.RANKED),
)


def watched_stages(colocated: Sequence[str] = ()) -> tuple[tuple[str, str], ...]:
    """`PIPELINE` for a deployment whose `colocated` groups ("parser+symbols+grounding", …) each run as one
    service: a group is watched on its first stage's topic and group, under the group's name."""
    from skbqa.serving.stages.chain import service_roles

    topic_of = dict(PIPELINE)
    return tuple((service, topic_of[service.split("+")[0]]) for service in service_roles(colocated))


@dataclass
class _Watch:
    lag: int = 0
    waiting_since: float | None = None  # when messages started waiting without the count going down


class StageLiveness:
    def __init__(
        self,
        bus: Bus,
        *,
        stages: Sequence[tuple[str, str]] = PIPELINE,
        stall_s: float = DEFAULT_STALL_S,
        clock: Callable[[], float] = time.monotonic,
        last_answer: Callable[[], float | None] = lambda: None,
    ) -> None:
        """`last_answer`: when (on `clock`) the gateway last received an answer, None if never."""
        if stall_s <= 0:
            raise ValueError("stall_s must be > 0")
        self._bus = bus
        self._stages = tuple(stages)
        self._stall_s = stall_s
        self._clock = clock
        self._last_answer = last_answer
        self._watches = {stage: _Watch() for stage, _ in self._stages}
        # when (on `clock`) the last check began that read every stage's lag, all 0: nothing waits anywhere
        self.idle_at: float | None = None
        watched = {stage.split("+")[0] for stage, _ in self._stages}
        for stage, _ in PIPELINE:  # inside a co-located service: nothing waits there, ever
            if stage not in watched:
                get_metrics().set_stage_stalled(stage, False)

    def check(self) -> str:
        """ "" when every stage is taking work; otherwise which stage is not and why (for the health reason)."""
        now = self._clock()
        answered = self._last_answer()
        flowing = answered is not None and now - answered < self._stall_s
        stalled: list[str] = []
        idle = True
        for stage, topic in self._stages:
            watch = self._watches[stage]
            entry = stage.split("+")[0]  # a co-located service consumes in its first stage's group
            try:
                lag = int(self._bus.lag(f"skbqa-{entry}", [topic]).get(topic, 0))
            except Exception as exc:  # the broker is away: the probe says so; keep the last verdict
                logger.debug("lag of %s: %s", stage, exc)
                lag = watch.lag
                idle = False
            if lag <= 0:
                watch.waiting_since = None
            elif watch.waiting_since is None or lag < watch.lag:
                watch.waiting_since = now  # work arrived, or the stage took some: the clock starts again
            watch.lag = lag
            idle = idle and lag <= 0
            is_stalled = (
                not flowing and watch.waiting_since is not None and now - watch.waiting_since >= self._stall_s
            )
            get_metrics().set_stage_stalled(entry, is_stalled)
            if is_stalled:
                stalled.append(f"{stage} ({lag} waiting)")
        self.idle_at = now if idle else None
        if not stalled:
            return ""
        return (
            f"no progress for {self._stall_s:.0f} s on stage {', '.join(stalled)}: "
            "no live consumer in its group, or all of them stuck"
        )
