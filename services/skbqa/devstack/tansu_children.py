"""The local broker's child processes: each in its own session, logging to a file, stopped by process group;
loopback port checks; and the readiness polls (Kafka metadata, S3 bucket) that `start_tansu` waits on.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

from skbqa.common.errors import BackendUnavailableError

HOST = "127.0.0.1"
BUCKET = "tansu"
_LOG_TAIL = 600  # characters of a child's log quoted in an error


def _check_port_free(port: int, what: str) -> None:
    # Tansu panics on a taken port yet exits with status 0, and a readiness check would then succeed against
    # whatever else listens there, so refuse up front.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        # SO_REUSEADDR (as Tansu's own listener sets it): connections of a just-stopped broker lingering in
        # TIME_WAIT must not count as "in use", only a listening socket does.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((HOST, port))
        except OSError:
            raise BackendUnavailableError(f"{what} port {HOST}:{port} is already in use") from None


def _log_tail(path: Path) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    tail = " | ".join(line.strip() for line in text.strip().splitlines()[-6:])
    return tail[-_LOG_TAIL:]


def _die_with_parent() -> None:
    """In the child before exec: SIGKILL it when the process that started it dies (Linux), so a launcher killed
    with SIGKILL takes its broker with it instead of leaving it holding the port."""
    import ctypes
    import signal

    pr_set_pdeathsig = 1
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)


class _Child:
    """One child process in its own session, logging to a file."""

    def __init__(self, name: str, argv: list[str], env: dict[str, str], log_path: Path) -> None:
        self.name = name
        self.log_path = log_path
        with open(log_path, "ab") as log:
            self.process = subprocess.Popen(
                argv,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=_die_with_parent,
            )

    def alive(self) -> bool:
        return self.process.poll() is None

    def failure(self, problem: str) -> BackendUnavailableError:
        tail = _log_tail(self.log_path)
        return BackendUnavailableError(f"{self.name} {problem}" + (f"; log: {tail}" if tail else ""))

    def stop(self, grace_s: float) -> None:
        """SIGTERM to the child's process group (npx starts sh and node under it), SIGKILL after `grace_s`."""
        if not self.alive():
            return
        self._signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            self._signal(signal.SIGKILL)
            self.process.wait(timeout=5)

    def _signal(self, signum: int) -> None:
        # The group id is the child's pid (start_new_session): only processes this handle started are hit.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signum)


def _wait_for_kafka(child: _Child, bootstrap: str, timeout_s: float) -> None:
    """Until a metadata request (the admin client's bootstrap + list_topics) succeeds, or raise."""
    try:
        from kafka import KafkaAdminClient
    except ImportError:
        raise BackendUnavailableError("waiting for Tansu needs kafka-python: pip install 'skbqa[kafka]'") from None
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not child.alive():
            raise child.failure(f"exited (status {child.process.returncode}) before serving on {bootstrap}")
        if not _accepts(bootstrap):  # a silent TCP check first: kafka-python logs every refused connection
            time.sleep(0.05)
            continue
        try:
            admin = KafkaAdminClient(
                bootstrap_servers=bootstrap, bootstrap_timeout_ms=500, request_timeout_ms=1000
            )
            try:
                admin.list_topics()
            finally:
                admin.close()
        except Exception:
            time.sleep(0.1)
            continue
        if child.alive():  # it answered, and it was this process that answered
            return
    raise child.failure(f"did not answer a metadata request on {bootstrap} within {timeout_s:.0f} s")


def _accepts(bootstrap: str) -> bool:
    host, _, port = bootstrap.rpartition(":")
    try:
        socket.create_connection((host, int(port)), timeout=0.5).close()
    except OSError:
        return False
    return True


def _create_bucket(child: _Child, port: int, timeout_s: float) -> None:
    """Until moto answers, then create the bucket (moto takes an unsigned CreateBucket)."""
    _until_bucket_answers(child, port, timeout_s, method="PUT", what="create")


def _wait_for_s3(child: _Child, port: int, timeout_s: float) -> None:
    """Until s3rver lists the bucket (HTTP 200 on /tansu), or raise."""
    _until_bucket_answers(child, port, timeout_s, method="GET", what="serve")


def _until_bucket_answers(child: _Child, port: int, timeout_s: float, *, method: str, what: str) -> None:
    """Send `method` to the bucket's URL until it answers 200; raise when the child dies or time runs out."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not child.alive():
            raise child.failure(f"exited (status {child.process.returncode}) before serving")
        if bucket_answers(port, BUCKET, method=method):
            return
        time.sleep(0.2)
    raise child.failure(f"did not {what} bucket {BUCKET!r} on {HOST}:{port} within {timeout_s:.0f} s")


def bucket_answers(port: int, bucket: str, *, method: str = "GET") -> bool:
    """Whether the S3 server on 127.0.0.1:`port` answers `method` on `bucket` with 200 (GET: it serves it)."""
    request = urllib.request.Request(f"http://{HOST}:{port}/{bucket}", method=method)
    try:
        with urllib.request.urlopen(request, timeout=2) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False
