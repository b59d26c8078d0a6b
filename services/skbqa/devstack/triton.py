"""Serve skbqa's local encoder as a Triton model (PyTriton), plus a launcher that runs it as a subprocess.

The served model is the *same* encoder the index was built with (`load_encoder(runtime)`), so vectors from
Triton and from the local encoder agree. The encoder's `name` (model + numerics) and `dim` are published as
model-config parameters; `TritonEncoder` reads them and the engine compares the name with the index manifest.

    python -m skbqa.devstack.triton --grpc-port 8001 --http-port 8000 --metrics-port 8002 \
        --runtime onnx-int8 --max-batch 64

PyTriton and tritonclient are imported inside functions only: importing this module costs nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import signal
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from skbqa.common.errors import BackendUnavailableError
from skbqa.models.local_encoder import RUNTIMES, load_encoder
from skbqa.models.triton_encoder import (
    INPUT_TEXT,
    MODEL_NAME,
    MODEL_VERSION,
    OUTPUT_EMBEDDING,
    PARAM_ENCODER_DIM,
    PARAM_ENCODER_NAME,
)

logger = logging.getLogger(__name__)

# The binding's contract; deploy/triton/model_repository/skbqa_encoder/config.pbtxt must use the same names.
PARAM_RUNTIME = "skbqa_runtime"

LOOPBACK = "127.0.0.1"
READY_MESSAGE = "skbqa triton encoder ready"
DEFAULT_MAX_BATCH = 64
DEFAULT_QUEUE_DELAY_US = 2000
DEFAULT_READY_TIMEOUT_S = 90.0


@dataclass(frozen=True)
class ServerOptions:
    grpc_port: int = 8001
    http_port: int = 8000
    metrics_port: int = 8002
    runtime: str = "onnx-int8"
    max_batch: int = DEFAULT_MAX_BATCH
    queue_delay_us: int = DEFAULT_QUEUE_DELAY_US
    threads: int = 1  # one ONNX thread: on small CPU boxes more threads make batch-1 latency worse, not better
    model_name: str = MODEL_NAME
    model_version: int = MODEL_VERSION


# ----------------------------------------------------------------------------------------------- the server


def decode_texts(column: np.ndarray) -> list[str]:
    """Triton hands BYTES tensors over as numpy bytes/object arrays of shape [n, 1]; return n Python strings."""
    return [v.decode("utf-8") if isinstance(v, bytes) else str(v) for v in column.reshape(-1)]


def batch_invariant(runtime: str) -> bool:
    """Whether a text's embedding is independent of the other texts in its batch. Dynamic int8 quantisation
    scales activations per batch, so merging callers' requests would change their vectors (cosine ≈ 0.99)."""
    return not runtime.endswith("int8")


def make_infer_function(encoder: Any, *, merge_requests: bool = True) -> Callable[..., Any]:
    """The callable PyTriton runs. Merged: one dynamic batch of all queued requests' texts in, one [n, dim] array
    out. Not merged: every request encoded on its own — the numbers a local encoder gives for the same call."""
    from pytriton.decorators import batch

    if merge_requests:

        @batch  # type: ignore[misc]
        def infer(**inputs: np.ndarray) -> dict[str, np.ndarray]:
            texts = decode_texts(inputs[INPUT_TEXT])
            return {OUTPUT_EMBEDDING: np.ascontiguousarray(encoder.encode(texts), dtype=np.float32)}

        return infer

    def infer_each(requests: list[Any]) -> list[dict[str, np.ndarray]]:
        return [
            {OUTPUT_EMBEDDING: np.ascontiguousarray(encoder.encode(decode_texts(r[INPUT_TEXT])), dtype=np.float32)}
            for r in requests
        ]

    return infer_each


def model_parameters(encoder: Any, runtime: str) -> dict[str, str]:
    return {PARAM_ENCODER_NAME: encoder.name, PARAM_ENCODER_DIM: str(encoder.dim), PARAM_RUNTIME: runtime}


def _publish_parameters(triton: Any, parameters: Mapping[str, str]) -> None:
    """Add `parameters` to the config PyTriton generates for each bound model.

    PyTriton 0.7 has no public way to set model-config parameters; its Model caches the TritonModelConfig it
    sends at load time, and that config's `backend_parameters` become the model's `parameters`. This must run
    after bind() and before run(). A clear error beats a server whose clients cannot check the encoder name.
    """
    try:
        models = list(triton._model_manager.models)
        for model in models:
            model._get_triton_model_config().backend_parameters.update(parameters)
    except AttributeError as exc:  # pragma: no cover - only if PyTriton's internals change
        raise RuntimeError(f"cannot publish model parameters with this PyTriton version: {exc}") from exc
    if not models:  # pragma: no cover - bind() always registers one
        raise RuntimeError("no model bound before publishing parameters")


def build_triton(options: ServerOptions, encoder: Any) -> Any:
    """A configured, not yet started PyTriton server with the encoder bound."""
    from pytriton.model_config import DynamicBatcher, ModelConfig, Tensor
    from pytriton.triton import Triton, TritonConfig

    config = TritonConfig(
        http_address=LOOPBACK,
        grpc_address=LOOPBACK,
        metrics_address=LOOPBACK,
        http_port=options.http_port,
        grpc_port=options.grpc_port,
        metrics_port=options.metrics_port,
        log_verbose=0,
    )
    triton = Triton(config=config)
    triton.bind(
        model_name=options.model_name,
        model_version=options.model_version,
        # one callable = one model instance
        infer_func=make_infer_function(encoder, merge_requests=batch_invariant(options.runtime)),
        inputs=[Tensor(name=INPUT_TEXT, dtype=bytes, shape=(1,))],
        outputs=[Tensor(name=OUTPUT_EMBEDDING, dtype=np.float32, shape=(encoder.dim,))],
        config=ModelConfig(
            max_batch_size=options.max_batch,
            batcher=DynamicBatcher(max_queue_delay_microseconds=options.queue_delay_us),
        ),
        strict=True,
    )
    _publish_parameters(triton, model_parameters(encoder, options.runtime))
    return triton


def serve(options: ServerOptions) -> int:
    """Run until SIGTERM/SIGINT (exit 0) or until Triton dies (exit 1)."""
    encoder = load_encoder(options.runtime, threads=options.threads)
    # Load (and on a fresh machine export) the model before Triton reports ready, so "ready" means ready.
    encoder.encode(["warm-up"])
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    triton = build_triton(options, encoder)
    try:
        triton.run()
        logger.info(
            "%s: model=%s version=%d encoder=%s dim=%d grpc=%s:%d http=%s:%d metrics=%s:%d",
            READY_MESSAGE,
            options.model_name,
            options.model_version,
            encoder.name,
            encoder.dim,
            LOOPBACK,
            options.grpc_port,
            LOOPBACK,
            options.http_port,
            LOOPBACK,
            options.metrics_port,
        )
        while not stop.wait(0.5):
            if not triton.is_alive():
                logger.error("Triton server or model proxy died; exiting")
                return 1
        logger.info("signal received; stopping Triton")
        return 0
    finally:
        triton.stop()


def parse_args(argv: Sequence[str] | None = None) -> ServerOptions:
    p = argparse.ArgumentParser(prog="python -m skbqa.devstack.triton", description=__doc__.split("\n")[0])
    p.add_argument("--grpc-port", type=int, default=8001)
    p.add_argument("--http-port", type=int, default=8000)
    p.add_argument("--metrics-port", type=int, default=8002)
    p.add_argument("--runtime", choices=RUNTIMES, default="onnx-int8")
    p.add_argument("--max-batch", type=int, default=DEFAULT_MAX_BATCH, help="Triton max_batch_size")
    p.add_argument("--queue-delay-us", type=int, default=DEFAULT_QUEUE_DELAY_US, help="dynamic batcher delay")
    p.add_argument("--threads", type=int, default=1, help="encoder threads (ONNX: concurrent batches)")
    p.add_argument("--model-name", default=MODEL_NAME)
    p.add_argument("--model-version", type=int, default=MODEL_VERSION)
    a = p.parse_args(argv)
    return ServerOptions(
        grpc_port=a.grpc_port,
        http_port=a.http_port,
        metrics_port=a.metrics_port,
        runtime=a.runtime,
        max_batch=a.max_batch,
        queue_delay_us=a.queue_delay_us,
        threads=a.threads,
        model_name=a.model_name,
        model_version=a.model_version,
    )


def main(argv: Sequence[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    # PyTriton logs every endpoint at INFO; keep the server's own ready line the one line that matters.
    logging.getLogger("pytriton").setLevel(logging.WARNING)
    return serve(parse_args(argv))


# --------------------------------------------------------------------------------------------- the launcher


def server_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The child's environment: Python's LIBDIR first on LD_LIBRARY_PATH.

    PyTriton's Python backend stub links against libpython; on a pyenv Python it otherwise picks up another
    libpython and the model fails to load (`'_thread.RLock' object has no attribute '_recursion_count'`).
    """
    out = dict(os.environ if env is None else env)
    libdir = sysconfig.get_config_var("LIBDIR")
    if libdir:
        rest = [p for p in out.get("LD_LIBRARY_PATH", "").split(os.pathsep) if p and p != libdir]
        out["LD_LIBRARY_PATH"] = os.pathsep.join([libdir, *rest])
    return out


@dataclass
class TritonServerHandle:
    process: subprocess.Popen[bytes]
    grpc_port: int
    http_port: int
    metrics_port: int
    model_name: str
    log_path: Path
    owns_log: bool = False  # a temp log the launcher made is removed by stop(); a caller's log is kept

    @property
    def grpc_address(self) -> str:
        return f"{LOOPBACK}:{self.grpc_port}"

    @property
    def url(self) -> str:
        """The URL `TritonEncoder.from_url` takes."""
        return f"triton://{self.grpc_address}/{self.model_name}"

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self, timeout: float = 30.0) -> int | None:
        """SIGTERM the server (it unloads and stops Triton itself); SIGKILL its process group if it hangs."""
        proc = self.process
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                logger.warning(
                    "triton server pid %d ignored SIGTERM for %.0fs; killing its group", proc.pid, timeout
                )
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)  # the group is this server's own (start_new_session)
                proc.wait(timeout=10)
        self._reap_group()
        if self.owns_log:
            self.log_path.unlink(missing_ok=True)
        return proc.returncode

    def _reap_group(self) -> None:
        # tritonserver and its backend stubs live in the server's group; none may outlive it.
        deadline = time.monotonic() + 5.0
        while time.monotonic() < deadline:
            try:
                os.killpg(self.process.pid, 0)
            except (ProcessLookupError, PermissionError):
                return
            time.sleep(0.1)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)

    def __enter__(self) -> TritonServerHandle:
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()


def start_triton_encoder_server(
    grpc_port: int,
    http_port: int,
    metrics_port: int,
    runtime: str = "onnx-int8",
    env: Mapping[str, str] | None = None,
    *,
    max_batch: int = DEFAULT_MAX_BATCH,
    queue_delay_us: int = DEFAULT_QUEUE_DELAY_US,
    threads: int = 1,
    model_name: str = MODEL_NAME,
    ready_timeout: float = DEFAULT_READY_TIMEOUT_S,
    log_path: Path | None = None,
) -> TritonServerHandle:
    """Spawn `python -m skbqa.devstack.triton` in its own process group and wait until the model is ready.

    Raises BackendUnavailableError (after stopping the child) if it exits or is not ready within
    `ready_timeout` seconds; the message ends with the tail of the server log.
    """
    owns_log = log_path is None
    if log_path is None:
        fd, name = tempfile.mkstemp(prefix="skbqa-triton-", suffix=".log")
        os.close(fd)
        log_path = Path(name)
    cmd = [
        sys.executable,
        "-m",
        "skbqa.devstack.triton",
        *("--grpc-port", str(grpc_port), "--http-port", str(http_port), "--metrics-port", str(metrics_port)),
        *("--runtime", runtime, "--max-batch", str(max_batch), "--queue-delay-us", str(queue_delay_us)),
        *("--threads", str(threads), "--model-name", model_name),
    ]
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=server_env(env),
            start_new_session=True,  # its own group, so stop() can reach tritonserver and nothing else
        )
    handle = TritonServerHandle(process, grpc_port, http_port, metrics_port, model_name, log_path, owns_log)
    try:
        _wait_until_ready(handle, ready_timeout)
    except BaseException:
        handle.owns_log = False  # keep the log of a failed start for inspection (its tail is in the error)
        handle.stop(timeout=10)
        raise
    return handle


def _wait_until_ready(handle: TritonServerHandle, timeout: float) -> None:
    import tritonclient.grpc as grpcclient

    deadline = time.monotonic() + timeout
    client = grpcclient.InferenceServerClient(handle.grpc_address)
    try:
        while time.monotonic() < deadline:
            if handle.process.poll() is not None:
                raise BackendUnavailableError(
                    f"triton server exited with {handle.process.returncode} before ready; log:\n{handle.log_tail()}",
                    log=str(handle.log_path),
                )
            if _is_ready(client, handle.model_name):
                return
            time.sleep(0.25)
    finally:
        client.close()
    raise BackendUnavailableError(
        f"triton server not ready after {timeout:.0f}s; log:\n{handle.log_tail()}", log=str(handle.log_path)
    )


def _is_ready(client: Any, model_name: str) -> bool:
    from tritonclient.utils import InferenceServerException

    try:
        return bool(
            client.is_server_ready(client_timeout=1.0) and client.is_model_ready(model_name, client_timeout=1.0)
        )
    except InferenceServerException:
        return False


if __name__ == "__main__":
    sys.exit(main())
