"""The latency trace on the wire: the marks the gateway and the stage workers add to a request's `hops`, and the
gateway's reading of them when the final answer arrives (hops and their arithmetic: observability/hops.py).

Who marks what, so that consecutive marks are contiguous:
- the servicer: `accepted` when it takes the call;
- the bus backend: `gateway_accept` right before it serializes the first stage message;
- each stage worker: `<stage>_queue` when it takes the message, `<stage>_compute` right before it publishes its
  outputs (the forward and any answers carry the same marks);
- the bus backend's answer router: `answer_queue` when it reads the answer;
- the servicer: the histogram per hop, then `gateway_return` when the response is ready, and the `timings_ms` keys;
  on a partial answer (AskStream) the keys of the hops completed by then, and no histogram.
"""

from __future__ import annotations

from skbqa.observability import hops
from skbqa.observability.metrics import get_metrics
from skbqa.serving.stages.core import StageOutput
from skbqa.v1 import api_pb2, stages_pb2

Traced = stages_pb2.StageMessage | stages_pb2.AnswerEnvelope  # the two messages that carry a trace


def mark(message: Traced, hop: str, unix_us: int | None = None) -> None:
    """Append a mark: `hop` ends now (or at `unix_us`)."""
    message.hops.add(hop=hop, unix_us=hops.now_us() if unix_us is None else unix_us)


def marks_of(message: Traced) -> list[tuple[str, int]]:
    return [(item.hop, item.unix_us) for item in message.hops]


def carry(request: stages_pb2.StageMessage, output: StageOutput, stage: str, taken_us: int) -> None:
    """Give every output of `stage` the request's trace plus this stage's queue and compute hops (the compute hop
    ends now: call it right before publishing). Untraced requests stay untraced."""
    if not request.hops:
        return
    trace = marks_of(request)  # read first: a core may forward the request object itself
    sent_us = hops.now_us()
    traced: list[Traced] = list(output.answers)
    if output.forward is not None:
        traced.append(output.forward)
    for message in traced:
        del message.hops[:]
        for hop, unix_us in trace:
            mark(message, hop, unix_us)
        mark(message, hops.queue_hop(stage), taken_us)
        mark(message, hops.compute_hop(stage), sent_us)


def finish(envelope: stages_pb2.AnswerEnvelope, response: api_pb2.AskResponse) -> None:
    """At the gateway, with the final answer's response ready: record each hop in `skbqa_hop_seconds`, close the
    trace (`gateway_return`) and add the budget to the response's `timings_ms` (`hop.<hop>` and `end_to_end`)."""
    _close(envelope, response, record=True)


def so_far(envelope: stages_pb2.AnswerEnvelope, response: api_pb2.AskResponse) -> None:
    """At the gateway, with a partial answer's response ready (AskStream): the same `timings_ms` keys for the
    hops the request has completed by then — up to the compute hop of the stage that sent the partial, its
    answer_queue and this event's gateway_return — and `end_to_end` as accept → this event. Nothing is recorded
    in `skbqa_hop_seconds`: the histogram counts each call once, at its final answer."""
    _close(envelope, response, record=False)


def _close(envelope: stages_pb2.AnswerEnvelope, response: api_pb2.AskResponse, *, record: bool) -> None:
    marks = marks_of(envelope)
    parts = hops.parts_us(marks)
    if not parts:
        return
    metrics = get_metrics()
    if record:
        for hop, us in parts.items():  # before the trace closes: recording it is the gateway's own work
            metrics.observe_hop(hop, us / 1e6)
    parts[hops.GATEWAY_RETURN] = hops.now_us() - marks[-1][1]
    if record:
        metrics.observe_hop(hops.GATEWAY_RETURN, parts[hops.GATEWAY_RETURN] / 1e6)
    response.timings_ms.update(hops.budget_timings(parts))
