"""The images, built and run here: a dockerd of the test's own, a Debian base from debootstrap, every buildable
target of docker/Dockerfile (service, load generator, Ray, Triton on CPU), then containers on host networking:

- the service image as the embedded server (read-only root, the index mounted read-only): health, and answers
  equal to this process's engine, asked through the client SDK;
- the load-generator image running Locust against it, bounded, with no failure;
- the distributed form, one container per service over a real broker on the host, the encoder in the Triton
  image and the reranker's Ray Serve in the Ray image: the gateway's answers equal the embedded ones.

Needs root, docker.io, containerd and debootstrap (.ci/run installs them: scripts/install_image_tools.sh); without
them the module skips unless SKBQA_REQUIRE_IMAGES=1, as CI sets. The first build takes 10-20 minutes on 2 cores.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from scripts.images import (
    BASE_IMAGE,
    DEFAULT_STATE,
    IMAGE_NAMES,
    TARGETS,
    VERSION,
    build,
    build_base,
    docker_env,
    start_daemon,
)

from skbqa.devstack.ports import free_port
from tests.conftest import SAMPLE_BUNDLE

pytestmark = [pytest.mark.slow, pytest.mark.docker, pytest.mark.timeout(3600)]

QUESTIONS = [json.loads(line)["question"] for line in (SAMPLE_BUNDLE / "qa.jsonl").read_text().splitlines()]
TOOLS = ("dockerd", "containerd", "debootstrap", "docker")


def _missing() -> str | None:
    if os.geteuid() != 0:
        return "building images needs root (debootstrap, dockerd)"
    absent = [tool for tool in TOOLS if shutil.which(tool) is None]
    return f"not installed: {', '.join(absent)} (scripts/install_image_tools.sh)" if absent else None


@pytest.fixture(scope="module")
def docker_host() -> Iterator[str]:
    problem = _missing()
    if problem:
        if os.environ.get("SKBQA_REQUIRE_IMAGES") == "1":
            pytest.fail(problem)
        pytest.skip(problem)
    host, pid, started = start_daemon()
    yield host
    if started:  # only a daemon this test started is ended, by its pid
        os.kill(pid, 15)


@pytest.fixture(scope="module")
def images(docker_host) -> dict[str, str]:
    wheels = Path(os.environ.get("PIP_FIND_LINKS") or "/nonexistent")
    ca_dir = Path("/usr/local/share/ca-certificates")
    build_base(docker_host)
    figures = build(
        docker_host,
        list(TARGETS),
        base=BASE_IMAGE,
        wheels=wheels if wheels.is_dir() else None,
        ca_dir=ca_dir if ca_dir.is_dir() else None,
        log_dir=DEFAULT_STATE / "logs",
    )
    return {target: str(entry["image"]) for target, entry in figures.items()}


class Containers:
    """Containers started by one test, each removed at the end by its id."""

    def __init__(self, host: str) -> None:
        self.env = docker_env(host)
        self.ids: list[str] = []

    def run(self, image: str, *args: str, options: tuple[str, ...] = ()) -> str:
        argv = ["docker", "run", "-d", "--network", "host", *options, image, *args]
        cid = subprocess.run(argv, env=self.env, check=True, capture_output=True, text=True).stdout.strip()
        self.ids.append(cid)
        return cid

    def logs(self, cid: str) -> str:
        return subprocess.run(
            ["docker", "logs", "--tail", "40", cid], env=self.env, capture_output=True, text=True
        ).stderr

    def running(self, cid: str) -> bool:
        state = subprocess.run(
            ["docker", "inspect", "--format", "{{.State.Running}}", cid],
            env=self.env,
            capture_output=True,
            text=True,
        )
        return state.stdout.strip() == "true"

    def remove_all(self) -> None:
        if self.ids:
            subprocess.run(["docker", "rm", "-f", *self.ids], env=self.env, capture_output=True)


@pytest.fixture()
def containers(docker_host) -> Iterator[Containers]:
    running = Containers(docker_host)
    yield running
    running.remove_all()


@pytest.fixture(scope="module")
def readable_index(biomed_sample_engine, tmp_path_factory) -> Iterator[Path]:
    """The sample index where the images' unprivileged user (uid 10001) can read it: pytest's own temporary
    directories are private to root."""
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="skbqa-image-index-"))
    base.chmod(0o755)
    target = base / "index"
    shutil.copytree(biomed_sample_engine.stores.directory, target)
    for path in [target, *target.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    yield target
    shutil.rmtree(base, ignore_errors=True)


def _serving(port: int, cids: list[str], containers: Containers, timeout_s: float = 240.0) -> None:
    from skbqa.client import ServerError, SkbqaClient

    deadline = time.monotonic() + timeout_s
    with SkbqaClient.connect(f"127.0.0.1:{port}", retries=0) as client:
        while time.monotonic() < deadline:
            for cid in cids:
                assert containers.running(cid), containers.logs(cid)
            try:
                if client.health(deadline_s=2.0) == "SERVING":
                    return
            except ServerError:
                pass
            time.sleep(1.0)
    raise AssertionError("not SERVING in time:\n" + "\n".join(containers.logs(c) for c in cids))


SERVICE_OPTIONS = ("--read-only", "--tmpfs", "/tmp")


def test_service_image_serves_embedded_and_loadgen_runs_against_it(
    images, containers, biomed_sample_engine, readable_index
) -> None:
    from skbqa.client import SkbqaClient

    index = readable_index
    port = free_port()
    cid = containers.run(
        images["runtime"],
        "serve", "--index", "/index", "--host", "127.0.0.1", "--port", str(port),
        options=(*SERVICE_OPTIONS, "-v", f"{index}:/index:ro"),
    )  # fmt: skip
    _serving(port, [cid], containers)
    with SkbqaClient.connect(f"127.0.0.1:{port}") as client:
        for question in QUESTIONS[:5]:
            remote = client.ask(question, k=10)
            local = biomed_sample_engine.ask(question, k=10)
            assert [i.node_id for i in remote.items] == [i.node_id for i in local.items], question
        assert client.index_status().skb_name == "biomed-sample"

    locust = subprocess.run(
        [
            "docker", "run", "--rm", "--network", "host", *SERVICE_OPTIONS, images["loadgen"],
            "--headless", "--host", f"127.0.0.1:{port}", "-u", "2", "-r", "2", "-t", "8s", "--exit-code-on-error", "1",
            "--only-summary",
        ],
        env=containers.env, capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert locust.returncode == 0, locust.stdout[-2000:] + locust.stderr[-2000:]
    assert "Aggregated" in locust.stdout + locust.stderr


def test_distributed_form_in_containers_gives_the_embedded_answers(
    images, containers, biomed_sample_engine, readable_index
) -> None:
    from skbqa.client import SkbqaClient
    from skbqa.devstack.tansu import start_tansu

    index = readable_index
    mount = ("-v", f"{index}:/index:ro")
    with start_tansu() as broker:
        triton_grpc, triton_http, triton_metrics = free_port(), free_port(), free_port()
        triton = containers.run(
            images["triton-cpu"],
            "--grpc-port", str(triton_grpc), "--http-port", str(triton_http), "--metrics-port", str(triton_metrics),
            "--runtime", "onnx-int8",
            # PyTriton copies its Triton server into $HOME/.cache and runs it from there: Docker mounts a tmpfs
            # noexec unless told (a Kubernetes emptyDir is not)
            options=("--tmpfs", "/tmp:exec", "--shm-size", "512m"),
        )  # fmt: skip
        encoder = f"triton://127.0.0.1:{triton_grpc}/skbqa_encoder"
        common = ["--index", "/index", "--bus", f"kafka://{broker.bootstrap}", "--host", "127.0.0.1"]
        ports = {
            role: free_port() for role in ("gateway", "parser", "symbols", "grounding", "ranking", "reranker")
        }
        cids = [triton]
        _wait_for_triton(triton_http, triton, containers)
        for role, port in ports.items():
            argv = ["serve", "--role", role, *common, "--port", str(port)]
            image, options = images["runtime"], (*SERVICE_OPTIONS, *mount)
            if role != "gateway":
                argv += ["--encoder", encoder]
            if role == "reranker":  # Ray Serve inside the Ray image
                argv += ["--ray-address", "local"]
                image, options = images["ray"], ("--tmpfs", "/tmp:exec", "--shm-size", "1g", *mount)
            cids.append(containers.run(image, *argv, options=options))
        for port in ports.values():
            _serving(port, cids, containers, timeout_s=300.0)
        with SkbqaClient.connect(f"127.0.0.1:{ports['gateway']}", deadline_s=60.0) as client:
            for question in QUESTIONS[:4]:
                remote = client.ask(question, k=10)
                local = biomed_sample_engine.ask(question, k=10)
                assert [i.node_id for i in remote.items] == [i.node_id for i in local.items], question
            reranked = client.ask(QUESTIONS[0], k=5, options={"reranker": "local"})
            expected = biomed_sample_engine.ask(QUESTIONS[0], k=5, options={"reranker": "local"})
            assert [i.node_id for i in reranked.items] == [i.node_id for i in expected.items]


def _wait_for_triton(http_port: int, cid: str, containers: Containers, timeout_s: float = 180.0) -> None:
    import urllib.request

    url = f"http://127.0.0.1:{http_port}/v2/models/skbqa_encoder/ready"
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        assert containers.running(cid), containers.logs(cid)
        try:
            with urllib.request.urlopen(url, timeout=2) as reply:
                if reply.status == 200:
                    return
        except OSError:
            pass
        time.sleep(1.0)
    raise AssertionError("Triton model not ready:\n" + containers.logs(cid))


def test_every_image_is_pinned_and_installs_nothing_at_start(images, docker_host) -> None:
    """pip is never called when a container starts (entrypoints run skbqa, locust or the Triton server) and
    the venv in each image is exactly what docker/constraints.txt allows."""
    pins = {
        line.split("==")[0].lower(): line.split("==")[1]
        for line in (Path(__file__).resolve().parents[2] / "docker" / "constraints.txt").read_text().splitlines()
        if "==" in line and not line.startswith("#")
    }
    env = docker_env(docker_host)
    for target, image in images.items():
        entry = subprocess.run(
            ["docker", "image", "inspect", "--format", "{{json .Config.Entrypoint}}", image],
            env=env, capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
        assert "pip" not in entry, (target, entry)
        frozen = subprocess.run(
            ["docker", "run", "--rm", "--entrypoint", "pip", image, "freeze", "--exclude-editable"],
            env=env, capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
        for line in frozen.splitlines():
            name, _, version = line.partition("==")
            if name.lower() in ("skbqa",) or not version:
                continue
            assert pins.get(name.lower()) == version, f"{target}: {line} is not pinned by docker/constraints.txt"
    assert IMAGE_NAMES["runtime"] in images["runtime"] and VERSION in images["runtime"]
