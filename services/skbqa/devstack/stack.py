"""The local distributed stack: one Kafka-protocol broker (tansu), the Triton encoder server, one process per
service replica, Ray inside the reranker service, optionally Prometheus scraping them all — on 127.0.0.1.

`LocalStack(options).up()` starts everything in order and waits until each part is ready; the state file
(`DIR/stack.json`) records every process so `skbqa stack down` (a later invocation) stops exactly those.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skbqa.common.errors import BackendUnavailableError, InvalidInputError
from skbqa.devstack.ports import free_port
from skbqa.devstack.processes import (
    ProcessRecord,
    grpc_serving,
    launch,
    read_state,
    stop_records,
    tcp_open,
    wait_until,
    write_state,
)
from skbqa.devstack.stack_snapshots import OWN, OWN_BUCKET, OWN_URL, S3_PROCESS, SnapshotStore, parse_snapshots
from skbqa.serving.settings import stages_of
from skbqa.serving.stages.chain import SEPARATOR, colocated_groups, service_roles
from skbqa.stores.index import read_manifest

PYTHON = sys.executable


@dataclass
class StackOptions:
    index: Path
    directory: Path = Path(".skbqa/stack")
    gateway_port: int = 50051  # 0 = any free port
    replicas: dict[str, int] = field(default_factory=dict)  # role → processes (default 1 each)
    triton: bool = True  # encoders served by Triton (else each service loads the local encoder)
    ray: bool = True  # the reranker service runs step 8 on Ray Serve
    prometheus: bool = False
    broker_storage: str = "memory"
    broker_s3_server: str = (
        "files"  # the object store of s3 storage: files (default), moto or s3rver (docs/kafka.md)
    )
    ready_timeout_s: float = 180.0
    request_timeout_s: float = 30.0  # the gateway's longest wait for an answer (calls may ask for less)
    bus_options: str = ""  # KafkaBus URL options for every service, e.g. "fetch_max_wait_ms=100" (docs/kafka.md)
    supervise: bool = False  # run the supervisor that restarts crashed processes (`stack up` turns it on)
    # stage groups each run as one process ("parser+symbols+grounding"); every other stage has its own process
    colocate: tuple[str, ...] = ()
    # shipped snapshots (devstack/stack_snapshots.py): None (every process shares the updater's index directory),
    # "own" (the stack's own S3 server) or s3://BUCKET/PREFIX (an external store, through the AWS environment)
    snapshots: str | None = None

    @property
    def service_roles(self) -> tuple[str, ...]:
        """The roles the stack starts a process (per replica) for, in pipeline order: the gateway, then each
        stage service (a co-located group under its "a+b" role), then the updater (live updates' one writer)."""
        return ("gateway", *service_roles(self.colocate), "updater")

    def validate(self) -> None:
        if not (self.index / "manifest.json").is_file():
            raise InvalidInputError(
                f"{self.index} is not an skbqa index; build one with: skbqa ingest BUNDLE --index DIR"
            )
        colocated_groups(self.colocate)
        self.snapshots = parse_snapshots(self.snapshots)
        for role, count in self.replicas.items():
            if role not in self.service_roles:
                inside = next((group for group in self.colocate if role in group.split(SEPARATOR)), None)
                if inside is not None:
                    raise InvalidInputError(f"{role} runs inside {inside}: set --replicas {inside}={count}")
                raise InvalidInputError(
                    f"unknown role {role!r} in --replicas; roles: {', '.join(self.service_roles)}"
                )
            if role == "updater" and count != 1:
                raise InvalidInputError("the updater is the index's one writer: it runs as exactly one process")
            if not 1 <= count <= 8:
                raise InvalidInputError(f"replicas of {role} must be 1..8, got {count}")
        if self.prometheus and shutil.which("prometheus") is None:
            raise InvalidInputError(
                "--prometheus needs the prometheus binary on PATH (Debian: apt-get install prometheus)"
            )
        if self.bus_options.strip():
            from skbqa.bus.kafka import bus_from_url

            # Building a bus does no I/O; it only checks the options' names and types.
            bus_from_url("kafka://127.0.0.1:9092?" + self.bus_options.strip().lstrip("?")).close()


def encoder_runtime(index: Path) -> str:
    """The runtime part of the encoder name an index was built with (all-MiniLM-L6-v2/onnx-int8/max128)."""
    name = read_manifest(index).get("encoder", {}).get("name", "")
    parts = name.split("/")
    return parts[1] if len(parts) > 1 else "onnx-int8"


class LocalStack:
    def __init__(self, options: StackOptions) -> None:
        options.validate()
        self.options = options
        self.directory = options.directory
        self.records: list[ProcessRecord] = []
        self.processes: dict[str, subprocess.Popen[bytes]] = {}
        self.ports: dict[str, Any] = {}
        self.snapshots: SnapshotStore | None = None
        self._snapshot_version = ""  # the shipped id of the index's version when the stack started

    # ------------------------------------------------------------------------------------------------ up

    def up(self) -> dict[str, Any]:
        if read_state(self.directory).get("processes"):
            raise InvalidInputError(f"a stack is already recorded in {self.directory}; run: skbqa stack down")
        self.directory.mkdir(parents=True, exist_ok=True)
        try:
            self._start_broker()
            if self.options.snapshots:
                self._start_snapshots()
            if self.options.triton:
                self._start_triton()
            for role in self.options.service_roles:
                for replica in range(self.options.replicas.get(role, 1)):
                    self.start_service(role, replica, wait=False)
            for record in list(self.records):
                if "grpc" in record.ports and record.name != "triton":
                    self._wait_serving(record)
            if self.options.prometheus:
                self._start_prometheus()
            self._save()
            if self.options.supervise:  # last: it restarts what the state file records, so that must be complete
                supervisor = [PYTHON, "-m", "skbqa.devstack.supervisor", "--dir", str(self.directory)]
                self._start("supervisor", supervisor, {})
        except BaseException:
            self.down()
            raise
        return self.ports

    def _wait_serving(self, record: ProcessRecord) -> None:
        """Wait until a service reports SERVING. One that exits while starting (Ray's node can time out on a
        busy machine) is started once more before the stack gives up."""
        port: int = record.ports["grpc"]
        for attempt in (1, 2):
            try:
                wait_until(
                    lambda: grpc_serving(port),
                    timeout_s=self.options.ready_timeout_s,
                    what=record.name,
                    process=self.processes[record.name],
                    log=record.log,
                )
                return
            except BackendUnavailableError as exc:
                if attempt == 2 or "exited" not in str(exc):
                    raise
                role, replica = record.name.rsplit("-", 1)
                self.start_service(role, int(replica), wait=False)

    def _save(self) -> None:
        write_state(self.directory, self.records, {"ports": self.ports, "index": str(self.options.index)})

    def _start(self, name: str, argv: list[str], ports: dict[str, int], env: dict[str, str] | None = None) -> None:
        process, record = launch(name, argv, self.directory / "logs", env=env, ports=ports)
        self.processes[name] = process
        self.records = [r for r in self.records if r.name != name] + [record]
        self._save()

    def _start_snapshots(self) -> None:
        """The object store snapshots are shipped through (the own server, started here, or an external one),
        holding the index's version, from which every process's own directory is pulled (`start_service`)."""
        from skbqa.devstack.stack_snapshots import own_server_argv, seed
        from skbqa.devstack.tansu_children import bucket_answers

        # a previous stack's copies may be of another index, or far behind: every process starts from this one's
        shutil.rmtree(self.directory / "replicas", ignore_errors=True)

        if self.options.snapshots == OWN:
            port = free_port()
            self._start(
                S3_PROCESS, own_server_argv(PYTHON, port, self.directory / "snapshots-data"), {"http": port}
            )
            wait_until(
                lambda: bucket_answers(port, OWN_BUCKET),
                timeout_s=30,
                what=S3_PROCESS,
                process=self.processes[S3_PROCESS],
                log=self.records[-1].log,
            )
            self.snapshots = SnapshotStore(OWN_URL, f"http://127.0.0.1:{port}")
        else:
            assert self.options.snapshots is not None
            self.snapshots = SnapshotStore(self.options.snapshots)
        self._snapshot_version = seed(self.options.index, self.snapshots)
        self.ports["snapshots"] = self.snapshots.to_state()

    def _start_broker(self, port: int | None = None) -> None:
        port = port or free_port()
        argv = [
            PYTHON,
            "-m",
            "skbqa.devstack.tansu",
            "--port",
            str(port),
            "--storage",
            self.options.broker_storage,
        ]
        if self.options.broker_storage != "memory":
            argv += [
                "--data-dir",
                str(self.directory / "broker-data"),
                "--s3-server",
                self.options.broker_s3_server,
            ]
        self._start("broker", argv, {"kafka": port})
        wait_until(
            lambda: tcp_open(port),
            timeout_s=30,
            what="broker",
            process=self.processes["broker"],
            log=self.records[-1].log,
        )
        self.ports["bus"] = f"kafka://127.0.0.1:{port}"

    @property
    def bus_url(self) -> str:
        """The bus URL the services get: the broker's address with `bus_options` as its query."""
        options = self.options.bus_options.strip().lstrip("?")
        return self.ports["bus"] + (f"?{options}" if options else "")

    def _start_triton(self) -> None:
        grpc_port, http_port, metrics_port = free_port(), free_port(), free_port()
        argv = [
            PYTHON, "-m", "skbqa.devstack.triton",
            "--grpc-port", str(grpc_port), "--http-port", str(http_port), "--metrics-port", str(metrics_port),
            "--runtime", encoder_runtime(self.options.index),
        ]  # fmt: skip
        # PyTriton's server needs the interpreter's shared library on this machine's pyenv Python (STACK.md)
        env = {"LD_LIBRARY_PATH": str(sysconfig.get_config_var("LIBDIR") or "")}
        self._start("triton", argv, {"grpc": grpc_port, "http": http_port, "metrics": metrics_port}, env)
        from skbqa.models.triton_encoder import TritonEncoder

        url = f"triton://127.0.0.1:{grpc_port}/skbqa_encoder"

        def ready() -> bool:
            return TritonEncoder.from_url(url).encode(["ready?"]).shape[0] == 1

        wait_until(ready, timeout_s=120, what="triton", process=self.processes["triton"], log=self.records[-1].log)
        self.ports["encoder"] = url
        self.ports["triton_metrics"] = metrics_port

    def start_service(self, role: str, replica: int = 0, *, wait: bool = True) -> str:
        """Start one replica of a service (also used to restart one); returns its process name."""
        name = f"{role}-{replica}"
        grpc_port = self.options.gateway_port if role == "gateway" and replica == 0 else free_port()
        if role == "gateway" and grpc_port == 0:
            grpc_port = free_port()
        old = next((r for r in self.records if r.name == name), None)
        if old is not None:  # a restart keeps its ports
            grpc_port, metrics_port = old.ports["grpc"], old.ports["metrics"]
        else:
            metrics_port = free_port()
        argv = [
            PYTHON, "-m", "skbqa", "serve", "--role", role, "--index", str(self._index_of(role, name)),
            "--bus", self.bus_url, "--port", str(grpc_port), "--metrics-port", str(metrics_port),
        ]  # fmt: skip
        env: dict[str, str] = {}
        if self.snapshots is not None:
            argv += self.snapshots.options(role)
            env = self.snapshots.env
        if "encoder" in self.ports and role != "gateway":
            argv += ["--encoder", self.ports["encoder"]]
        if role == "gateway":
            argv += ["--request-timeout", str(self.options.request_timeout_s)]
            for group in self.options.colocate:  # so its liveness probe skips the topics inside each group
                argv += ["--colocated", group]
        if "reranker" in stages_of(role) and self.options.ray:
            argv += ["--ray-address", "local"]
        self._start(name, argv, {"grpc": grpc_port, "metrics": metrics_port}, env)
        if role == "gateway" and replica == 0:
            self.ports["gateway"] = grpc_port
        self.ports.setdefault("services", {})[name] = {"grpc": grpc_port, "metrics": metrics_port}
        if role == "gateway":  # what a client is given: every replica, for its balancer (docs/client.md)
            self.ports["gateways"] = gateway_addresses(self.ports["services"])
        if wait:
            wait_until(
                lambda: grpc_serving(grpc_port),
                timeout_s=self.options.ready_timeout_s,
                what=name,
                process=self.processes[name],
                log=self.records[-1].log,
            )
        self._save()
        return name

    def _index_of(self, role: str, name: str) -> Path:
        """The updater's index is the stack's; with shipped snapshots every other process has one of its own."""
        if self.snapshots is None or role == "updater":
            return self.options.index
        from skbqa.devstack.stack_snapshots import replica_index

        return replica_index(self.directory, name, self.snapshots, self._snapshot_version)

    def _start_prometheus(self) -> None:
        from skbqa.devstack.prometheus import write_config

        port = free_port()
        targets = [
            (r.name.rsplit("-", 1)[0], f"127.0.0.1:{r.ports['metrics']}")
            for r in self.records
            if "metrics" in r.ports and r.name != "triton"
        ]
        if "triton_metrics" in self.ports:
            targets.append(("triton", f"127.0.0.1:{self.ports['triton_metrics']}"))
        config = write_config(self.directory / "prometheus.yml", targets, scrape_interval="1s")
        argv = [
            "prometheus", f"--config.file={config}", f"--web.listen-address=127.0.0.1:{port}",
            f"--storage.tsdb.path={self.directory / 'prometheus-data'}",
        ]  # fmt: skip
        self._start("prometheus", argv, {"http": port})
        wait_until(
            lambda: tcp_open(port),
            timeout_s=30,
            what="prometheus",
            process=self.processes["prometheus"],
            log=self.records[-1].log,
        )
        self.ports["prometheus"] = f"http://127.0.0.1:{port}"

    # ------------------------------------------------------------------------------------------------ faults

    def kill(self, name: str) -> None:
        """SIGKILL one process (fault tests): no clean shutdown, no commit."""
        import os
        import signal

        record = next(r for r in self.records if r.name == name)
        os.killpg(record.pid, signal.SIGKILL)
        process = self.processes.get(name)
        if process is not None:
            process.wait(timeout=10)

    def stop_one(self, name: str, grace_s: float = 15.0) -> None:
        """SIGTERM one process group and wait for it to exit (SIGKILL after `grace_s`)."""
        record = next(r for r in self.records if r.name == name)
        stop_records([record], grace_s=grace_s)
        process = self.processes.get(name)
        if process is not None:
            process.wait(timeout=5)

    # ------------------------------------------------------------------------------------------------ down

    def down(self) -> list[str]:
        if (self.directory / "stack.json").is_file():
            return stack_down(self.directory)  # the recorded pids: restarted processes under their new ones
        return stop_records(self.records)


def gateway_addresses(services: dict[str, dict[str, int]]) -> str:
    """The gateways' addresses in the form clients take (`--server`, SKBQA_SERVER): IP:PORT,IP:PORT."""
    gateways = sorted(
        (int(name.rsplit("-", 1)[1]), ports["grpc"])
        for name, ports in services.items()
        if name.rsplit("-", 1)[0] == "gateway"
    )
    return ",".join(f"127.0.0.1:{port}" for _, port in gateways)


def stack_down(directory: Path) -> list[str]:
    """Stop the processes recorded in `directory` (nothing else): the supervisor first, so it restarts nothing,
    then every other under its current pid (a restarted process is recorded under its new one)."""
    from skbqa.devstack.supervisor import SUPERVISOR, records_of, state_lock

    with state_lock(directory):
        records = records_of(read_state(directory))
        stopped = stop_records([r for r in records if r.name == SUPERVISOR])
        stopped += stop_records([r for r in records if r.name != SUPERVISOR])
        (directory / "stack.json").unlink(missing_ok=True)
    return stopped
