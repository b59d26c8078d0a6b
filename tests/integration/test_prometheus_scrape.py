"""A real Prometheus scrapes two skbqa metric exporters; PromQL over the scraped histograms matches what they
recorded. Also: the Grafana dashboard only uses metrics that exist, and real Prometheus accepts its queries.

Skipped when the Prometheus binary is missing (`apt-get install -y prometheus`); SKBQA_PROMETHEUS overrides its
path. About 10 s: Prometheus applies its first scrape config ~5 s after start, then rate() needs two scrapes.
"""

from __future__ import annotations

import json
import math
import os
import re
import select
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from skbqa.devstack.prometheus import (
    DEFAULT_BINARY,
    PrometheusError,
    PrometheusServer,
    Result,
    values_by,
    write_config,
)
from skbqa.observability.metrics import SPECS

PROMETHEUS = Path(os.environ.get("SKBQA_PROMETHEUS", DEFAULT_BINARY))
needs_prometheus = pytest.mark.skipif(
    not PROMETHEUS.is_file(), reason=f"no Prometheus binary at {PROMETHEUS}: apt-get install -y prometheus"
)
DASHBOARD = Path(__file__).resolve().parents[2] / "deploy" / "grafana" / "skbqa-dashboard.json"

# What each exporter records, over and over: stage -> seconds. "parse" comes from both.
RECORDED = {
    "parser": {"parse": 0.003, "ground": 0.2},
    "ranking": {"parse": 0.003, "rerank": 1.5},
}
# The histogram bucket each recorded value falls in: histogram_quantile must interpolate inside it.
BUCKET_OF = {"parse": (0.0025, 0.005), "ground": (0.1, 0.25), "rerank": (1.0, 2.5)}
STAGE_P50 = "histogram_quantile(0.5, sum by (le, stage) (rate(skbqa_stage_seconds_bucket[30s])))"

EXPORTER = textwrap.dedent(
    """
    import json, sys, threading, time
    from skbqa.observability.metrics import get_metrics

    timings = json.loads(sys.argv[1])
    metrics = get_metrics()
    server, port = metrics.start_metrics_server(0)
    print(port, flush=True)

    def record():  # keep recording so rate() over the scrapes sees increases
        while True:
            metrics.observe_timings(timings, "af")
            time.sleep(0.05)

    threading.Thread(target=record, daemon=True).start()
    sys.stdin.read()  # exit when the test closes our stdin, or dies: never outlive it
    """
)


def start_exporter(timings: dict[str, float], timeout: float = 20.0) -> tuple[subprocess.Popen[bytes], int]:
    proc = subprocess.Popen(
        [sys.executable, "-c", EXPORTER, json.dumps(timings)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    line = proc.stdout.readline() if ready else b""
    if not line.strip().isdigit():
        stop_exporter(proc)
        stderr = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
        pytest.fail(f"exporter did not report its port within {timeout} s: {line!r}\n{stderr}")
    return proc, int(line)


def stop_exporter(proc: subprocess.Popen[bytes]) -> None:
    if proc.stdin is not None and not proc.stdin.closed:
        proc.stdin.close()
    try:
        proc.wait(5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)


@pytest.fixture(scope="module")
def exporters() -> Iterator[dict[str, int]]:
    started: list[subprocess.Popen[bytes]] = []
    ports: dict[str, int] = {}
    try:
        for job, timings in RECORDED.items():
            proc, ports[job] = start_exporter(timings)
            started.append(proc)
        yield ports
    finally:
        for proc in started:
            stop_exporter(proc)


@pytest.fixture(scope="module")
def prometheus(exporters: dict[str, int]) -> Iterator[PrometheusServer]:
    targets = [(job, f"127.0.0.1:{port}") for job, port in exporters.items()]
    with PrometheusServer(targets, scrape_interval=1.0, binary=PROMETHEUS) as server:
        yield server


def all_up(result: Result) -> bool:
    return len(result) == len(RECORDED) and all(series["value"][1] == "1" for series in result)


@needs_prometheus
@pytest.mark.timeout(60)
def test_prometheus_scrapes_both_exporters(prometheus: PrometheusServer) -> None:
    result = prometheus.wait_for("up", all_up, timeout=25)
    assert {series["metric"]["job"] for series in result} == set(RECORDED)
    assert all(series["metric"]["instance"].startswith("127.0.0.1:") for series in result)


@needs_prometheus
@pytest.mark.timeout(60)
def test_stage_quantiles_match_what_was_recorded(prometheus: PrometheusServer) -> None:
    prometheus.wait_for("up", all_up, timeout=25)

    def complete(result: Result) -> bool:
        values = values_by(result, "stage")
        return set(values) == set(BUCKET_OF) and all(math.isfinite(v) for v in values.values())

    p50 = values_by(prometheus.wait_for(STAGE_P50, complete, timeout=20), "stage")
    for stage, (low, high) in BUCKET_OF.items():
        assert low < p50[stage] <= high, (stage, p50[stage])
    # "parse" is one series per exporter; each of the others comes from one job only.
    series = values_by(prometheus.query("count by (stage) (skbqa_stage_seconds_count)"), "stage")
    assert series == {"parse": 2.0, "ground": 1.0, "rerank": 1.0}
    jobs = prometheus.query('count by (job) (skbqa_stage_seconds_count{stage="rerank", strategy="af"})')
    assert [s["metric"]["job"] for s in jobs] == ["ranking"]


@needs_prometheus
@pytest.mark.timeout(60)
def test_dashboard_queries_are_accepted_by_prometheus(prometheus: PrometheusServer) -> None:
    for expr in dashboard_exprs():
        # Grafana substitutes $__rate_interval; anything else unknown to Prometheus is a dashboard bug.
        prometheus.query(expr.replace("$__rate_interval", "30s"))
    with pytest.raises(PrometheusError, match="parse error"):
        prometheus.query("sum(rate(skbqa_errors_total[30s])")


# --- the dashboard (no Prometheus needed) -------------------------------------------------------------------


def load_dashboard() -> dict[str, object]:
    dashboard: dict[str, object] = json.loads(DASHBOARD.read_text())
    return dashboard


def dashboard_exprs() -> list[str]:
    panels = load_dashboard()["panels"]
    assert isinstance(panels, list) and panels
    return [target["expr"] for panel in panels for target in panel["targets"]]


def test_dashboard_uses_only_defined_metrics_and_all_of_them() -> None:
    defined = {series: spec.name for spec in SPECS for series in spec.series_names()}
    used: set[str] = set()
    for expr in dashboard_exprs():
        names = set(re.findall(r"\bskbqa_[a-z0-9_]+", expr))
        assert names, f"no skbqa metric in {expr!r}"
        unknown = names - set(defined)
        assert not unknown, f"{expr!r} references {unknown}, not series of metrics.py's SPECS"
        used |= {defined[n] for n in names}
    assert used == {spec.name for spec in SPECS}, "a metric has no panel"


def test_dashboard_is_templated_on_a_prometheus_datasource() -> None:
    dashboard = load_dashboard()
    assert 36 <= int(str(dashboard["schemaVersion"])) <= 41
    templating = dashboard["templating"]
    assert isinstance(templating, dict)
    variables = {v["name"]: v for v in templating["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    panels = dashboard["panels"]
    assert isinstance(panels, list)
    for panel in panels:
        assert panel["datasource"]["uid"] == "${datasource}", panel["title"]
        assert all(t["datasource"]["uid"] == "${datasource}" for t in panel["targets"]), panel["title"]
    exprs = "\n".join(dashboard_exprs())
    for needle in ("histogram_quantile(0.5, sum by (le, stage) (rate(skbqa_stage_seconds_bucket", "(0.99,"):
        assert needle in exprs


# --- the launcher without a server --------------------------------------------------------------------------


def test_config_has_one_job_per_service_and_a_matching_timeout(tmp_path: Path) -> None:
    written = write_config(tmp_path / "prometheus.yml", [("gateway", "127.0.0.1:9100")], scrape_interval="2s")
    assert json.loads(written.read_text())["global"]["scrape_timeout"] == "2s"
    server = PrometheusServer(
        [("parser", "127.0.0.1:9101"), ("ranking", "127.0.0.1:9102"), ("parser", "127.0.0.1:9103")],
        scrape_interval=0.5,
    )
    config = server.config()
    assert config["global"]["scrape_interval"] == config["global"]["scrape_timeout"] == "500ms"
    jobs = {c["job_name"]: c["static_configs"][0]["targets"] for c in config["scrape_configs"]}
    assert jobs == {"parser": ["127.0.0.1:9101", "127.0.0.1:9103"], "ranking": ["127.0.0.1:9102"]}


def test_a_missing_binary_says_how_to_install_it(tmp_path: Path) -> None:
    server = PrometheusServer([("a", "127.0.0.1:1")], binary=tmp_path / "no-prometheus")
    with pytest.raises(PrometheusError, match=r"install it: apt-get install -y prometheus"):
        server.start()


@needs_prometheus
def test_a_taken_port_fails_fast_with_prometheus_log() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        server = PrometheusServer([("a", "127.0.0.1:1")], port=taken.getsockname()[1], binary=PROMETHEUS)
        started = time.monotonic()
        with pytest.raises(PrometheusError, match=r"exited during start-up(.|\n)*address already in use"):
            server.start(timeout=20)
    assert time.monotonic() - started < 15
