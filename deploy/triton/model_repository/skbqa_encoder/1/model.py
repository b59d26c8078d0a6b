"""Triton Python-backend model: skbqa's all-MiniLM-L6-v2 encoder (tokenizers + ONNX Runtime), for GPU nodes.

Standalone on purpose: the Triton image has no skbqa installed. The numerics copy
skbqa.models.local_encoder.OnnxEncoder (truncate to max_length, sort by token length, batch under a token
budget, pad per batch, mean pooling over the attention mask, L2 normalisation), so vectors match the ones the
index was built with. Needs `numpy`, `tokenizers` and `onnxruntime-gpu` (or `onnxruntime`) in the image.
Files expected next to this one: the ONNX export named by the runtime and `tokenizer.json` (see README.md).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import triton_python_backend_utils as pb_utils

MODEL_FAMILY = "all-MiniLM-L6-v2"
ONNX_FILES = {"onnx-int8": "model.int8.onnx", "onnx": "model.onnx"}
INPUT_TEXT = "text"
OUTPUT_EMBEDDING = "embedding"


class TritonPythonModel:
    def initialize(self, args: dict[str, Any]) -> None:
        config = json.loads(args["model_config"])
        params = {key: value["string_value"] for key, value in config.get("parameters", {}).items()}
        runtime = params["skbqa_runtime"]
        self.max_length = int(params.get("max_length", "128"))
        self.batch_items = int(params.get("batch_items", "64"))
        self.batch_tokens = int(params.get("batch_tokens", "512"))
        self.dim = int(params["skbqa_encoder_dim"])
        expected = f"{MODEL_FAMILY}/{runtime}/max{self.max_length}"
        # Clients trust skbqa_encoder_name to decide whether an index fits; a config that lies must not load.
        if runtime not in ONNX_FILES or params["skbqa_encoder_name"] != expected:
            raise ValueError(f"skbqa_encoder_name {params['skbqa_encoder_name']!r} does not describe {expected!r}")
        output = next(o for o in config["output"] if o["name"] == OUTPUT_EMBEDDING)
        if [int(d) for d in output["dims"]] != [self.dim]:
            raise ValueError(f"output dims {output['dims']} != skbqa_encoder_dim {self.dim}")

        # Dynamic int8 quantisation scales activations per ONNX run: merging callers' texts would change each
        # caller's vectors, so int8 encodes request by request; fp32 is batch-independent and merges.
        self.merge_requests = not runtime.endswith("int8")
        here = Path(args["model_repository"]) / str(args["model_version"])
        self.session = _session(here / ONNX_FILES[runtime], args)
        self.tokenizer = _tokenizer(here / "tokenizer.json", self.max_length)

    def execute(self, requests: list[Any]) -> list[Any]:
        if not self.merge_requests:
            return [self._respond([request])[0] for request in requests]
        return self._respond(requests)

    def _respond(self, requests: list[Any]) -> list[Any]:
        """One encode over `requests`' texts, split back per request (as PyTriton's @batch does)."""
        try:
            columns = [pb_utils.get_input_tensor_by_name(r, INPUT_TEXT).as_numpy() for r in requests]
            texts = [_text(v) for column in columns for v in column.reshape(-1)]
            vectors = self.encode(texts)
        except Exception as exc:  # report to every caller instead of killing the stub
            error = pb_utils.TritonError(f"skbqa_encoder: {type(exc).__name__}: {exc}")
            return [pb_utils.InferenceResponse(output_tensors=[], error=error) for _ in requests]
        responses = []
        start = 0
        for column in columns:
            n = column.shape[0]
            tensor = pb_utils.Tensor(OUTPUT_EMBEDDING, np.ascontiguousarray(vectors[start : start + n]))
            responses.append(pb_utils.InferenceResponse(output_tensors=[tensor]))
            start += n
        return responses

    def encode(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        encodings = self.tokenizer.encode_batch([t or " " for t in texts])
        lengths = np.fromiter((len(e.ids) for e in encodings), dtype=np.int64, count=len(encodings))
        order = np.argsort(lengths, kind="stable")
        for idx in _token_budget_batches(lengths[order], order, self.batch_tokens, self.batch_items):
            out[idx] = self._run(idx, encodings, lengths)
        return out

    def _run(self, idx: np.ndarray, encodings: list[Any], lengths: np.ndarray) -> np.ndarray:
        width = int(lengths[idx].max())
        ids = np.zeros((idx.size, width), dtype=np.int64)
        mask = np.zeros((idx.size, width), dtype=np.int64)
        for row, i in enumerate(idx):
            seq = encodings[i].ids
            ids[row, : len(seq)] = seq
            mask[row, : len(seq)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        return _mean_pool_normalise(self.session.run(None, feeds)[0], mask)


def _session(path: Path, args: dict[str, Any]) -> Any:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1  # as in skbqa's local encoder; on GPU nodes the work is on the device
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    providers: list[Any] = ["CPUExecutionProvider"]
    if args.get("model_instance_kind") == "GPU" and "CUDAExecutionProvider" in ort.get_available_providers():
        device = int(args.get("model_instance_device_id", 0))
        providers.insert(0, ("CUDAExecutionProvider", {"device_id": device}))
    return ort.InferenceSession(str(path), options, providers=providers)


def _tokenizer(path: Path, max_length: int) -> Any:
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(path))
    tokenizer.enable_truncation(max_length=max_length)
    tokenizer.no_padding()  # each batch is padded to its own longest member
    return tokenizer


def _text(value: Any) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def _token_budget_batches(
    sorted_lengths: np.ndarray, order: np.ndarray, budget: int, max_items: int
) -> list[np.ndarray]:
    """Split `order` (ascending token length) into runs whose padded size (items x longest) fits `budget`."""
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


def _mean_pool_normalise(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    weights = mask[:, :, None].astype(np.float32)
    summed = (hidden * weights).sum(axis=1)
    pooled = summed / np.clip(weights.sum(axis=1), 1e-9, None)
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)
