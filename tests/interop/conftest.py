"""Fixtures of the interop suite: the Node.js client (tests/interop/node, installed with `npm ci` when its
node_modules is missing) and one `skbqa serve` process on the bundled sample index, with a tokens file."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest

from tests.npm_install import node_with_packages

NODE_DIR = Path(__file__).resolve().parent / "node"
CLIENT = NODE_DIR / "client.js"
CALL_TIMEOUT_S = 120
SERVER_START_TIMEOUT_S = 120
TOKENS = ("interop-token-a", "interop-token-b")


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


@dataclass(frozen=True)
class NodeClient:
    """Runs tests/interop/node/client.js: one JSON command on stdin, one JSON result on stdout."""

    node: str
    target: str = ""

    def run(self, command: dict[str, Any]) -> dict[str, Any]:
        result = subprocess.run(
            [self.node, str(CLIENT)],
            input=json.dumps({"target": self.target, **command}),
            capture_output=True,
            text=True,
            timeout=CALL_TIMEOUT_S,
            cwd=NODE_DIR,
        )
        assert result.returncode == 0, f"client.js exited {result.returncode}: {result.stderr.strip()[-2000:]}"
        return json.loads(result.stdout)

    def call(self, call: str, request: dict[str, Any] | None = None, **fields: Any) -> dict[str, Any]:
        """One call on a fresh channel: {code, code_name, details, response, elapsed_ms}."""
        return self.run({"call": call, "request": request or {}, **fields})

    def calls(self, *calls: dict[str, Any]) -> list[dict[str, Any]]:
        """Several calls in order over one channel (one connection)."""
        return list(self.run({"calls": list(calls)})["results"])


@pytest.fixture(scope="session")
def node_client() -> NodeClient:
    node = node_with_packages(NODE_DIR, "@grpc/grpc-js", suite="interop")
    return NodeClient(node)


@dataclass(frozen=True)
class InteropServer:
    port: int
    index: Path
    pid: int


def _start(index: Path, tokens: Path, log: Path) -> tuple[subprocess.Popen[bytes], int]:
    from skbqa.devstack.ports import free_port
    from skbqa.devstack.processes import grpc_serving

    port = free_port()
    with log.open("ab") as out:
        command = [sys.executable, "-m", "skbqa", "serve", "--index", str(index), "--host", "127.0.0.1"]
        process = subprocess.Popen(
            [*command, "--port", str(port), "--tokens-file", str(tokens)],
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ},
        )
    deadline = time.monotonic() + SERVER_START_TIMEOUT_S
    while time.monotonic() < deadline and process.poll() is None:
        try:
            if grpc_serving(port):
                return process, port
        except grpc.RpcError:  # not listening yet
            time.sleep(0.3)
    _stop(process)
    raise RuntimeError(f"skbqa serve did not become SERVING on port {port}: {log.read_text()[-2000:]}")


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        os.kill(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.kill(process.pid, signal.SIGKILL)
            process.wait(timeout=10)


@pytest.fixture(scope="session")
def interop_server(node_client, biomed_sample_engine, tmp_path_factory) -> Iterator[InteropServer]:
    """`skbqa serve --index DIR --tokens-file F` on 127.0.0.1 and a free port; stopped by its PID at the end.
    A port taken between the probe and the bind fails the start: then one more try on another port."""
    index = Path(biomed_sample_engine.stores.directory)
    work = tmp_path_factory.mktemp("interop")
    tokens = work / "tokens"
    tokens.write_text("# interop clients\n" + "".join(f"{token}\n" for token in TOKENS))
    log = work / "serve.log"
    try:
        process, port = _start(index, tokens, log)
    except RuntimeError:
        process, port = _start(index, tokens, log)
    try:
        yield InteropServer(port=port, index=index, pid=process.pid)
    finally:
        _stop(process)


@pytest.fixture(scope="session")
def client(node_client: NodeClient, interop_server: InteropServer) -> NodeClient:
    return NodeClient(node_client.node, f"127.0.0.1:{interop_server.port}")
