"""Run a real Prometheus server for tests and the local stack: scrape given targets, query it over HTTP.

    with PrometheusServer([("parser", "127.0.0.1:9101")], scrape_interval=1.0) as prom:
        prom.wait_for('up{job="parser"}', lambda result: len(result) == 1, timeout=15)
        prom.query("sum(rate(skbqa_stage_seconds_count[30s]))")

The server listens on loopback only, keeps its TSDB in a temporary directory (removed by `stop()`), and
`stop()` ends only the process this object started. The config is written as JSON, which is valid YAML, so no
YAML library is needed.
"""

from __future__ import annotations

import atexit
import json
import shutil
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from skbqa.devstack.ports import free_port

DEFAULT_BINARY = "/usr/bin/prometheus"
READY_TIMEOUT = 30.0
_LOG_TAIL = 2000  # characters of Prometheus' log quoted in errors

Result = list[dict[str, Any]]


class PrometheusError(RuntimeError):
    """Prometheus could not be started, or answered a query with an error."""


class PrometheusServer:
    """One Prometheus process scraping `targets`: (job, "host:port") pairs; a job may list several targets."""

    def __init__(
        self,
        targets: Sequence[tuple[str, str]],
        *,
        scrape_interval: float = 15.0,
        port: int = 0,
        binary: str | Path = DEFAULT_BINARY,
        host: str = "127.0.0.1",
    ) -> None:
        if scrape_interval <= 0:
            raise ValueError(f"scrape_interval must be positive, got {scrape_interval}")
        self.targets = list(targets)
        self.scrape_interval = scrape_interval
        self.binary = Path(binary)
        self.host = host
        self._requested_port = port
        self.port = port
        self._process: subprocess.Popen[bytes] | None = None
        self._workdir: Path | None = None

    # --- lifecycle -----------------------------------------------------------------------------------------

    def start(self, timeout: float = READY_TIMEOUT) -> PrometheusServer:
        """Launch Prometheus and wait (at most `timeout` s) until `/-/ready` answers 200."""
        if self._process is not None:
            raise PrometheusError("already started")
        if not self.binary.is_file():
            raise PrometheusError(
                f"no Prometheus binary at {self.binary}; install it: apt-get install -y prometheus"
            )
        self._workdir = Path(tempfile.mkdtemp(prefix="skbqa-prometheus-"))
        config = write_config(self._workdir / "prometheus.yml", self.targets, self.scrape_interval)
        atexit.register(self.stop)  # never leave a server behind when a test run aborts
        # A port we picked may be taken by someone else before Prometheus binds it: then try another.
        attempts = 1 if self._requested_port else 3
        try:
            for attempt in range(1, attempts + 1):
                self.port = self._requested_port or free_port(self.host)
                self._launch(config)
                try:
                    self._wait_ready(timeout)
                    return self
                except PrometheusError:
                    if attempt == attempts or "address already in use" not in self.log_tail():
                        raise
                    self._terminate()
        except BaseException:
            self.stop()
            raise
        raise AssertionError("unreachable")

    def _launch(self, config: Path) -> None:
        assert self._workdir is not None
        # Output goes to a file, not a pipe: a pipe nobody reads fills up and blocks Prometheus.
        with (self._workdir / "prometheus.log").open("wb") as log:
            self._process = subprocess.Popen(
                self._command(config), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
            )

    def stop(self, timeout: float = 10.0) -> None:
        """Terminate this object's Prometheus (kill it if it ignores SIGTERM) and remove its data."""
        atexit.unregister(self.stop)
        self._terminate(timeout)
        if self._workdir is not None:
            shutil.rmtree(self._workdir, ignore_errors=True)
            self._workdir = None

    def _terminate(self, timeout: float = 10.0) -> None:
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout)

    def __enter__(self) -> PrometheusServer:
        return self.start() if self._process is None else self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    # --- config --------------------------------------------------------------------------------------------

    def config(self) -> dict[str, Any]:
        """prometheus.yml as a dict (see `build_config`)."""
        return build_config(self.targets, self.scrape_interval)

    def _command(self, config: Path) -> list[str]:
        assert self._workdir is not None
        return [
            str(self.binary),
            f"--config.file={config}",
            f"--web.listen-address={self.host}:{self.port}",
            f"--storage.tsdb.path={self._workdir / 'data'}",
            "--storage.tsdb.retention.time=1d",
        ]

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._process is None or self._process.poll() is not None:
                raise PrometheusError(f"Prometheus exited during start-up:\n{self.log_tail()}")
            if _http_ok(f"{self.url}/-/ready"):
                return
            time.sleep(0.1)
        raise PrometheusError(f"Prometheus not ready after {timeout:.0f} s:\n{self.log_tail()}")

    def log_tail(self) -> str:
        """The end of Prometheus' own log (for error messages)."""
        log = self._workdir / "prometheus.log" if self._workdir else None
        if log is None or not log.is_file():
            return "(no log)"
        return log.read_text(errors="replace")[-_LOG_TAIL:]

    # --- queries -------------------------------------------------------------------------------------------

    def query(self, promql: str, timeout: float = 10.0) -> Result:
        """An instant query's result: for a vector, one dict per series ({"metric": {...}, "value": [t, "v"]});
        a scalar or string comes back as a single dict with an empty "metric"."""
        url = f"{self.url}/api/v1/query?{urllib.parse.urlencode({'query': promql})}"
        data = _get_json(url, timeout)["data"]
        if data["resultType"] in ("vector", "matrix"):
            result: Result = data["result"]
            return result
        return [{"metric": {}, "value": data["result"]}]

    def wait_for(
        self, promql: str, predicate: Callable[[Result], bool], timeout: float = 20.0, interval: float = 0.25
    ) -> Result:
        """Poll `promql` until `predicate(result)` holds; the result, or TimeoutError naming the last one."""
        deadline = time.monotonic() + timeout
        while True:
            result = self.query(promql)
            if predicate(result):
                return result
            if time.monotonic() >= deadline:
                raise TimeoutError(
                    f"{promql!r} did not satisfy the condition in {timeout} s; last result: {result}"
                )
            time.sleep(interval)


def build_config(targets: Iterable[tuple[str, str]], scrape_interval: float | str) -> dict[str, Any]:
    """prometheus.yml as a dict: one scrape job per distinct job name (first-seen order), scraping every
    `scrape_interval` (seconds, or a Prometheus duration such as "1s")."""
    interval = scrape_interval if isinstance(scrape_interval, str) else _duration(scrape_interval)
    jobs: dict[str, list[str]] = {}
    for job, address in targets:
        jobs.setdefault(job, []).append(address)
    return {
        # The timeout defaults to 10 s, which Prometheus rejects when longer than a short interval.
        "global": {"scrape_interval": interval, "scrape_timeout": interval, "evaluation_interval": interval},
        "scrape_configs": [
            {"job_name": job, "static_configs": [{"targets": addresses}]} for job, addresses in jobs.items()
        ],
    }


def write_config(path: Path, targets: Iterable[tuple[str, str]], scrape_interval: float | str = "15s") -> Path:
    """Write `build_config(...)` to `path` (as JSON, which Prometheus reads as YAML) and return `path`."""
    path.write_text(json.dumps(build_config(targets, scrape_interval), indent=2) + "\n")
    return path


def values_by(result: Iterable[dict[str, Any]], label: str) -> dict[str, float]:
    """A vector result as {series' `label` value: sample value} (NaN stays NaN)."""
    return {series["metric"].get(label, ""): float(series["value"][1]) for series in result}


def _duration(seconds: float) -> str:
    # Prometheus durations take integer units; milliseconds cover any sensible interval exactly enough.
    return f"{max(1, round(seconds * 1000))}ms"


def _http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def _get_json(url: str, timeout: float) -> dict[str, Any]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            body: dict[str, Any] = json.load(response)
    except urllib.error.HTTPError as exc:  # a bad query answers 400 with a JSON error
        raise PrometheusError(f"{exc.code}: {_error_text(exc.read())}") from exc
    if body.get("status") != "success":
        raise PrometheusError(str(body.get("error", body)))
    return body


def _error_text(raw: bytes) -> str:
    try:
        return str(json.loads(raw).get("error", raw[:500]))
    except (ValueError, AttributeError):
        return raw[:500].decode(errors="replace")
