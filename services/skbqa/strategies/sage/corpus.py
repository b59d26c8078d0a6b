"""Texts as flat arrays of word ids, so the graph build can count, compare and hash words with numpy.

Words are lower-cased `\\w+` runs: the same tokens the name lexicon keys on (`stores.lexicon.normalise`), so an
n-gram of a text and a lexicon key compare word for word. One regex call tokenises a whole corpus (texts joined
by a NUL, which `\\w` never matches, marks the boundaries); several corpora share one vocabulary so their ids
compare.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

_TOKEN = re.compile(r"\w+|\x00")
_BOUNDARY = "\x00"


class Vocabulary:
    """Word → id, shared by the corpora of one build."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}
        self.words: list[str] = []

    def __len__(self) -> int:
        return len(self.words)

    def id_of(self, word: str) -> int:
        found = self.ids.get(word)
        if found is None:
            found = self.ids[word] = len(self.words)
            self.words.append(word)
        return found


@dataclass
class Corpus:
    """Word ids of every document back to back; document d owns ids[indptr[d]:indptr[d + 1]]."""

    ids: np.ndarray  # int64 word ids
    indptr: np.ndarray  # int64, len(documents) + 1

    def __len__(self) -> int:
        return int(self.indptr.shape[0] - 1)

    def doc_of_tokens(self) -> np.ndarray:
        """The document of each token."""
        return np.repeat(np.arange(len(self), dtype=np.int64), np.diff(self.indptr))

    def doc_word_pairs(self, vocabulary_size: int) -> np.ndarray:
        """Sorted unique `doc * vocabulary_size + word` keys: which words each document contains."""
        return np.unique(self.doc_of_tokens() * vocabulary_size + self.ids)


def tokenize(texts: Sequence[str], vocabulary: Vocabulary) -> Corpus:
    tokens = _TOKEN.findall(_BOUNDARY.join(texts).lower())
    boundary = vocabulary.id_of(_BOUNDARY)
    ids = np.fromiter((vocabulary.id_of(t) for t in tokens), np.int64, len(tokens))
    is_boundary = ids == boundary
    # Document of each token = number of boundaries before it; boundaries themselves are dropped.
    docs = np.cumsum(is_boundary)[~is_boundary]
    counts = np.bincount(docs, minlength=len(texts))
    indptr = np.zeros(len(texts) + 1, np.int64)
    np.cumsum(counts, out=indptr[1:])
    return Corpus(ids[~is_boundary], indptr)
