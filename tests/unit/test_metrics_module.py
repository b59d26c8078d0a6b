"""skbqa.observability.metrics: the instrument contract (names, labels), helpers, label sanitising, exposition."""

from __future__ import annotations

import math
import subprocess
import sys
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from skbqa.observability import metrics as metrics_module
from skbqa.observability.metrics import Metrics, get_metrics, label_value
from skbqa.stages.rerank.descriptions import FittedPrompt
from skbqa.stages.rerank.llm_common import UsageMeter

# The contract other code and the Grafana dashboard rely on, spelled out independently of SPECS.
EXPECTED = {
    "skbqa_stage_seconds": ("histogram", {"stage", "strategy", "status"}),
    "skbqa_queue_wait_seconds": ("histogram", {"stage"}),
    "skbqa_publish_seconds": ("histogram", {"stage"}),
    "skbqa_hop_seconds": ("histogram", {"hop"}),
    "skbqa_errors": ("counter", {"stage", "kind"}),
    "skbqa_request_seconds": ("histogram", {"rpc", "status"}),
    "skbqa_inflight": ("gauge", {"service"}),
    "skbqa_kafka_lag": ("gauge", {"topic", "group"}),
    "skbqa_stage_stalled": ("gauge", {"stage"}),
    "skbqa_kb_version": ("gauge", {"role"}),
    "skbqa_llm_tokens": ("counter", {"kind", "component"}),
    "skbqa_llm_calls": ("counter", {"component", "outcome"}),
    "skbqa_encoder_batch_size": ("histogram", {"encoder"}),
    "skbqa_messages": ("counter", {"stage", "outcome"}),
}
QUESTION = "Which genes are associated with asthma and expressed in the lung?"


def record_one_of_each(m: Metrics) -> None:
    m.observe_stage("parse", "af", 0.01)
    m.observe_queue_wait("parse", 0.002)
    m.observe_hop("parser_queue", 0.003)
    m.count_error("ground", "timeout")
    m.set_stage_stalled("parser", False)
    m.observe_request("Ask", "ok", 0.3)
    with m.inflight("gateway"):
        pass
    m.set_lag("skbqa.query", "skbqa-parser", 7)
    m.count_llm("parser", {"calls": 1, "prompt_tokens": 10, "completion_tokens": 2})
    m.observe_encoder_batch("minilm", 32)
    m.count_message("parse", "ok")
    m.set_kb_version("parser+symbols", 3)


def sample(m: Metrics, name: str, **labels: str) -> float | None:
    return m.registry.get_sample_value(name, labels)


def test_every_instrument_renders_with_its_name_type_and_labels() -> None:
    m = Metrics()
    record_one_of_each(m)
    families = {f.name: f for f in text_string_to_metric_families(m.render().decode())}
    for name, (kind, labels) in EXPECTED.items():
        assert name in families, f"{name} missing from render()"
        family = families[name]
        assert family.type == kind, name
        for s in family.samples:
            if s.name.endswith("_created"):
                continue
            assert set(s.labels) - {"le"} == labels, (s.name, s.labels)
    # The text parser reports prometheus_client's `*_created` timestamps as families of their own.
    ours = {n for n in families if n.startswith("skbqa_") and not n.endswith("_created")}
    assert ours == set(EXPECTED)


def test_observe_timings_records_one_observation_per_stage() -> None:
    m = Metrics()
    timings = {"parse": 0.004, "ground": 0.2, "rerank": 1.2}
    m.observe_timings(timings, "af")
    m.observe_timings({"parse": 0.004}, "af", status="error")
    for stage, seconds in timings.items():
        labels = {"stage": stage, "strategy": "af", "status": "ok"}
        assert sample(m, "skbqa_stage_seconds_count", **labels) == 1.0
        assert sample(m, "skbqa_stage_seconds_sum", **labels) == pytest.approx(seconds)
    ok_parse = {"stage": "parse", "strategy": "af", "status": "ok"}
    assert sample(m, "skbqa_stage_seconds_bucket", le="0.0025", **ok_parse) == 0.0
    assert sample(m, "skbqa_stage_seconds_bucket", le="0.005", **ok_parse) == 1.0
    assert sample(m, "skbqa_stage_seconds_count", stage="parse", strategy="af", status="error") == 1.0


def test_histogram_buckets_span_half_a_millisecond_to_ten_seconds() -> None:
    m = Metrics()
    m.observe_stage("parse", "af", 0.0001)
    text = m.render().decode()
    assert 'le="0.0005"' in text and 'le="10.0"' in text


def test_unusable_durations_are_dropped_and_clock_skew_is_no_wait() -> None:
    m = Metrics()
    m.observe_timings({"parse": math.nan, "ground": -0.5, "rank": math.inf}, "af")
    assert "skbqa_stage_seconds_count{" not in m.render().decode()
    m.observe_queue_wait("parse", -0.01)  # producer clock ahead of ours
    assert sample(m, "skbqa_queue_wait_seconds_sum", stage="parse") == 0.0
    assert sample(m, "skbqa_queue_wait_seconds_count", stage="parse") == 1.0


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("parse", "parse"),
        ("af-v2.1_x", "af-v2.1_x"),
        ("Ask", "ask"),
        ("DEADLINE_EXCEEDED", "deadline_exceeded"),
        (QUESTION, "other"),
        ("/skbqa.Gateway/Ask", "other"),
        ("a" * 41, "other"),
        ("", "other"),
        ("gene:asthma", "other"),
        ("naïve", "other"),
    ],
)
def test_label_value_allow_list(raw: str, expected: str) -> None:
    assert label_value(raw) == expected


def test_a_question_as_a_label_never_reaches_the_exposition() -> None:
    m = Metrics()
    m.observe_stage(QUESTION, QUESTION, 0.1, status=QUESTION)
    m.observe_timings({QUESTION: 0.1}, "af")
    m.count_error("ground", f"ValueError: {QUESTION}")
    m.observe_request(QUESTION, "ok", 0.1)
    text = m.render().decode()
    assert "asthma" not in text.lower()
    assert sample(m, "skbqa_stage_seconds_count", stage="other", strategy="other", status="other") == 1.0
    assert sample(m, "skbqa_stage_seconds_count", stage="other", strategy="af", status="ok") == 1.0
    assert sample(m, "skbqa_errors_total", stage="ground", kind="other") == 1.0
    assert sample(m, "skbqa_request_seconds_count", rpc="other", status="ok") == 1.0


def test_message_outcomes_are_counted_per_stage() -> None:
    m = Metrics()
    outcomes = ("ok", "retried", "dead_lettered", "duplicate", "expired", "expired because: question text")
    for outcome in outcomes:
        m.count_message("ground", outcome)
    assert {"ok", "retried", "dead_lettered", "duplicate"} <= metrics_module.MESSAGE_OUTCOMES
    for outcome in ("ok", "retried", "dead_lettered", "duplicate", "other"):
        assert sample(m, "skbqa_messages_total", stage="ground", outcome=outcome) == 1.0
    assert sample(m, "skbqa_messages_total", stage="ground", outcome="expired") == 1.0


def test_count_llm_reads_parser_notes_and_reranker_meters() -> None:
    m = Metrics()
    m.count_llm("parser", {"calls": 2, "prompt_tokens": 300, "completion_tokens": 40})
    meter = UsageMeter()  # a real reranker meter: 4 queued, 2 answered, 1 failed, so 1 never sent
    meter.queue(4)
    for _ in range(3):
        assert meter.begin(FittedPrompt("p", "full"))
    meter.answered(100, 5)
    meter.answered(120, 6)
    meter.failed()
    m.count_llm("rerank", meter.close())
    assert sample(m, "skbqa_llm_tokens_total", kind="prompt", component="parser") == 300
    assert sample(m, "skbqa_llm_tokens_total", kind="completion", component="parser") == 40
    assert sample(m, "skbqa_llm_calls_total", component="parser", outcome="ok") == 2
    assert sample(m, "skbqa_llm_tokens_total", kind="prompt", component="rerank") == 220
    assert sample(m, "skbqa_llm_tokens_total", kind="completion", component="rerank") == 11
    assert sample(m, "skbqa_llm_calls_total", component="rerank", outcome="ok") == 2
    assert sample(m, "skbqa_llm_calls_total", component="rerank", outcome="failed") == 1
    assert sample(m, "skbqa_llm_calls_total", component="rerank", outcome="skipped") == 1
    assert sample(m, "skbqa_llm_calls_total", component="rerank", outcome="abandoned") is None  # zero: no series


def test_gauges_lag_inflight_and_encoder_batches() -> None:
    m = Metrics()
    m.set_lag("skbqa.parsed", "skbqa-symbols", 12)
    m.set_lag("skbqa.parsed", "skbqa-symbols", 3)
    assert sample(m, "skbqa_kafka_lag", topic="skbqa.parsed", group="skbqa-symbols") == 3
    with pytest.raises(RuntimeError), m.inflight("ranking"):
        assert sample(m, "skbqa_inflight", service="ranking") == 1
        raise RuntimeError("boom")
    assert sample(m, "skbqa_inflight", service="ranking") == 0
    m.observe_encoder_batch("minilm", 48)
    assert sample(m, "skbqa_encoder_batch_size_bucket", encoder="minilm", le="32.0") == 0
    assert sample(m, "skbqa_encoder_batch_size_bucket", encoder="minilm", le="64.0") == 1


def test_fresh_registries_are_isolated_and_the_process_one_is_shared() -> None:
    a, b = Metrics(), Metrics()
    a.observe_stage("parse", "af", 0.1)
    assert sample(a, "skbqa_stage_seconds_count", stage="parse", strategy="af", status="ok") == 1
    assert sample(b, "skbqa_stage_seconds_count", stage="parse", strategy="af", status="ok") is None
    assert a.registry is not b.registry
    assert get_metrics() is get_metrics()
    assert get_metrics() is not a


def test_module_shortcuts_record_into_the_process_metrics() -> None:
    shared = get_metrics()
    labels = {"stage": "shortcut-test", "strategy": "vss", "status": "ok"}
    before = sample(shared, "skbqa_stage_seconds_count", **labels) or 0.0
    metrics_module.observe_timings({"shortcut-test": 0.01}, "vss")
    assert sample(shared, "skbqa_stage_seconds_count", **labels) == before + 1
    assert b'stage="shortcut-test"' in metrics_module.render()


def test_start_metrics_server_serves_metrics_on_loopback() -> None:
    m = Metrics()
    m.observe_stage("rerank", "af", 0.5)
    server, port = m.start_metrics_server(0)
    try:
        assert port > 0
        assert server.server_address[0] == "127.0.0.1"
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
            assert response.status == 200
            body = response.read().decode()
        assert 'skbqa_stage_seconds_count{stage="rerank",status="ok",strategy="af"} 1.0' in body
    finally:
        server.shutdown()
        server.server_close()


def test_importing_the_module_does_not_import_prometheus_client() -> None:
    code = "import sys, skbqa.observability.metrics; sys.exit('prometheus_client' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], timeout=60).returncode == 0
