"""The `Encoder` port: texts → L2-normalised float32 vectors."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Encoder(Protocol):
    @property
    def name(self) -> str:
        """Identifies model *and* numerics (e.g. `all-MiniLM-L6-v2/onnx-int8/max128`); stored in index manifests."""
        ...

    @property
    def dim(self) -> int: ...

    def encode(self, texts: Sequence[str], *, progress: str | None = None) -> np.ndarray:
        """Return an (n, dim) float32 array of unit vectors; `progress` labels a progress bar when set."""
        ...
