"""Prometheus metrics shared by every skbqa service: one `Metrics` object per process (`get_metrics()`).

The metric names and labels below are a contract: stage code, the bus, the gateway and
`deploy/grafana/skbqa-dashboard.json` rely on them. `SPECS` is the single list they are built from.

`prometheus_client` is imported only when a `Metrics` is first built, so importing this module costs nothing
and the embedded path (which records no metrics) does not need the `metrics` extra installed.

Each `Metrics` owns a dedicated `CollectorRegistry` rather than the library's global one: tests build fresh,
isolated instances, and nothing a third-party library registers globally leaks into our `/metrics`.

Label values never carry user data. Every value passes `label_value()`: lower-cased, then kept only if it
matches `[a-z0-9_.-]{1,40}`, else replaced by `"other"`. Two reasons: each distinct value is a new time series
in Prometheus (an unbounded value — a question, an id, an exception message — would blow up its memory), and a
question's text must never end up in a monitoring system with looser access rules than the request path.
Lower-casing lets gRPC method names (`Ask`) and status codes (`DEADLINE_EXCEEDED`) pass as `ask` and
`deadline_exceeded`; anything with a space, slash or colon (a sentence, a full method path) becomes `"other"`.
"""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from skbqa.observability.hops import HOPS

if TYPE_CHECKING:
    from wsgiref.simple_server import WSGIServer

    from prometheus_client import CollectorRegistry

OTHER = "other"
_LABEL_VALUE = re.compile(r"[a-z0-9_.-]{1,40}")

# Stage latencies run from sub-millisecond steps (a CSR lookup) to seconds (an LLM rerank): 0.5 ms … 10 s.
LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
# End to end adds queueing across six stages and LLM calls, so the top buckets reach past 10 s.
REQUEST_BUCKETS = (*LATENCY_BUCKETS, 20.0, 30.0, 60.0)
BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)

# The outcomes the dashboard expects for `count_message`; workers may add their own (an `expired` deadline,
# an `error`), which pass the label allow-list like any other value.
# "late": an answer for a call that had already ended without one (its deadline passed) — not a duplicate
MESSAGE_OUTCOMES = frozenset({"ok", "retried", "dead_lettered", "duplicate", "late"})
# What `count_llm` reads from a usage dict. Parser traces (the `llm_usage` note) report `calls` — answered
# calls, a failing one raises instead; reranker `UsageMeter`s report `prompts` (answered), `failed`, `skipped`
# (never sent) and `abandoned` (still in flight at the deadline).
_LLM_ANSWERED_KEYS = ("calls", "prompts")
_LLM_OTHER_OUTCOMES = ("failed", "skipped", "abandoned")
_LLM_TOKEN_KEYS = (("prompt_tokens", "prompt"), ("completion_tokens", "completion"))

Kind = Literal["histogram", "counter", "gauge"]


@dataclass(frozen=True)
class MetricSpec:
    name: str
    kind: Kind
    help: str
    labels: tuple[str, ...]
    buckets: tuple[float, ...] = ()

    def series_names(self) -> frozenset[str]:
        """The sample names Prometheus stores for this metric (what PromQL may reference)."""
        if self.kind == "histogram":
            return frozenset({f"{self.name}_bucket", f"{self.name}_sum", f"{self.name}_count"})
        return frozenset({self.name})


SPECS: tuple[MetricSpec, ...] = (
    MetricSpec(
        "skbqa_stage_seconds",
        "histogram",
        "Time one pipeline stage took for one request",
        ("stage", "strategy", "status"),
        LATENCY_BUCKETS,
    ),
    MetricSpec(
        "skbqa_queue_wait_seconds",
        "histogram",
        "Time a message waited on the bus before a worker took it",
        ("stage",),
        LATENCY_BUCKETS,
    ),
    MetricSpec(
        "skbqa_publish_seconds",
        "histogram",
        "Time a stage took to publish one request's outputs durably (not part of its stage time)",
        ("stage",),
        LATENCY_BUCKETS,
    ),
    MetricSpec(
        "skbqa_hop_seconds",
        "histogram",
        "One hop of a request's latency trace, recorded by the gateway at its answer (the hops add up to it)",
        ("hop",),
        LATENCY_BUCKETS,
    ),
    MetricSpec("skbqa_errors_total", "counter", "Errors by stage and kind", ("stage", "kind")),
    MetricSpec(
        "skbqa_request_seconds",
        "histogram",
        "Gateway end-to-end request latency",
        ("rpc", "status"),
        REQUEST_BUCKETS,
    ),
    MetricSpec("skbqa_inflight", "gauge", "Requests or messages being processed now", ("service",)),
    MetricSpec(
        "skbqa_kafka_lag",
        "gauge",
        "Messages the consumer group has not committed on the topic (group-wide: each member reports it)",
        ("topic", "group"),
    ),
    MetricSpec(
        "skbqa_stage_stalled",
        "gauge",
        "1 while messages wait for the stage and none has been taken for the stall time (the gateway's view)",
        ("stage",),
    ),
    MetricSpec("skbqa_llm_tokens_total", "counter", "LLM tokens by kind", ("kind", "component")),
    MetricSpec("skbqa_llm_calls_total", "counter", "LLM calls by outcome", ("component", "outcome")),
    MetricSpec(
        "skbqa_encoder_batch_size",
        "histogram",
        "Texts per encoder call",
        ("encoder",),
        BATCH_BUCKETS,
    ),
    MetricSpec("skbqa_messages_total", "counter", "Bus messages by outcome", ("stage", "outcome")),
    MetricSpec(
        "skbqa_kb_version", "gauge", "The knowledge-base version this process serves (live updates)", ("role",)
    ),
)


class MetricsUnavailableError(RuntimeError):
    """prometheus_client is not installed (the embedded path does not need it; services do)."""


def label_value(value: object) -> str:
    """`value` as a safe label value: lower-cased, kept if it matches the allow-list pattern, else "other"."""
    text = str(value).lower()
    return text if _LABEL_VALUE.fullmatch(text) else OTHER


def _load_client() -> Any:
    try:
        import prometheus_client
    except ImportError as exc:  # pragma: no cover - the dev environment always has it
        raise MetricsUnavailableError("metrics need prometheus-client: pip install 'skbqa[metrics]'") from exc
    return prometheus_client


def _build(client: Any, spec: MetricSpec, registry: CollectorRegistry) -> Any:
    if spec.kind == "histogram":
        return client.Histogram(spec.name, spec.help, spec.labels, registry=registry, buckets=spec.buckets)
    factory = client.Counter if spec.kind == "counter" else client.Gauge
    return factory(spec.name, spec.help, spec.labels, registry=registry)


class Metrics:
    """The instruments of one registry, and helpers that sanitise every label value before recording."""

    def __init__(self) -> None:
        self._client = _load_client()
        self.registry: CollectorRegistry = self._client.CollectorRegistry()
        self._instruments = {spec.name: _build(self._client, spec, self.registry) for spec in SPECS}

    def _labels(self, name: str, *values: object) -> Any:
        return self._instruments[name].labels(*(label_value(v) for v in values))

    # --- stages -------------------------------------------------------------------------------------------

    def observe_stage(self, stage: str, strategy: str, seconds: float, status: str = "ok") -> None:
        if _usable(seconds):
            self._labels("skbqa_stage_seconds", stage, strategy, status).observe(seconds)

    def observe_timings(self, timings: Mapping[str, float], strategy: str, status: str = "ok") -> None:
        """One observation per stage of a `QueryContext.timings` dict (stage name -> seconds)."""
        for stage, seconds in timings.items():
            self.observe_stage(stage, strategy, seconds, status)

    def observe_publish(self, stage: str, seconds: float) -> None:
        if _usable(seconds):
            self._labels("skbqa_publish_seconds", stage).observe(seconds)

    def observe_queue_wait(self, stage: str, seconds: float) -> None:
        # Producer and consumer clocks differ across hosts: a small negative wait means "no wait".
        if math.isfinite(seconds):
            self._labels("skbqa_queue_wait_seconds", stage).observe(max(0.0, seconds))

    def observe_hop(self, hop: str, seconds: float) -> None:
        """`hop`: one of `hops.HOPS` (anything else is recorded as "other"). A negative part (clock skew between
        hosts, see hops.py) is recorded as 0, so the histogram's sum only grows."""
        if math.isfinite(seconds):
            label = hop if hop in HOPS else OTHER
            self._instruments["skbqa_hop_seconds"].labels(label).observe(max(0.0, seconds))

    def count_error(self, stage: str, kind: str) -> None:
        """`kind` is an error class or category (`timeout`, `llmerror`), never the exception's message."""
        self._labels("skbqa_errors_total", stage, kind).inc()

    def count_message(self, stage: str, outcome: str) -> None:
        """`outcome`: one of MESSAGE_OUTCOMES, or another short code-defined word."""
        self._labels("skbqa_messages_total", stage, outcome).inc()

    # --- gateway, bus, models ------------------------------------------------------------------------------

    def observe_request(self, rpc: str, status: str, seconds: float) -> None:
        """`rpc` is the short method name (`Ask`), not the full path (`/skbqa.Gateway/Ask` becomes "other")."""
        if _usable(seconds):
            self._labels("skbqa_request_seconds", rpc, status).observe(seconds)

    def set_lag(self, topic: str, group: str, lag: int) -> None:
        """The group's uncommitted messages on `topic`, summed over its partitions (`Bus.lag`; set periodically by
        each stage worker's LagExporter). Every member of a group reports the same group-wide value, so aggregate
        replicas with `max`, not `sum`."""
        self._labels("skbqa_kafka_lag", topic, group).set(lag)

    def set_stage_stalled(self, stage: str, stalled: bool) -> None:
        """Whether the gateway sees the stage's input waiting without progress (`StageLiveness`)."""
        self._labels("skbqa_stage_stalled", stage).set(1 if stalled else 0)

    def set_kb_version(self, role: str, version: int) -> None:
        """The knowledge-base version a stage serves (the updater: the newest it folded)."""
        self._labels("skbqa_kb_version", role.replace("+", "_")).set(version)

    def count_llm(self, component: str, usage: Mapping[str, int]) -> None:
        """Add an LLM usage dict (a parser's `llm_usage` note, a reranker's `UsageMeter.close()`); other keys
        (fallback_*, unparsed, rounds) are ignored."""
        for key, kind in _LLM_TOKEN_KEYS:
            self._add("skbqa_llm_tokens_total", usage.get(key, 0), kind, component)
        answered = next((usage[key] for key in _LLM_ANSWERED_KEYS if key in usage), 0)
        self._add("skbqa_llm_calls_total", answered, component, "ok")
        for outcome in _LLM_OTHER_OUTCOMES:
            self._add("skbqa_llm_calls_total", usage.get(outcome, 0), component, outcome)

    def _add(self, name: str, amount: object, *labels: str) -> None:
        # Counters only go up; a zero or missing count creates no series.
        if isinstance(amount, int | float) and amount > 0:
            self._labels(name, *labels).inc(amount)

    def observe_encoder_batch(self, encoder: str, size: int) -> None:
        self._labels("skbqa_encoder_batch_size", encoder).observe(size)

    @contextmanager
    def inflight(self, service: str) -> Iterator[None]:
        """Count the enclosed work as in flight for `service` (decremented even when it raises)."""
        gauge = self._labels("skbqa_inflight", service)
        gauge.inc()
        try:
            yield
        finally:
            gauge.dec()

    # --- exposition ----------------------------------------------------------------------------------------

    def render(self) -> bytes:
        """The registry in the Prometheus text exposition format (what `/metrics` serves)."""
        data: bytes = self._client.generate_latest(self.registry)
        return data

    def start_metrics_server(self, port: int, host: str = "127.0.0.1") -> tuple[WSGIServer, int]:
        """Serve `/metrics` on a daemon thread; port 0 picks a free port. Returns (server, bound port); stop
        with `server.shutdown(); server.server_close()`. Loopback by default: exposing it is a deploy choice."""
        server, _thread = self._client.start_http_server(port, addr=host, registry=self.registry)
        return server, int(server.server_port)


def _usable(seconds: float) -> bool:
    # A NaN or negative duration (a clock stepped back) would corrupt the histogram's sum: drop it.
    return math.isfinite(seconds) and seconds >= 0


_lock = threading.Lock()
_metrics: Metrics | None = None


def get_metrics() -> Metrics:
    """The process-wide `Metrics`, built on first use."""
    global _metrics
    with _lock:
        if _metrics is None:
            _metrics = Metrics()
        return _metrics


# Module-level shortcuts to the process-wide instance, for call sites that do not hold a `Metrics`.


def observe_stage(stage: str, strategy: str, seconds: float, status: str = "ok") -> None:
    get_metrics().observe_stage(stage, strategy, seconds, status)


def observe_timings(timings: Mapping[str, float], strategy: str, status: str = "ok") -> None:
    get_metrics().observe_timings(timings, strategy, status)


def observe_queue_wait(stage: str, seconds: float) -> None:
    get_metrics().observe_queue_wait(stage, seconds)


def count_error(stage: str, kind: str) -> None:
    get_metrics().count_error(stage, kind)


def count_message(stage: str, outcome: str) -> None:
    get_metrics().count_message(stage, outcome)


def observe_request(rpc: str, status: str, seconds: float) -> None:
    get_metrics().observe_request(rpc, status, seconds)


def set_lag(topic: str, group: str, lag: int) -> None:
    get_metrics().set_lag(topic, group, lag)


def count_llm(component: str, usage: Mapping[str, int]) -> None:
    get_metrics().count_llm(component, usage)


def observe_encoder_batch(encoder: str, size: int) -> None:
    get_metrics().observe_encoder_batch(encoder, size)


@contextmanager
def inflight(service: str) -> Iterator[None]:
    with get_metrics().inflight(service):
        yield


def render() -> bytes:
    return get_metrics().render()


def start_metrics_server(port: int, host: str = "127.0.0.1") -> tuple[WSGIServer, int]:
    return get_metrics().start_metrics_server(port, host)
