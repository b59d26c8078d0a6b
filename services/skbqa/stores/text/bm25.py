"""BM25 over node documents (bm25s: sparse, precomputed term scores), with type and key filters.

Tokens: lower-cased words of one or more characters (bm25s' default drops one-character tokens, which would
lose values like "chromosome 7"), English stop words removed.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

import numpy as np

from skbqa.stores.vectors.base import Hits

logger = logging.getLogger(__name__)

TOKEN_PATTERN = r"(?u)\b\w+\b"


def _bm25s():  # type: ignore[no-untyped-def]
    """Import bm25s, which sets its own logger to DEBUG at import time; keep it at WARNING like the rest."""
    import bm25s

    logging.getLogger("bm25s").setLevel(max(logging.WARNING, logging.getLogger().getEffectiveLevel()))
    return bm25s


_WORD = re.compile(TOKEN_PATTERN)


@lru_cache(maxsize=1)
def _stopwords() -> frozenset[str]:
    from bm25s.stopwords import STOPWORDS_EN

    return frozenset(STOPWORDS_EN)


def words(text: str) -> list[str]:
    """The same tokens `tokenize` yields for one text, without bm25s' per-call overhead (for explanations)."""
    stop = _stopwords()
    return [w for w in _WORD.findall(text.lower()) if w not in stop]


def tokenize(texts: Sequence[str], *, progress: bool = False) -> list[list[str]]:
    tokens = _bm25s().tokenize(
        list(texts), token_pattern=TOKEN_PATTERN, stopwords="en", return_ids=False, show_progress=progress
    )
    return [list(t) for t in tokens]


class Bm25Index:
    def __init__(self, retriever: object, node_types: np.ndarray) -> None:
        self._retriever = retriever
        self._types = np.asarray(node_types, np.int16)

    @classmethod
    def build(cls, documents: Sequence[str], node_types: np.ndarray, *, progress: bool = False) -> Bm25Index:
        retriever = _bm25s().BM25()
        retriever.index(tokenize(documents, progress=progress), show_progress=progress)
        return cls(retriever, node_types)

    def __len__(self) -> int:
        return int(self._types.shape[0])

    @property
    def node_types(self) -> np.ndarray:
        """Type code of every document (position order)."""
        return self._types

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every document (position order) for one query; zeros when no token is known."""
        tokens = [t for t in words(query) if t in self._retriever.vocab_dict]  # type: ignore[attr-defined]
        if not tokens:
            return np.zeros(len(self), np.float32)
        return np.asarray(self._retriever.get_scores(tokens), np.float32)  # type: ignore[attr-defined]

    def search(
        self,
        query: str,
        k: int,
        *,
        node_types: Sequence[int] | None = None,
        keys: np.ndarray | None = None,
    ) -> Hits:
        scores = self.scores(query)
        mask = np.ones(len(self), bool)
        if node_types is not None:
            mask &= np.isin(self._types, np.asarray(list(node_types), np.int16))
        if keys is not None:
            key_mask = np.zeros(len(self), bool)
            key_mask[np.asarray(keys, np.int64)] = True
            mask &= key_mask
        mask &= scores > 0  # a document that shares no token with the query is not a BM25 hit
        rows = np.flatnonzero(mask)
        if rows.size == 0 or k <= 0:
            return Hits(np.zeros(0, np.int64), np.zeros(0, np.float32))
        sub = scores[rows]
        kk = min(k, rows.size)
        top = np.argpartition(-sub, kk - 1)[:kk] if kk < rows.size else np.arange(rows.size)
        top = top[np.lexsort((rows[top], -sub[top]))]
        return Hits(rows[top].astype(np.int64), sub[top])

    def save(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self._retriever.save(str(directory / "bm25"))  # type: ignore[attr-defined]
        np.save(directory / "bm25_types.npy", self._types)

    @classmethod
    def load(cls, directory: Path) -> Bm25Index:
        retriever = _bm25s().BM25.load(str(directory / "bm25"))
        return cls(retriever, np.load(directory / "bm25_types.npy"))
