"""BM25 over node documents (precomputed term scores in a sparse term × document matrix), with type and key filters.

Scoring is bm25s' "lucene" variant (k1 = 1.5, b = 0.75, idf = ln(1 + (N − df + 0.5) / (df + 0.5))), and the index
is written in bm25s' on-disk layout (`data/indices/indptr.csc.index.npy`, `vocab.index.json`, `params.index.json`),
so indexes built by either read the same. The build is our own: bm25s tokenises the whole corpus into Python
lists of strings first (tens of GB at a few million documents); here documents arrive in chunks, each chunk
becomes (document, term, tf) arrays at once, and the matrix is assembled with array operations. At query time the
arrays are memory-mapped and a query reads only its terms' columns.

Tokens: lower-cased words of one or more characters (bm25s' default drops one-character tokens, which would
lose values like "chromosome 7"), English stop words removed.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable, Sequence
from functools import lru_cache
from pathlib import Path

import numpy as np

from skbqa.stores.vectors.base import Hits

logger = logging.getLogger(__name__)

TOKEN_PATTERN = r"(?u)\b\w+\b"
K1, B = 1.5, 0.75
BUILD_CHUNK = 50_000  # documents tokenised per step
_FILES = ("data", "indices", "indptr")

_WORD = re.compile(TOKEN_PATTERN)


@lru_cache(maxsize=1)
def _stopwords() -> frozenset[str]:
    from bm25s.stopwords import STOPWORDS_EN

    return frozenset(STOPWORDS_EN)


def words(text: str) -> list[str]:
    """The tokens of one text: lower-cased `\\w+` words minus English stop words (for explanations and queries)."""
    stop = _stopwords()
    return [w for w in _WORD.findall(text.lower()) if w not in stop]


def tokenize(texts: Sequence[str], *, progress: bool = False) -> list[list[str]]:
    """bm25s' tokeniser with this index's settings (kept as the reference `words` is tested against)."""
    import bm25s

    logging.getLogger("bm25s").setLevel(max(logging.WARNING, logging.getLogger().getEffectiveLevel()))
    tokens = bm25s.tokenize(
        list(texts), token_pattern=TOKEN_PATTERN, stopwords="en", return_ids=False, show_progress=progress
    )
    return [list(t) for t in tokens]


class Bm25Index:
    def __init__(
        self,
        vocab: dict[str, int],
        data: np.ndarray,
        indices: np.ndarray,
        indptr: np.ndarray,
        node_types: np.ndarray,
    ) -> None:
        self._vocab = vocab
        self._data = data  # float32 scores, column (term) by column
        self._indices = indices  # document of each score
        self._indptr = indptr  # term t's scores are data[indptr[t]:indptr[t + 1]]
        self._types = np.asarray(node_types, np.int16)
        self._type_masks: dict[tuple[int, ...], np.ndarray] = {}

    @classmethod
    def build(cls, documents: Sequence[str], node_types: np.ndarray, *, progress: bool = False) -> Bm25Index:
        chunks = (documents[i : i + BUILD_CHUNK] for i in range(0, len(documents), BUILD_CHUNK))
        return cls.build_chunks(chunks, node_types, progress=progress)

    @classmethod
    def build_chunks(
        cls, chunks: Iterable[Sequence[str]], node_types: np.ndarray, *, progress: bool = False
    ) -> Bm25Index:
        """Build from documents arriving in chunks (position order): memory stays proportional to the postings."""
        import scipy.sparse as sp

        vocab: dict[str, int] = {}
        docs_parts: list[np.ndarray] = []
        terms_parts: list[np.ndarray] = []
        tf_parts: list[np.ndarray] = []
        lengths_parts: list[np.ndarray] = []
        offset = 0
        for chunk in chunks:
            docs, terms, tfs, lengths = _count_terms(chunk, vocab, offset)
            docs_parts.append(docs)
            terms_parts.append(terms)
            tf_parts.append(tfs)
            lengths_parts.append(lengths)
            offset += len(chunk)
            if progress:
                logger.info("bm25: %d documents tokenised, %d terms", offset, len(vocab))
        n_docs, n_terms = offset, len(vocab)
        docs = np.concatenate(docs_parts) if docs_parts else np.zeros(0, np.int32)
        terms = np.concatenate(terms_parts) if terms_parts else np.zeros(0, np.int32)
        tfs = np.concatenate(tf_parts) if tf_parts else np.zeros(0, np.float32)
        lengths = np.concatenate(lengths_parts) if lengths_parts else np.zeros(0, np.float32)
        del docs_parts, terms_parts, tf_parts
        df = np.bincount(terms, minlength=n_terms).astype(np.float64)
        idf = np.log(1.0 + (n_docs - df + 0.5) / (df + 0.5)).astype(np.float32)
        avg = float(lengths.mean()) if lengths.size else 1.0
        norm = K1 * ((1 - B) + B * lengths / avg)
        scores = (idf[terms] * tfs / (norm[docs] + tfs)).astype(np.float32)
        del tfs
        # Postings arrive grouped by document; scipy's CSR → CSC conversion is a linear counting sort in C++.
        doc_ptr = np.zeros(n_docs + 1, np.int64)
        np.cumsum(np.bincount(docs, minlength=n_docs), out=doc_ptr[1:])
        del docs
        matrix = sp.csr_matrix((scores, terms, doc_ptr), shape=(n_docs, n_terms)).tocsc()
        return cls(
            vocab,
            matrix.data.astype(np.float32, copy=False),
            matrix.indices.astype(np.int32, copy=False),
            matrix.indptr.astype(np.int64, copy=False),
            node_types,
        )

    def __len__(self) -> int:
        return int(self._types.shape[0])

    @property
    def node_types(self) -> np.ndarray:
        """Type code of every document (position order)."""
        return self._types

    def type_mask(self, node_types: Sequence[int]) -> np.ndarray:
        """Boolean mask of the documents of `node_types`; cached (a query filters by the same few types again and
        again, and at millions of documents the mask costs more than the scoring)."""
        key = tuple(sorted({int(c) for c in node_types}))
        mask = self._type_masks.get(key)
        if mask is None:
            mask = np.isin(self._types, np.asarray(key, np.int16))
            if len(self._type_masks) < 64:
                self._type_masks[key] = mask
        return mask

    @property
    def vocabulary_size(self) -> int:
        return len(self._vocab)

    def _term_ids(self, query: str) -> list[int]:
        vocab = self._vocab
        return [vocab[t] for t in words(query) if t in vocab]  # repeated words count again, as in bm25s

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every document (position order) for one query; zeros when no token is known."""
        return self.query(query).dense()

    def query(self, query: str) -> QueryScores:
        """The query's scores, held sparsely when its terms' postings are few (see `QueryScores`)."""
        return QueryScores(self, self._term_ids(query))

    def scores_at(self, query: str, keys: np.ndarray) -> np.ndarray:
        """`scores(query)[keys]` without materialising a score for every document when the postings are few."""
        return self.query(query).at(keys)

    def _postings(self, terms: list[int]) -> tuple[np.ndarray, np.ndarray]:
        """(documents, scores) of the terms' columns, concatenated (a document repeats once per term)."""
        indptr, indices, data = self._indptr, self._indices, self._data
        spans = [(int(indptr[t]), int(indptr[t + 1])) for t in terms]
        docs = np.concatenate([indices[a:b] for a, b in spans]) if spans else np.zeros(0, np.int32)
        values = np.concatenate([data[a:b] for a, b in spans]) if spans else np.zeros(0, np.float32)
        return docs, values

    def posting_count(self, terms: list[int]) -> int:
        return int(sum(int(self._indptr[t + 1]) - int(self._indptr[t]) for t in terms))

    def search(
        self,
        query: str,
        k: int,
        *,
        node_types: Sequence[int] | None = None,
        keys: np.ndarray | None = None,
    ) -> Hits:
        scored = self.query(query)
        if scored.docs is not None and scored.values is not None:
            rows, sub = scored.docs, scored.values
        else:
            rows = np.arange(len(self), dtype=np.int64)
            sub = scored.dense()
        keep = sub > 0  # a document that shares no token with the query is not a BM25 hit
        if node_types is not None:
            keep &= np.isin(self._types[rows], np.asarray(list(node_types), np.int16))
        if keys is not None:
            keep &= np.isin(rows, np.asarray(keys, np.int64))
        rows, sub = rows[keep], sub[keep]
        if rows.size == 0 or k <= 0:
            return Hits(np.zeros(0, np.int64), np.zeros(0, np.float32))
        kk = min(k, rows.size)
        top = np.argpartition(-sub, kk - 1)[:kk] if kk < rows.size else np.arange(rows.size)
        top = top[np.lexsort((rows[top], -sub[top]))]
        return Hits(rows[top].astype(np.int64), sub[top])

    def save(self, directory: Path) -> None:
        target = directory / "bm25"
        target.mkdir(parents=True, exist_ok=True)
        for name, array in zip(_FILES, (self._data, self._indices, self._indptr), strict=True):
            np.save(target / f"{name}.csc.index.npy", array)
        (target / "vocab.index.json").write_text(json.dumps(self._vocab, ensure_ascii=False))
        params = {"k1": K1, "b": B, "delta": 0.5, "method": "lucene", "idf_method": "lucene", "dtype": "float32"}
        params |= {"int_dtype": "int32", "num_docs": len(self), "version": "0.3.16", "backend": "numpy"}
        (target / "params.index.json").write_text(json.dumps(params, indent=4))
        np.save(directory / "bm25_types.npy", self._types)

    @classmethod
    def load(cls, directory: Path) -> Bm25Index:
        source = directory / "bm25"
        params = json.loads((source / "params.index.json").read_text())
        if params.get("method", "lucene") != "lucene" or (params.get("k1"), params.get("b")) != (K1, B):
            raise ValueError(f"{source}: unsupported BM25 parameters {params}")
        # Memory-mapped: a query touches only its terms' columns, and processes opening one index share the pages.
        data, indices, indptr = (np.load(source / f"{name}.csc.index.npy", mmap_mode="r") for name in _FILES)
        vocab = json.loads((source / "vocab.index.json").read_text())
        return cls(vocab, data, indices, indptr, np.load(directory / "bm25_types.npy"))


class QueryScores:
    """One query's BM25 scores: sparse (the documents its terms occur in) when those postings are few — so
    a query over millions of documents costs its postings, not a pass over every document — else dense."""

    SPARSE_SHARE = 1 / 8  # postings below this share of the documents: stay sparse

    def __init__(self, index: Bm25Index, terms: list[int]) -> None:
        self._index = index
        self._dense: np.ndarray | None = None
        self.docs: np.ndarray | None = None  # sorted unique documents with a positive score (sparse form)
        self.values: np.ndarray | None = None
        n = len(index)
        if index.posting_count(terms) >= self.SPARSE_SHARE * n:
            out = np.zeros(n, np.float32)
            indptr, indices, data = index._indptr, index._indices, index._data
            for term in terms:
                start, end = int(indptr[term]), int(indptr[term + 1])
                out[indices[start:end]] += data[start:end]  # a column lists each document once
            self._dense = out
            return
        docs, values = index._postings(terms)
        if len(terms) <= 1:
            self.docs, self.values = docs.astype(np.int64), values.astype(np.float32)
            if docs.size > 1 and (np.diff(docs) <= 0).any():  # columns of old indexes may be unsorted
                order = np.argsort(self.docs, kind="stable")
                self.docs, self.values = self.docs[order], self.values[order]
            return
        unique, inverse = np.unique(docs, return_inverse=True)
        # Summed in float32, term by term as the dense form adds them, so both forms give identical scores.
        sums = np.zeros(unique.size, np.float32)
        start = 0
        for term in terms:
            length = int(index._indptr[term + 1]) - int(index._indptr[term])
            sums[inverse[start : start + length]] += values[start : start + length]  # unique within a term
            start += length
        self.docs, self.values = unique.astype(np.int64), sums

    def dense(self) -> np.ndarray:
        if self._dense is None:
            out = np.zeros(len(self._index), np.float32)
            assert self.docs is not None and self.values is not None
            out[self.docs] = self.values
            self._dense = out
        return self._dense

    def at(self, keys: np.ndarray) -> np.ndarray:
        """Scores of `keys` (any order, repeats allowed)."""
        keys = np.asarray(keys, np.int64)
        if self._dense is not None:
            return self._dense[keys]
        assert self.docs is not None and self.values is not None
        out = np.zeros(keys.size, np.float32)
        if self.docs.size:
            pos = np.minimum(np.searchsorted(self.docs, keys), self.docs.size - 1)
            hit = self.docs[pos] == keys
            out[hit] = self.values[pos[hit]]
        return out

    def top(self, k: int, node_types: Sequence[int] | None = None) -> np.ndarray:
        """Up to k documents with the highest positive scores (of `node_types`), in no particular order."""
        types = self._index.node_types
        if self._dense is not None:
            mask = self._dense > 0
            if node_types is not None:
                mask &= self._index.type_mask(node_types)
            docs = np.flatnonzero(mask)
            values = self._dense[docs]
        else:
            assert self.docs is not None and self.values is not None
            keep = self.values > 0
            if node_types is not None:
                keep &= np.isin(types[self.docs], np.asarray(list(node_types), np.int16))
            docs, values = self.docs[keep], self.values[keep]
        if docs.size <= k:
            return docs.astype(np.int64)
        return docs[np.argpartition(-values, k - 1)[:k]].astype(np.int64)


def _count_terms(
    documents: Sequence[str], vocab: dict[str, int], offset: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(document, term, tf) postings of one chunk, grouped by document, and each document's token count."""
    stop = _stopwords()
    findall = _WORD.findall
    ids: list[int] = []
    lengths = np.zeros(len(documents), np.float32)
    counts = np.zeros(len(documents), np.int64)
    for i, text in enumerate(documents):
        tokens = [vocab.setdefault(w, len(vocab)) for w in findall(text.lower()) if w not in stop]
        ids += tokens
        lengths[i] = counts[i] = len(tokens)
    terms = np.asarray(ids, np.int64)
    docs = np.repeat(np.arange(len(documents), dtype=np.int64), counts)
    keys, tf = np.unique(docs << 32 | terms, return_counts=True)
    return (
        (keys >> 32).astype(np.int32) + np.int32(offset),
        (keys & 0xFFFFFFFF).astype(np.int32),
        tf.astype(np.float32),
        lengths,
    )
