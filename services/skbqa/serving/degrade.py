"""Answer around a lost vector store or encoder server instead of failing: degraded answers, flagged as such.

The runtime wraps the encoder and the vector indexes (`guard`). When either is unreachable, the wrappers raise
`DegradedBackendError`; `run_stage` then re-runs the request as `bm25` (lexical only: no encoder, no vectors) and
records why in the answer's notes (`degraded`), which the API reports as `AskResponse.degraded`. A lost graph
store is different — grounding cannot be approximated — and stays an UNAVAILABLE error.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from skbqa.common.errors import BackendUnavailableError
from skbqa.query.encoder import Encoder
from skbqa.serving import codec
from skbqa.stores.index import IndexStores

FALLBACK_STRATEGY = "bm25"


class DegradedBackendError(BackendUnavailableError):
    """A backend the pipeline can answer without (the encoder server, the vector store) is unavailable."""


class GuardedEncoder:
    def __init__(self, inner: Encoder) -> None:
        self._inner = inner

    @property
    def name(self) -> str:
        return self._inner.name

    @property
    def dim(self) -> int:
        return self._inner.dim

    def encode(self, texts: Sequence[str], *, progress: str | None = None) -> np.ndarray:
        try:
            return self._inner.encode(texts, progress=progress)
        except BackendUnavailableError as exc:
            raise DegradedBackendError(f"encoder unavailable: {exc}") from exc


class GuardedVectors:
    """A vector index whose failures become `DegradedBackendError` (everything else passes through)."""

    def __init__(self, inner: Any, set_name: str) -> None:
        self._inner = inner
        self._set = set_name

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def __len__(self) -> int:
        return len(self._inner)

    def _guarded(self, call: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return call(*args, **kwargs)
        except BackendUnavailableError as exc:
            raise DegradedBackendError(f"vector store unavailable ({self._set} vectors): {exc}") from exc

    def search(self, *args: Any, **kwargs: Any) -> Any:
        return self._guarded(self._inner.search, *args, **kwargs)

    def vectors_for(self, *args: Any, **kwargs: Any) -> Any:
        return self._guarded(self._inner.vectors_for, *args, **kwargs)


def guard(stores: IndexStores, encoder: Encoder) -> tuple[IndexStores, Encoder]:
    vectors = {name: GuardedVectors(index, name) for name, index in stores.vectors.items()}
    return dataclasses.replace(stores, vectors=vectors), GuardedEncoder(encoder)


def degrade(message: Any, error: DegradedBackendError) -> Any:
    """The same request, to be answered by the lexical fallback, with the reason in its notes."""
    out = type(message)()
    out.CopyFrom(message)
    notes = dict(codec.from_json(message.notes_json))
    notes["degraded"] = {
        "reason": str(error).splitlines()[0],
        "requested_strategy": message.strategy,
        "answered_by": FALLBACK_STRATEGY,
    }
    out.notes_json = codec.to_json(notes)
    out.strategy = FALLBACK_STRATEGY
    out.parsed_set = out.symbols_set = out.scope_set = out.ranked_set = False
    out.ClearField("parsed")
    out.ClearField("scope")
    del out.symbol_sets[:]
    del out.candidates[:]
    return out
