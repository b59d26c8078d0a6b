"""The two trained GRAPE models and their storage in the index (INDEX_DIR/grape/).

* scorer — s_rank(T_X, P') ∈ [0, 1]: is the candidate path on a path that satisfies the chain? (the paper's
  cross-encoder reranker; binary logistic objective as in A.2)
* judge — h_θ(T_X, P') ∈ {S, C, D}: Stop (the path already satisfies T_X), Continue (a prefix of one that
  does), Drop (irrelevant) — the paper's completeness classifier.

Both are one-hidden-layer MLPs in numpy over `features.FEATURE_NAMES` (standardised with the training set's
mean and spread), trained full-batch with Adam on a class-balanced cross-entropy. Numpy keeps inference free of
a torch import and makes a batched call over a beam level cost microseconds. Weights are saved as one `.npz`
plus a JSON manifest; nothing is ever downloaded.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from skbqa.common.errors import IndexStoreError
from skbqa.strategies.grape.features import FEATURE_NAMES, FEATURES_VERSION

STOP, CONTINUE, DROP = 0, 1, 2
LABELS = ("S", "C", "D")
GRAPE_DIR = "grape"
WEIGHTS = "models.npz"
MANIFEST = "manifest.json"


@dataclass
class Mlp:
    mean: np.ndarray
    scale: np.ndarray
    w1: np.ndarray
    b1: np.ndarray
    w2: np.ndarray
    b2: np.ndarray

    @classmethod
    def fit(
        cls,
        x: np.ndarray,
        y: np.ndarray,
        classes: int,
        *,
        hidden: int = 32,
        epochs: int = 400,
        lr: float = 0.01,
        l2: float = 1e-4,
        seed: int = 0,
    ) -> Mlp:
        rng = np.random.default_rng(seed)
        mean = x.mean(axis=0)
        scale = x.std(axis=0) + 1e-6
        z = (x - mean) / scale
        params = [
            rng.normal(0, np.sqrt(2 / x.shape[1]), (x.shape[1], hidden)),
            np.zeros(hidden),
            rng.normal(0, np.sqrt(1 / hidden), (hidden, classes)),
            np.zeros(classes),
        ]
        # Balanced class weights: Stop and Continue are rare next to Drop, and they are what the beam needs.
        counts = np.bincount(y, minlength=classes).astype(np.float64)
        weights = np.where(counts > 0, counts.sum() / (classes * np.maximum(counts, 1)), 0.0)[y]
        weights /= weights.sum()
        onehot = np.eye(classes)[y]
        moments = [(np.zeros_like(p), np.zeros_like(p)) for p in params]
        for t in range(1, epochs + 1):
            w1, b1, w2, b2 = params
            h = np.maximum(z @ w1 + b1, 0.0)
            p = _softmax(h @ w2 + b2)
            d_logits = (p - onehot) * weights[:, None]
            d_h = (d_logits @ w2.T) * (h > 0)
            grads = [z.T @ d_h + l2 * w1, d_h.sum(0), h.T @ d_logits + l2 * w2, d_logits.sum(0)]
            for i, (g, (m, v)) in enumerate(zip(grads, moments, strict=True)):
                m *= 0.9
                m += 0.1 * g
                v *= 0.999
                v += 0.001 * g * g
                params[i] = params[i] - lr * (m / (1 - 0.9**t)) / (np.sqrt(v / (1 - 0.999**t)) + 1e-8)
        return cls(mean, scale, *(np.asarray(p, np.float64) for p in params))

    def proba(self, x: np.ndarray) -> np.ndarray:
        z = (np.asarray(x, np.float64) - self.mean) / self.scale
        return _softmax(np.maximum(z @ self.w1 + self.b1, 0.0) @ self.w2 + self.b2)

    def arrays(self, prefix: str) -> dict[str, np.ndarray]:
        return {f"{prefix}.{k}": getattr(self, k) for k in ("mean", "scale", "w1", "b1", "w2", "b2")}

    @classmethod
    def from_arrays(cls, data: Any, prefix: str) -> Mlp:
        return cls(
            *(np.asarray(data[f"{prefix}.{k}"], np.float64) for k in ("mean", "scale", "w1", "b1", "w2", "b2"))
        )


def _softmax(logits: np.ndarray) -> np.ndarray:
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


@dataclass
class GrapeModels:
    scorer: Mlp  # 2 classes: p(class 1) is s_rank
    judge: Mlp  # 3 classes: STOP, CONTINUE, DROP
    manifest: dict[str, Any]

    def score(self, x: np.ndarray) -> np.ndarray:
        return self.scorer.proba(x)[:, 1]

    def decide(self, x: np.ndarray) -> np.ndarray:
        """The judge's label per row (STOP / CONTINUE / DROP)."""
        return self.judge.proba(x).argmax(axis=1)


def grape_dir(index_dir: Path) -> Path:
    return Path(index_dir) / GRAPE_DIR


def save_models(index_dir: Path, models: GrapeModels) -> Path:
    """Write weights and manifest under INDEX_DIR/grape/ (temp names, then rename: readers never see half)."""
    directory = grape_dir(index_dir)
    directory.mkdir(parents=True, exist_ok=True)
    manifest = {**models.manifest, "features": list(FEATURE_NAMES), "features_version": FEATURES_VERSION}
    tmp_weights = directory / f".{WEIGHTS}.tmp.npz"
    np.savez(tmp_weights, **models.scorer.arrays("scorer"), **models.judge.arrays("judge"))
    tmp_manifest = directory / f".{MANIFEST}.tmp"
    tmp_manifest.write_text(json.dumps(manifest, indent=2))
    tmp_weights.replace(directory / WEIGHTS)
    tmp_manifest.replace(directory / MANIFEST)
    return directory


def load_models(index_dir: Path) -> GrapeModels:
    directory = grape_dir(index_dir)
    hint = f"train them with: skbqa train-grape --index {index_dir}"
    if not (directory / WEIGHTS).is_file() or not (directory / MANIFEST).is_file():
        raise IndexStoreError(f"{index_dir} has no trained GRAPE models ({directory} is missing); {hint}")
    try:
        manifest = json.loads((directory / MANIFEST).read_text())
        with np.load(directory / WEIGHTS) as data:
            scorer, judge = Mlp.from_arrays(data, "scorer"), Mlp.from_arrays(data, "judge")
    except (OSError, KeyError, ValueError) as exc:
        raise IndexStoreError(f"{directory}: GRAPE models are damaged ({exc}); {hint}") from None
    if manifest.get("features_version") != FEATURES_VERSION or list(manifest.get("features", [])) != list(
        FEATURE_NAMES
    ):
        raise IndexStoreError(f"{directory}: GRAPE models were trained with other features; {hint}")
    return GrapeModels(scorer, judge, manifest)
