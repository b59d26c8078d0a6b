"""A static encoder distilled from MiniLM: one vector per WordPiece token, a text is their weighted mean.

Why it exists: scale benchmarks need vectors for millions of texts, and MiniLM on 2 CPU cores encodes a few
hundred texts per second (6M texts ≈ 5 hours). Like model2vec, every token of MiniLM's WordPiece vocabulary
(30,522) is passed once through the real encoder (the int8 ONNX model, as the one-token text `[CLS] t [SEP]`,
mean-pooled), and a text's vector is the weighted mean of its tokens' vectors, L2-normalised. Weights are SIF
weights a / (a + p(t)) with token frequencies p from a sample of the corpus (frequent tokens — punctuation,
"the", "paper" — count little), so the encoder is fitted per corpus and saved with its vectors.

What it is and is not: it reads the same tokens MiniLM reads (same tokenizer, same 128-token cap), so words and
word pieces carry MiniLM's meaning and shared rare tokens (names) make texts similar — but word order and context
count for nothing. It is fast (tens of thousands of texts per second) and deterministic, and questions must be
embedded by the same encoder as the documents (the index records its name; `models.index_encoder` reloads it).
It stands in for MiniLM in scale runs; it is not a claim about MiniLM's accuracy at that scale.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from skbqa.common.errors import ModelError
from skbqa.models.local_encoder import DEFAULT_MAX_LENGTH, DIM, MODEL_NAME, model_cache_dir, packaged_model_dir

SIF_A = 1e-3
ENCODE_CHUNK = 8192  # texts tokenised and multiplied per step
PIECE_CACHE = 2_000_000  # distinct words whose WordPiece ids are kept between calls
_CLS, _SEP = 101, 102
# BERT's basic tokenizer on printable ASCII: runs of letters/digits, and every other non-space character alone
# (it treats all ASCII symbols, "_" included, as punctuation). Texts with anything else take the full tokenizer.
_BERT_WORDS = re.compile(r"[a-z0-9]+|[^a-z0-9\s]")
_NOT_PLAIN = re.compile(r"[^\t\n\r\x20-\x7e]")
_FILE_KEYS = ("table", "weights", "empty")


def _tokenizer(max_length: int) -> Any:
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(packaged_model_dir() / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=max_length - 2)  # MiniLM's cap counts [CLS] and [SEP]
    return tokenizer


def token_table(*, quantized: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """(vocabulary × 384 unit vectors, vector of the empty text): every WordPiece token through the real encoder.

    Computed once per machine (≈ 30,000 three-token sequences) and cached beside the exported ONNX model."""
    variant = "int8" if quantized else "fp32"
    cache = model_cache_dir() / MODEL_NAME / f"static-{variant}.npz"
    if cache.is_file():
        with np.load(cache) as data:
            return data["table"], data["empty"]
    import onnxruntime as ort

    from skbqa.models.local_encoder import _mean_pool_normalise, onnx_model_path

    session = ort.InferenceSession(str(onnx_model_path(quantized)), providers=["CPUExecutionProvider"])
    size = _tokenizer(DEFAULT_MAX_LENGTH).get_vocab_size()

    def run(ids: np.ndarray) -> np.ndarray:
        mask = np.ones_like(ids)
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        return _mean_pool_normalise(session.run(None, feeds)[0], mask)

    parts = []
    for start in range(0, size, 1024):
        tokens = np.arange(start, min(start + 1024, size), dtype=np.int64)
        column = np.full_like(tokens, _CLS)
        parts.append(run(np.stack([column, tokens, np.full_like(tokens, _SEP)], axis=1)))
    table = np.concatenate(parts).astype(np.float32)
    empty = run(np.array([[_CLS, _SEP]], np.int64))[0]
    cache.parent.mkdir(parents=True, exist_ok=True)
    tmp = cache.with_suffix(".tmp.npz")
    np.savez(tmp, table=table, empty=empty)
    tmp.replace(cache)
    return table, empty


class StaticEncoder:
    """See the module docstring. Implements the `Encoder` port."""

    def __init__(
        self, table: np.ndarray, weights: np.ndarray, empty: np.ndarray, *, max_length: int = DEFAULT_MAX_LENGTH
    ) -> None:
        if table.ndim != 2 or weights.shape != (table.shape[0],) or empty.shape != (table.shape[1],):
            raise ModelError("static encoder: table, weights and empty vector do not fit together")
        self._table = np.ascontiguousarray(table, np.float32)
        self._weights = np.asarray(weights, np.float32)
        self._empty = np.asarray(empty, np.float32)
        self._max_length = max_length
        self._tok: Any = None
        self._pieces: dict[str, list[int]] = {}  # word → WordPiece ids (see token_ids)
        digest = hashlib.sha256()
        for array in (self._table, self._weights, self._empty):
            digest.update(array.tobytes())
        self._name = f"static-wordpiece/{MODEL_NAME}-onnx-int8/max{max_length}/{digest.hexdigest()[:12]}"

    @classmethod
    def fit(cls, sample: Iterable[str], *, max_length: int = DEFAULT_MAX_LENGTH) -> StaticEncoder:
        """SIF weights from token frequencies in `sample` (a few thousand texts of the corpus suffice)."""
        table, empty = token_table()
        tokenizer = _tokenizer(max_length)
        counts = np.zeros(table.shape[0], np.float64)
        texts = list(sample)
        for start in range(0, len(texts), ENCODE_CHUNK):
            encodings = tokenizer.encode_batch(texts[start : start + ENCODE_CHUNK], add_special_tokens=False)
            ids = np.fromiter(itertools.chain.from_iterable(e.ids for e in encodings), np.int64)
            counts += np.bincount(ids, minlength=counts.size)
        p = counts / max(counts.sum(), 1.0)
        return cls(table, (SIF_A / (SIF_A + p)).astype(np.float32), empty, max_length=max_length)

    @property
    def name(self) -> str:
        return self._name

    @property
    def dim(self) -> int:
        return int(self._table.shape[1])

    def encode(self, texts: Sequence[str], *, progress: str | None = None) -> np.ndarray:
        import scipy.sparse as sp

        out = np.zeros((len(texts), self.dim), np.float32)
        for start in range(0, len(texts), ENCODE_CHUNK):
            chunk = list(texts[start : start + ENCODE_CHUNK])
            lengths, ids = self.token_ids(chunk)
            indptr = np.zeros(len(chunk) + 1, np.int64)
            np.cumsum(lengths, out=indptr[1:])
            bag = sp.csr_matrix((self._weights[ids], ids, indptr), shape=(len(chunk), self._table.shape[0]))
            block = np.asarray(bag @ self._table, np.float32)
            norms = np.linalg.norm(block, axis=1)
            empty = norms < 1e-12
            block[empty] = self._empty
            norms[empty] = 1.0
            out[start : start + len(chunk)] = block / norms[:, None]
        return out

    def token_ids(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """(tokens per text, all token ids): exactly what MiniLM's tokenizer yields without [CLS]/[SEP], truncated
        like it. Printable-ASCII texts (the common case) are split into BERT's words here and each distinct word is
        tokenised once (a per-encoder cache): 5–10× faster than tokenising every text in full. Other texts go
        through the tokenizer whole, so accents, CJK and control characters follow its rules exactly."""
        if self._tok is None:
            self._tok = _tokenizer(self._max_length)
        cache = self._pieces
        if len(cache) > PIECE_CACHE:
            cache.clear()  # bounded: names of millions of nodes would otherwise all stay
        cap = self._max_length - 2
        split = _BERT_WORDS.findall
        words_of: list[list[str] | None] = []
        unknown: set[str] = set()
        for text in texts:
            if _NOT_PLAIN.search(text):
                words_of.append(None)
                continue
            words = split(text.lower())
            words_of.append(words)
            unknown.update(w for w in words if w not in cache)
        if unknown:
            new = sorted(unknown)
            for word, encoding in zip(new, self._tok.encode_batch(new, add_special_tokens=False), strict=True):
                cache[word] = encoding.ids
        whole = [t for t, w in zip(texts, words_of, strict=True) if w is None]
        whole_ids = iter(e.ids for e in self._tok.encode_batch(whole, add_special_tokens=False)) if whole else None
        sequences: list[list[int]] = []
        for split_words in words_of:
            if split_words is None:
                assert whole_ids is not None
                sequences.append(next(whole_ids))
                continue
            seq = list(itertools.chain.from_iterable(cache[w] for w in split_words))
            sequences.append(seq[:cap] if len(seq) > cap else seq)
        lengths = np.fromiter(map(len, sequences), np.int64, len(sequences))
        ids = np.fromiter(itertools.chain.from_iterable(sequences), np.int64, int(lengths.sum()))
        return lengths, ids

    def save(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        meta = json.dumps({"name": self.name, "max_length": self._max_length, "dim": DIM})
        with path.open("wb") as handle:
            np.savez(handle, table=self._table, weights=self._weights, empty=self._empty, meta=np.array(meta))

    @classmethod
    def load(cls, path: Path) -> StaticEncoder:
        try:
            with np.load(path) as data:
                meta = json.loads(str(data["meta"]))
                encoder = cls(*(data[k] for k in _FILE_KEYS), max_length=int(meta["max_length"]))
        except (OSError, KeyError, ValueError) as exc:
            raise ModelError(f"{path}: not a static encoder file ({exc})") from None
        if encoder.name != meta["name"]:
            raise ModelError(f"{path}: static encoder content does not match its recorded name {meta['name']!r}")
        return encoder
