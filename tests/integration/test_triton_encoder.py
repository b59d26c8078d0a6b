"""TritonEncoder against a REAL Triton server (PyTriton's bundled tritonserver, CPU, loopback, free ports).

The server runs the same local encoder (`onnx-int8`); its vectors must equal the local encoder's. Note on
int8: dynamic quantisation scales activations per ONNX batch, so a text's vector depends (by up to ~3e-2)
on which texts share its batch. Equality is therefore checked for the *same batches*: Triton's client
batches versus the local encoder run on the same slices. One sequential client means one request per
server execution, so the server sees exactly those slices.

Also checks the GPU model repository under deploy/triton: its config parses as a Triton ModelConfig and
matches the PyTriton binding, and its Python model (run here on CPU with a stand-in for Triton's
`triton_python_backend_utils`) produces the local encoder's vectors.
"""

from __future__ import annotations

import importlib.util
import sys
import time
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("pytriton")
pytest.importorskip("tritonclient.grpc")

from skbqa.common.errors import BackendUnavailableError
from skbqa.devstack.ports import free_port
from skbqa.devstack.triton import TritonServerHandle, start_triton_encoder_server
from skbqa.models.local_encoder import (
    BATCH_ITEMS,
    BATCH_TOKENS,
    DIM,
    load_encoder,
    onnx_model_path,
    packaged_model_dir,
)
from skbqa.models.triton_encoder import (
    INPUT_TEXT,
    MODEL_NAME,
    OUTPUT_EMBEDDING,
    PARAM_ENCODER_DIM,
    PARAM_ENCODER_NAME,
    TritonEncoder,
)

pytestmark = pytest.mark.triton

REPO_MODEL = Path(__file__).resolve().parents[2] / "deploy" / "triton" / "model_repository" / MODEL_NAME
TOLERANCE = 1e-4
CLIENT_BATCH = 16

TEXTS = [
    "TP53",
    "tumor protein p53, a transcription factor that regulates the cell cycle and apoptosis",
    "",
    "Which genes are associated with early-onset Parkinson disease and interact with PINK1?",
    "ß-catenin (CTNNB1) — Wnt signalling; ünïcödé and emoji 🧬",
    *(f"gene {i} " + "involved in mitochondrial oxidative phosphorylation " * (i % 9) for i in range(35)),
]


@pytest.fixture(scope="module")
def server() -> Iterator[TritonServerHandle]:
    handle = start_triton_encoder_server(
        free_port(), free_port(), free_port(), runtime="onnx-int8", max_batch=64, threads=1, ready_timeout=90
    )
    try:
        yield handle
    finally:
        handle.stop(timeout=30)


@pytest.fixture(scope="module")
def local() -> Any:
    return load_encoder("onnx-int8", threads=1)


@pytest.fixture
def triton(server: TritonServerHandle) -> Iterator[TritonEncoder]:
    with TritonEncoder.from_url(server.url, batch_size=CLIENT_BATCH, client_timeout=30) as encoder:
        yield encoder


def local_in_batches(local: Any, texts: list[str], size: int) -> np.ndarray:
    return np.vstack([local.encode(texts[i : i + size]) for i in range(0, len(texts), size)])


# ------------------------------------------------------------------------------------------ real server


def test_name_and_dim_come_from_the_server_and_match_the_local_encoder(triton: TritonEncoder, local: Any) -> None:
    assert triton.name == local.name == "all-MiniLM-L6-v2/onnx-int8/max128"
    assert triton.dim == local.dim == DIM
    assert triton.served().max_batch_size == 64


def test_vectors_equal_the_local_encoder(triton: TritonEncoder, local: Any) -> None:
    got = triton.encode(TEXTS)
    want = local_in_batches(local, TEXTS, CLIENT_BATCH)
    assert got.dtype == np.float32 and got.shape == (len(TEXTS), DIM)
    assert float(np.abs(got - want).max()) < TOLERANCE
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)


def test_single_text_equals_local(triton: TritonEncoder, local: Any) -> None:
    for text in TEXTS[:4]:
        assert float(np.abs(triton.encode([text]) - local.encode([text])).max()) < TOLERANCE


def test_concurrent_callers_get_their_own_numbers(server: TritonServerHandle, local: Any) -> None:
    """int8 activations are quantised per batch: the server must not merge callers' texts into one batch, or
    a text's vector would depend on who else called at the same moment."""
    from concurrent.futures import ThreadPoolExecutor

    calls = [[f"{text} (caller {i})", TEXTS[i % len(TEXTS)]] for i, text in enumerate(TEXTS[:12])]
    with TritonEncoder.from_url(server.url, client_timeout=30) as encoder, ThreadPoolExecutor(8) as pool:
        for _ in range(3):
            results = list(pool.map(encoder.encode, calls))
            for texts, got in zip(calls, results, strict=True):
                assert float(np.abs(got - local.encode(texts)).max()) < TOLERANCE


def test_batches_split_at_the_client_batch_size(server: TritonServerHandle, local: Any) -> None:
    seen: list[int] = []
    texts = TEXTS[:37]
    with TritonEncoder.from_url(server.url, batch_size=CLIENT_BATCH, encoder_batch_sizes=seen.append) as enc:
        got = enc.encode(texts)
    assert seen == [16, 16, 5]
    # Rows on both sides of each boundary are where they belong (the server sorts by length internally).
    assert float(np.abs(got - local_in_batches(local, texts, CLIENT_BATCH)).max()) < TOLERANCE
    for i in (15, 16, 31, 32, 36):
        assert (
            float(np.abs(got[i] - local.encode(texts[(i // 16) * 16 : (i // 16 + 1) * 16])[i % 16]).max()) < 1e-4
        )


def test_client_batch_is_capped_by_the_server_max_batch(server: TritonServerHandle) -> None:
    seen: list[int] = []
    with TritonEncoder.from_url(server.url, batch_size=500, encoder_batch_sizes=seen.append) as enc:
        got = enc.encode([f"name {i}" for i in range(70)])
    assert seen == [64, 6]  # the server's max_batch_size is 64; a 500-row request would be rejected
    assert got.shape == (70, DIM)


def test_empty_input_returns_zero_rows(server: TritonServerHandle) -> None:
    seen: list[int] = []
    with TritonEncoder.from_url(server.url, encoder_batch_sizes=seen.append) as enc:
        got = enc.encode([])
    assert got.shape == (0, DIM) and got.dtype == np.float32
    assert seen == []


def test_served_config_parameters_match_the_gpu_model_repository(server: TritonServerHandle) -> None:
    import tritonclient.grpc as grpcclient

    client = grpcclient.InferenceServerClient(f"127.0.0.1:{server.grpc_port}")
    try:
        served = client.get_model_config(MODEL_NAME, as_json=True)["config"]
    finally:
        client.close()
    repo = repository_config()
    for key in (PARAM_ENCODER_NAME, PARAM_ENCODER_DIM):
        assert served["parameters"][key]["string_value"] == repo.parameters[key].string_value
    assert served["max_batch_size"] == repo.max_batch_size
    assert [(t["name"], t["data_type"], t["dims"]) for t in served["input"] + served["output"]] == [
        (t.name, model_config_pb2().DataType.Name(t.data_type), [str(d) for d in t.dims])
        for t in [*repo.input, *repo.output]
    ]


def test_client_timeout_is_honoured(server: TritonServerHandle) -> None:
    long_texts = ["a long abstract about gene regulation and protein folding " * 20] * 64
    with TritonEncoder.from_url(server.url, batch_size=64, client_timeout=0.02, retries=3) as enc:
        enc.served()  # the handshake is cheap; the timeout must bite on the 64 x 128-token inference
        start = time.monotonic()
        with pytest.raises(BackendUnavailableError, match="DEADLINE_EXCEEDED") as info:
            enc.encode(long_texts)
        elapsed = time.monotonic() - start
    assert elapsed < 1.0, f"took {elapsed:.2f}s for a 20 ms timeout (deadlines must not be retried)"
    assert "\n" not in str(info.value)
    assert info.value.details["attempts"] == 1


def test_unavailable_is_retried_then_succeeds(server: TritonServerHandle, local: Any) -> None:
    with TritonEncoder.from_url(server.url, retries=2, retry_backoff=0.01) as enc:
        flaky = FlakyClient(enc._connection(), failures=2)
        enc._client = flaky
        got = enc.encode(["TP53"])
    assert flaky.calls == 4  # config read: 2 refusals + 1 success; then one infer
    assert float(np.abs(got - local.encode(["TP53"])).max()) < TOLERANCE


def test_unavailable_retries_are_bounded(server: TritonServerHandle) -> None:
    with TritonEncoder.from_url(server.url, retries=1, retry_backoff=0.01) as enc:
        enc._client = FlakyClient(enc._connection(), failures=5)
        with pytest.raises(BackendUnavailableError, match="after 2 attempts: UNAVAILABLE"):
            enc.encode(["TP53"])


def test_unknown_model_is_reported(server: TritonServerHandle) -> None:
    enc = TritonEncoder(f"127.0.0.1:{server.grpc_port}", "no_such_model", retries=0)
    with enc, pytest.raises(BackendUnavailableError, match="no_such_model"):
        _ = enc.name


# -------------------------------------------------------------------------------------- no server needed


def test_non_listening_port_raises_quickly() -> None:
    port = free_port()  # nothing listens there
    enc = TritonEncoder(f"127.0.0.1:{port}", retries=2, retry_backoff=0.05, client_timeout=5)
    start = time.monotonic()
    with pytest.raises(BackendUnavailableError, match="UNAVAILABLE") as info:
        enc.encode(["TP53"])
    elapsed = time.monotonic() - start
    enc.close()
    assert elapsed < 3.0, f"took {elapsed:.2f}s to report an unreachable server"
    assert info.value.details["attempts"] == 3
    assert "\n" not in str(info.value) and f"triton://127.0.0.1:{port}/{MODEL_NAME}" in str(info.value)


def test_launcher_reports_a_server_that_exits() -> None:
    start = time.monotonic()
    with pytest.raises(BackendUnavailableError, match="exited with 2 before ready") as info:
        start_triton_encoder_server(
            free_port(), free_port(), free_port(), runtime="no-such-runtime", ready_timeout=60
        )
    assert time.monotonic() - start < 30  # noticed when the child exits, not at the timeout
    log = Path(info.value.details["log"])
    assert "invalid choice" in log.read_text()  # the failed start's log is kept for inspection
    log.unlink()


def test_from_url() -> None:
    enc = TritonEncoder.from_url("triton://127.0.0.1:8001/skbqa_encoder/2", batch_size=8)
    assert (enc.address, enc.model_name, enc.model_version, enc.batch_size) == (
        "127.0.0.1:8001",
        MODEL_NAME,
        "2",
        8,
    )
    assert enc.url == "triton://127.0.0.1:8001/skbqa_encoder/2"
    assert TritonEncoder.from_url("triton://localhost:9/").model_name == MODEL_NAME
    assert TritonEncoder.from_url("triton://[::1]:8001/m").address == "[::1]:8001"
    for bad in ("http://127.0.0.1:8001/m", "triton://127.0.0.1/m", "triton://h:1/a/b/c"):
        with pytest.raises(ValueError):
            TritonEncoder.from_url(bad)


def test_model_repository_config_matches_the_pytriton_binding(local: Any) -> None:
    config = repository_config()
    pb = model_config_pb2()
    assert config.name == MODEL_NAME and config.backend == "python" and config.max_batch_size > 0
    [text] = config.input
    [embedding] = config.output
    assert (text.name, text.data_type, list(text.dims)) == (INPUT_TEXT, pb.TYPE_STRING, [1])
    assert (embedding.name, embedding.data_type, list(embedding.dims)) == (OUTPUT_EMBEDDING, pb.TYPE_FP32, [DIM])
    # KIND_AUTO: one instance per visible GPU, else one CPU instance (the chart hides GPUs from CPU-only pods)
    assert [g.kind for g in config.instance_group] == [pb.ModelInstanceGroup.KIND_AUTO]
    assert config.HasField("dynamic_batching")
    assert config.parameters[PARAM_ENCODER_NAME].string_value == local.name
    assert config.parameters[PARAM_ENCODER_DIM].string_value == str(DIM)


def test_model_repository_python_model_matches_local(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, local: Any
) -> None:
    """Run deploy/.../1/model.py on CPU with a stand-in pb_utils, laid out as the README says."""
    model = load_repository_model(tmp_path, monkeypatch, repository_config())
    # One dynamic batch of two requests. int8 encodes each on its own, so every caller gets exactly what the
    # local encoder gives for its call, whatever else was queued; the 80-text request (> 64) takes several
    # inner ONNX runs, so the grouping (length sort + token budget) must match the local encoder's too.
    first, second = TEXTS + TEXTS[::-1], TEXTS[:7]
    responses = model.execute([FakeRequest(first), FakeRequest(second)])
    assert [r.error for r in responses] == [None, None]
    for request_texts, response in zip((first, second), responses, strict=True):
        got = response.output_tensors[0].array
        assert got.shape == (len(request_texts), DIM)
        assert float(np.abs(got - local.encode(request_texts)).max()) < TOLERANCE


def test_model_repository_fp32_merges_the_dynamic_batch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """fp32 vectors do not depend on the batch: one merged encode, split back per request."""
    fp32 = load_encoder("onnx", threads=1)
    config = repository_config()
    config.parameters["skbqa_runtime"].string_value = "onnx"
    config.parameters[PARAM_ENCODER_NAME].string_value = fp32.name
    model = load_repository_model(tmp_path, monkeypatch, config)
    calls: list[int] = []
    encode = model.encode
    model.encode = lambda texts: calls.append(len(texts)) or encode(texts)
    first, second = TEXTS, TEXTS[:3]
    responses = model.execute([FakeRequest(first), FakeRequest(second)])
    assert calls == [len(first) + len(second)]
    for request_texts, response in zip((first, second), responses, strict=True):
        assert response.error is None
        assert float(np.abs(response.output_tensors[0].array - fp32.encode(request_texts)).max()) < TOLERANCE


def test_model_repository_inner_batching_matches_local_encoder() -> None:
    """int8 numerics depend on the inner batches, so the repository must group texts as OnnxEncoder does."""
    config = repository_config()
    assert int(config.parameters["batch_items"].string_value) == BATCH_ITEMS
    assert int(config.parameters["batch_tokens"].string_value) == BATCH_TOKENS


# ---------------------------------------------------------------------------------------------- helpers


def model_config_pb2() -> Any:
    from tritonclient.grpc import model_config_pb2 as pb

    return pb


def load_repository_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, config: Any) -> Any:
    """deploy/.../1/model.py initialised from `config`, with the ONNX files laid out as the README says."""
    from google.protobuf import json_format

    version_dir = tmp_path / MODEL_NAME / "1"
    version_dir.mkdir(parents=True)
    for quantized, name in ((True, "model.int8.onnx"), (False, "model.onnx")):
        (version_dir / name).symlink_to(onnx_model_path(quantized))
    (version_dir / "tokenizer.json").symlink_to(packaged_model_dir() / "tokenizer.json")
    monkeypatch.setitem(sys.modules, "triton_python_backend_utils", fake_pb_utils())
    spec = importlib.util.spec_from_file_location("skbqa_encoder_repo_model", REPO_MODEL / "1" / "model.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    model = module.TritonPythonModel()
    model.initialize(
        {
            "model_config": json_format.MessageToJson(config, preserving_proto_field_name=True),
            "model_repository": str(tmp_path / MODEL_NAME),
            "model_version": "1",
            "model_instance_kind": "CPU",
        }
    )
    return model


def repository_config() -> Any:
    from google.protobuf import text_format

    pb = model_config_pb2()
    return text_format.Parse((REPO_MODEL / "config.pbtxt").read_text(), pb.ModelConfig())


class FlakyClient:
    """Wraps a real tritonclient: the first `failures` calls fail as a refused connection would."""

    def __init__(self, inner: Any, failures: int) -> None:
        self.inner = inner
        self.failures = failures
        self.calls = 0

    def _maybe_fail(self) -> None:
        from tritonclient.utils import InferenceServerException

        self.calls += 1
        if self.calls <= self.failures:
            raise InferenceServerException("failed to connect to all addresses", status="StatusCode.UNAVAILABLE")

    def get_model_config(self, *args: Any, **kwargs: Any) -> Any:
        self._maybe_fail()
        return self.inner.get_model_config(*args, **kwargs)

    def infer(self, *args: Any, **kwargs: Any) -> Any:
        self._maybe_fail()
        return self.inner.infer(*args, **kwargs)

    def close(self) -> None:
        self.inner.close()


class FakeTensor:
    def __init__(self, name: str, array: np.ndarray) -> None:
        self.name = name
        self.array = array

    def as_numpy(self) -> np.ndarray:
        return self.array


class FakeRequest:
    def __init__(self, texts: list[str]) -> None:
        column = np.array([t.encode("utf-8") for t in texts], dtype=np.object_).reshape(-1, 1)
        self.tensors = {INPUT_TEXT: FakeTensor(INPUT_TEXT, column)}


class FakeResponse:
    def __init__(self, output_tensors: list[FakeTensor], error: Any = None) -> None:
        self.output_tensors = output_tensors
        self.error = error


def fake_pb_utils() -> types.ModuleType:
    module = types.ModuleType("triton_python_backend_utils")
    module.Tensor = FakeTensor  # type: ignore[attr-defined]
    module.InferenceResponse = FakeResponse  # type: ignore[attr-defined]
    module.TritonError = lambda message: message  # type: ignore[attr-defined]
    module.get_input_tensor_by_name = lambda request, name: request.tensors[name]  # type: ignore[attr-defined]
    return module
