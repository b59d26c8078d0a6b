"""A server that fails to start ends its process at once, with the CLI's one-line error and status, even when it
already runs threads that are no daemons (gRPC's, Ray's, a Kafka client's): otherwise the process lingers, never
serving, and nothing that supervises it (the local stack, Kubernetes) restarts it."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

SCRIPT = textwrap.dedent(
    """
    import sys, threading
    import skbqa.serving.run as run
    from skbqa.common.errors import BackendUnavailableError

    def failing_serve(settings, limits=None):
        threading.Thread(target=threading.Event().wait, name="not-a-daemon").start()  # as gRPC's or Ray's
        raise BackendUnavailableError("Kafka at 127.0.0.1:9: group 'g' not joined within 30 s")

    run.serve = failing_serve
    sys.argv = ["skbqa", *sys.argv[1:]]
    from skbqa.cli.main import run as command
    command()
    """
)


def test_a_server_that_fails_to_start_exits_with_one_line(tmp_path: Path) -> None:
    argv = ["serve", "--index", str(tmp_path), "--bus", "kafka://127.0.0.1:9", "--role", "parser"]
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, *argv], capture_output=True, text=True, timeout=30, check=False
    )
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1] == (
        "skbqa: error: Kafka at 127.0.0.1:9: group 'g' not joined within 30 s"
    )


def test_other_commands_still_exit_through_sys_exit(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "skbqa", "ask", "--index", str(tmp_path / "none"), "x"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1 and done.stderr.count("\n") == 1 and "not an skbqa index" in done.stderr
