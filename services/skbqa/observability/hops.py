"""A request's latency budget in the distributed form: the hops its time is cut into, and the arithmetic.

A trace is a list of marks `(hop, unix_us)`. The first, `accepted`, is when the gateway took the call; every later
mark ends the hop it names. Consecutive marks therefore partition the time from accept to the answer's return, and
the parts add up to the gateway's end-to-end time by construction:

    gateway_accept    accepted → the first stage message stamped for publishing (validation, replay cache, limits)
    <stage>_queue     the previous stamp → this stage's worker takes the message: serializing and publishing it
                      (producer, broker, acks), the consumer's fetch, waiting behind earlier messages of its batch
    <stage>_compute   taken → its output stamped for publishing: decoding, checks and the stage's own work
    answer_queue      the last stage's answer stamped → read by the waiting gateway
    gateway_return    read → the response is ready (hand-off to the call's thread, decoding, the replay cache)

There is no separate publish hop: the mark that would end it (the broker's acknowledgement) exists only after the
message has left, so no message can carry it, and a consumer may take the message before the producer hears the
ack. The producer's side is `skbqa_publish_seconds{stage}`; it lies inside the next `<stage>_queue` hop.

Marks are wall-clock microseconds (`time.time_ns`), comparable across processes on one host. Across hosts, clock
skew between two services moves time from one queue hop to a neighbouring queue hop (a compute hop is read off one
clock); the total stays exact, because it starts and ends on the gateway's clock. A part smaller than the skew
can come out negative: the response shows it as measured, the histogram records it as 0.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterable

# The pipeline's stages in order (the same as skbqa.serving.stages.core.ROLES, which this floor cannot import;
# tests/unit/test_latency_trace.py keeps the two equal).
STAGES = ("parser", "symbols", "grounding", "ranking", "reranker")

ACCEPTED = "accepted"  # the trace's origin: not a hop
GATEWAY_ACCEPT = "gateway_accept"
ANSWER_QUEUE = "answer_queue"
GATEWAY_RETURN = "gateway_return"

# The keys a response's `timings_ms` carries the trace under: one per hop, and their sum.
TIMING_PREFIX = "hop."
END_TO_END = "end_to_end"


def queue_hop(stage: str) -> str:
    return f"{stage}_queue"


def compute_hop(stage: str) -> str:
    return f"{stage}_compute"


# Every hop a trace can hold, in pipeline order: the allow-list of `skbqa_hop_seconds{hop}`.
HOPS: tuple[str, ...] = (
    GATEWAY_ACCEPT,
    *(hop for stage in STAGES for hop in (queue_hop(stage), compute_hop(stage))),
    ANSWER_QUEUE,
    GATEWAY_RETURN,
)


def now_us() -> int:
    return time.time_ns() // 1000


def parts_us(marks: Iterable[tuple[str, int]]) -> dict[str, int]:
    """Each hop's duration (µs), in trace order; {} when the trace does not start at `accepted` (no trace: the
    embedded server, or a message from a producer that does not trace). A hop met twice is summed."""
    ordered = list(marks)
    if not ordered or ordered[0][0] != ACCEPTED:
        return {}
    parts: dict[str, int] = {}
    for (_, start), (hop, end) in itertools.pairwise(ordered):
        parts[hop] = parts.get(hop, 0) + end - start
    return parts


def budget_timings(parts: dict[str, int]) -> dict[str, float]:
    """The trace as `timings_ms` entries: `hop.<hop>` per part and `end_to_end`, their sum (ms)."""
    timings = {f"{TIMING_PREFIX}{hop}": us / 1000 for hop, us in parts.items()}
    timings[END_TO_END] = sum(parts.values()) / 1000
    return timings
