"""`TritonEncoder`: the `Encoder` port over Triton's gRPC API (tritonclient.grpc).

The server (skbqa.devstack.triton, or the GPU model repository under deploy/triton) publishes the
served encoder's `name` and `dim` as model-config parameters. The client adopts them on first use, so an
index built with the local `all-MiniLM-L6-v2/onnx-int8/max128` encoder accepts a Triton server that serves
that encoder and refuses one that serves anything else (the engine compares names).

URL form: `triton://HOST:PORT/MODEL` (gRPC port, e.g. `triton://127.0.0.1:8001/skbqa_encoder`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import numpy as np

from skbqa.common.errors import BackendUnavailableError

# The contract with the model server (devstack/triton.py here, deploy/triton on a cluster).
MODEL_NAME = "skbqa_encoder"
MODEL_VERSION = 1
INPUT_TEXT = "text"  # BYTES, dims [1] per item: a batch of n texts is sent as shape [n, 1]
OUTPUT_EMBEDDING = "embedding"  # FP32, dims [dim] per item: [n, dim], unit vectors
PARAM_ENCODER_NAME = "skbqa_encoder_name"
PARAM_ENCODER_DIM = "skbqa_encoder_dim"

URL_SCHEME = "triton"
DEFAULT_BATCH_SIZE = 64
DEFAULT_TIMEOUT_S = 30.0
DEFAULT_RETRIES = 2
UNAVAILABLE = "StatusCode.UNAVAILABLE"
DEADLINE_EXCEEDED = "StatusCode.DEADLINE_EXCEEDED"
MAX_GRPC_MESSAGE = 2**31 - 1


@dataclass(frozen=True)
class ServedModel:
    """What the server says it serves (read once from the model config)."""

    name: str
    dim: int
    max_batch_size: int


class TritonEncoder:
    def __init__(
        self,
        address: str = "127.0.0.1:8001",
        model_name: str = MODEL_NAME,
        *,
        model_version: str = "",
        batch_size: int = DEFAULT_BATCH_SIZE,
        client_timeout: float = DEFAULT_TIMEOUT_S,
        retries: int = DEFAULT_RETRIES,
        retry_backoff: float = 0.2,
        encoder_batch_sizes: Callable[[int], None] | None = None,
    ) -> None:
        """`address` is the gRPC `host:port`; construction does no I/O (the first use connects).

        `client_timeout` bounds every call (seconds, end to end); `retries` extra attempts are made only for
        UNAVAILABLE (server not listening / restarting), with doubling backoff. `encoder_batch_sizes`, when
        set, is called with the size of every batch sent (a metrics hook).
        """
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        self.address = address
        self.model_name = model_name
        self.model_version = model_version
        self.batch_size = batch_size
        self.client_timeout = client_timeout
        self.retries = max(0, retries)
        self.retry_backoff = retry_backoff
        self.encoder_batch_sizes = encoder_batch_sizes
        self._client: Any = None
        self._served: ServedModel | None = None
        self._lock = threading.Lock()  # guards the one-time handshake
        self._client_lock = threading.Lock()  # guards creating the (thread-safe) gRPC client

    @classmethod
    def from_url(cls, url: str, **kwargs: Any) -> TritonEncoder:
        """`triton://HOST:PORT/MODEL[/VERSION]`; keyword arguments as for the constructor."""
        parts = urlsplit(url)
        if parts.scheme != URL_SCHEME or not parts.hostname or parts.port is None:
            raise ValueError(f"not a Triton encoder URL (want triton://HOST:PORT/MODEL): {url!r}")
        path = [p for p in parts.path.split("/") if p]
        if len(path) > 2:
            raise ValueError(f"Triton encoder URL path must be /MODEL or /MODEL/VERSION: {url!r}")
        model = path[0] if path else MODEL_NAME
        version = path[1] if len(path) == 2 else ""
        host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname  # IPv6 literals keep brackets
        return cls(f"{host}:{parts.port}", model, model_version=version, **kwargs)

    @property
    def url(self) -> str:
        version = f"/{self.model_version}" if self.model_version else ""
        return f"{URL_SCHEME}://{self.address}/{self.model_name}{version}"

    @property
    def name(self) -> str:
        return self.served().name

    @property
    def dim(self) -> int:
        return self.served().dim

    def served(self) -> ServedModel:
        """Read (once) the served encoder's name, dim and max batch size from the model config."""
        if self._served is None:
            with self._lock:
                if self._served is None:
                    config = self._call("read model config", self._get_config)
                    self._served = parse_served_model(config, self.url)
        return self._served

    def encode(self, texts: Sequence[str], *, progress: str | None = None) -> np.ndarray:
        served = self.served()
        out = np.zeros((len(texts), served.dim), dtype=np.float32)
        step = min(self.batch_size, served.max_batch_size) if served.max_batch_size > 0 else self.batch_size
        bar = _progress(len(texts), progress)
        for start in range(0, len(texts), step):
            batch = texts[start : start + step]
            if self.encoder_batch_sizes is not None:
                self.encoder_batch_sizes(len(batch))
            out[start : start + len(batch)] = self._encode_batch(batch, served.dim)
            if bar is not None:
                bar.update(len(batch))
        if bar is not None:
            bar.close()
        return out

    def close(self) -> None:
        with self._client_lock:
            if self._client is not None:
                self._client.close()
                self._client = None

    def __enter__(self) -> TritonEncoder:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # ------------------------------------------------------------------------------------------ internals

    def _encode_batch(self, batch: Sequence[str], dim: int) -> np.ndarray:
        import tritonclient.grpc as grpcclient

        data = np.array([t.encode("utf-8") for t in batch], dtype=np.object_).reshape(-1, 1)
        text = grpcclient.InferInput(INPUT_TEXT, list(data.shape), "BYTES")
        text.set_data_from_numpy(data)
        wanted = [grpcclient.InferRequestedOutput(OUTPUT_EMBEDDING)]

        def infer(client: Any) -> Any:
            return client.infer(
                self.model_name,
                [text],
                model_version=self.model_version,
                outputs=wanted,
                client_timeout=self.client_timeout,
            )

        result = self._call(f"encode {len(batch)} texts", infer)
        vectors = result.as_numpy(OUTPUT_EMBEDDING)
        if vectors is None or vectors.shape != (len(batch), dim):
            got = None if vectors is None else vectors.shape
            raise BackendUnavailableError(
                f"triton encoder {self.url} returned shape {got}, expected {(len(batch), dim)}", url=self.url
            )
        return vectors.astype(np.float32, copy=False)

    def _get_config(self, client: Any) -> dict[str, Any]:
        response = client.get_model_config(
            self.model_name, self.model_version, as_json=True, client_timeout=self.client_timeout
        )
        return dict(response.get("config", response))

    def _connection(self) -> Any:
        with self._client_lock:
            if self._client is None:
                self._client = self._new_client()
            return self._client

    def _new_client(self) -> Any:
        import tritonclient.grpc as grpcclient

        # Passing channel_args replaces tritonclient's defaults, so the message limits are restated. Short
        # reconnect backoff: after a refused connection gRPC otherwise waits ~1-2 s before trying again,
        # which would make our bounded retries useless against a server that is just restarting.
        return grpcclient.InferenceServerClient(
            self.address,
            channel_args=[
                ("grpc.max_send_message_length", MAX_GRPC_MESSAGE),
                ("grpc.max_receive_message_length", MAX_GRPC_MESSAGE),
                ("grpc.initial_reconnect_backoff_ms", 100),
                ("grpc.min_reconnect_backoff_ms", 100),
                ("grpc.max_reconnect_backoff_ms", 1000),
            ],
        )

    def _call(self, what: str, fn: Callable[[Any], Any]) -> Any:
        """Run `fn(client)`; retry UNAVAILABLE up to `retries` times; map every failure to one error type."""
        from tritonclient.utils import InferenceServerException

        delay = self.retry_backoff
        for attempt in range(self.retries + 1):
            try:
                return fn(self._connection())
            except InferenceServerException as exc:
                status = str(exc.status() or "")
                if status == UNAVAILABLE and attempt < self.retries:
                    time.sleep(delay)
                    delay *= 2
                    continue
                raise self._error(what, status, exc.message() or str(exc), attempt + 1) from exc
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises

    def _error(self, what: str, status: str, message: str, attempts: int) -> BackendUnavailableError:
        code = status.removeprefix("StatusCode.") or "ERROR"
        if status == DEADLINE_EXCEEDED:
            message = f"no answer within client_timeout={self.client_timeout}s"
        first_line = " ".join(message.split())[:200]
        tried = f" after {attempts} attempts" if attempts > 1 else ""
        return BackendUnavailableError(
            f"triton encoder {self.url}: {what} failed{tried}: {code}: {first_line}",
            url=self.url,
            status=code,
            attempts=attempts,
        )


def parse_served_model(config: dict[str, Any], url: str) -> ServedModel:
    """Name and dim from the model config; dim is cross-checked against the output tensor's dims."""
    params = config.get("parameters") or {}
    name = (params.get(PARAM_ENCODER_NAME) or {}).get("string_value", "")
    if not name:
        raise BackendUnavailableError(
            f"triton model at {url} does not publish parameter {PARAM_ENCODER_NAME}; is it an skbqa encoder?",
            url=url,
        )
    output = next((o for o in config.get("output", []) if o.get("name") == OUTPUT_EMBEDDING), None)
    if output is None:
        raise BackendUnavailableError(f"triton model at {url} has no output {OUTPUT_EMBEDDING!r}", url=url)
    dims = [int(d) for d in output.get("dims", [])]
    dim = int((params.get(PARAM_ENCODER_DIM) or {}).get("string_value", dims[-1] if dims else 0))
    if dims and dims[-1] != dim:
        raise BackendUnavailableError(
            f"triton model at {url}: {PARAM_ENCODER_DIM}={dim} but output dims are {dims}", url=url
        )
    return ServedModel(name=name, dim=dim, max_batch_size=int(config.get("max_batch_size", 0)))


def _progress(total: int, label: str | None) -> Any:
    if label is None:
        return None
    from tqdm import tqdm

    return tqdm(total=total, desc=label, unit="text", mininterval=1.0, leave=False)
