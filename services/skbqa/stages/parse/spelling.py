"""One-edit typos in names ("chylomicorn assembly", "Alzheimer diseaes"): a question word that occurs in no node
name and is no English word is corrected to the name word one edit away (insertion, deletion, substitution or
transposition), when exactly one such word of the same first letter exists. The vocabulary is the loaded SKB's own name words; rapidfuzz does
the distance in C, over the few words of about the same length."""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Callable
from functools import lru_cache

from skbqa.stores.lexicon import NameLexicon

MIN_WORD_CHARS = 5  # shorter words are too often another real word one edit away


@lru_cache(maxsize=8192)
def is_english(word: str) -> bool:
    """Whether lemminflect's English tables know the word in any part of speech."""
    from lemminflect import getAllLemmas

    return bool(getAllLemmas(word))


class Speller:
    def __init__(self, lexicon: Callable[[], NameLexicon]) -> None:
        self._lexicon = lexicon
        self._lock = threading.Lock()
        self._vocabulary: set[str] | None = None
        self._buckets: dict[tuple[str, int], list[str]] = {}

    def _words(self) -> set[str]:
        with self._lock:
            if self._vocabulary is None:
                vocabulary = {w for w in self._lexicon().words() if w.isalpha()}
                buckets: dict[tuple[str, int], list[str]] = defaultdict(list)
                for word in vocabulary:
                    if len(word) >= MIN_WORD_CHARS - 1:
                        buckets[(word[0], len(word))].append(word)
                self._buckets = dict(buckets)
                self._vocabulary = vocabulary
            return self._vocabulary

    def warm(self) -> None:
        self._words()

    def correct(self, word: str) -> str | None:
        """The one name word `word` is a one-edit typo of; None when it is a known word or not exactly one fits."""
        lowered = word.lower()
        if len(lowered) < MIN_WORD_CHARS or not lowered.isalpha() or lowered in self._words():
            return None
        if is_english(lowered):
            return None  # "contain" is a word, not a typo of the name "contrin"
        from rapidfuzz import process
        from rapidfuzz.distance import DamerauLevenshtein

        found: list[str] = []
        for length in (len(lowered) - 1, len(lowered), len(lowered) + 1):
            bucket = self._buckets.get((lowered[0], length), [])
            matches = process.extract(lowered, bucket, scorer=DamerauLevenshtein.distance, score_cutoff=1, limit=2)
            found.extend(match[0] for match in matches)
        return found[0] if len(found) == 1 else None
