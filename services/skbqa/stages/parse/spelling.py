"""Misspelt name words ("chylomicorn assembly", "Alzheimer diseaes", "tumour protein p63"): the name words a
question word may have been meant as, which the constant pass tries against the words beside it (a reading counts
only where it completes a name).

An unknown word is read as its spelling variant (British and American spellings, "ph" written "f":
`spelling_key`), even when English knows it ("tumour" when the names say "tumor"); a word English does not know
either, as the name words of the same first letter one edit away (insertion, deletion, substitution or
transposition) or, for a long word with none one edit away, two edits away. A known word may be respelt too
(`respellings`), which the constant pass allows only into a longer name. The vocabulary is the loaded SKB's own
name words; rapidfuzz does the distance in C, over the few words of about the same length."""

from __future__ import annotations

import itertools
import re
import threading
from collections import defaultdict
from collections.abc import Callable, Iterator
from functools import lru_cache

from skbqa.stages.english import is_english, word_classes
from skbqa.stages.parse.question_text import QuestionText
from skbqa.stores.lexicon import NameLexicon

MIN_WORD_CHARS = 5  # shorter words are too often another real word one edit away
TWO_EDIT_MIN_CHARS = 9  # two edits apart: only long words, where two real words that close are rare
RESPELL_MIN_CHARS = 6  # a known word read as another one edit away: only longer ones
# English's tables know common misspellings as words ("developement"); one this long, one edit from a name word,
# is read as that word inside a name of three words or more, where a real word that close would not fit
LONG_RESPELL_MIN_CHARS = 10
MAX_READINGS = 4
ENGLISH_RESPELL_MIN_CHARS = 6  # an English word misspelt: shorter ones are too often another word or a name
_ALPHABET = "abcdefghijklmnopqrstuvwxyz"  # of a misspelt word, tried against the words beside it: the one that completes a name wins

# One spelling for the variants of a word, applied in order to its lower case: either variant then finds the other.
_VARIANTS = tuple(
    (re.compile(pattern), replacement)
    for pattern, replacement in (
        (r"ph", "f"),  # sulphate, and "f" written for "ph" (stafyloma)
        (r"leuc", "leuk"),  # leucocyte
        (r"ae(?=[a-z])", "e"),  # anaemia, haemoglobin, aetiology, gynaecology
        (r"oe(?=[a-z])", "e"),  # oedema, oesophagus, diarrhoea, foetal, coeliac
        (r"(?<=[a-z]{3})our(?=(s|ed|ing|ful|less|ite|ites|ism|al|ally)?$)", "or"),  # tumour, behavioural
        (r"(?<=[a-z]{3})is(?=(e|es|ed|ing|ation|ations|er|ers)$)", "iz"),  # organise, localisation
        (r"(?<=[a-z]{3})ys(?=(e|es|ed|ing)$)", "yz"),  # analyse, hydrolysed
        (r"(?<=[bt])re(?=s?$)", "er"),  # centre, fibre
        (r"(?<=[a-z]{3})ogue(?=s?$)", "og"),  # analogue, catalogue
        (r"(?<=[a-z]{2}[aeiou])ll(?=(ed|ing|er|ers)$)", "l"),  # labelled, signalling
        (r"(?<=g)eing$", "ing"),  # ageing
        (r"(?<=[a-z]{3})mme(?=s?$)", "m"),  # programme
        (r"(?<=[fc])ence(?=s?$)", "ense"),  # defence, licence
        (r"grey", "gray"),
    )
)


def spelling_key(word: str) -> str:
    """The one spelling `word` (lower case) shares with its British or American variant."""
    for pattern, replacement in _VARIANTS:
        word = pattern.sub(replacement, word)
    return word


@lru_cache(maxsize=8192)
def is_plain_verb(word: str) -> bool:
    """Whether English reads the word as a verb's plain present form ("hold", "provide"), as after a plural
    subject."""
    from lemminflect import getAllLemmas

    return word in getAllLemmas(word).get("VERB", ())


def only_a_verb(word: str) -> bool:
    """Whether English reads the word as a verb and never as a noun or adjective ("provide", "associated")."""
    classes = word_classes(word)
    return "VERB" in classes and not {"NOUN", "ADJ"} & classes


@lru_cache(maxsize=4096)
def reads_as_participle(word: str) -> bool:
    """Whether the word is a verb's past participle ("listed", "given", "built", "kept"), whatever else English
    reads it as."""
    if "VERB" not in word_classes(word):
        return False
    if word.endswith(("ed", "en")):
        return True
    from lemminflect import getAllInflections, getAllLemmas

    # an irregular form of its own ("built", "kept"); one that is also the plain verb ("set", "run") says too little
    return any(
        word != lemma and word in getAllInflections(lemma, upos="VERB").get("VBN", ())
        for lemma in getAllLemmas(word)["VERB"]
    )


@lru_cache(maxsize=4096)
def english_respelling(word: str) -> str | None:
    """A lower-case word English does not know, read as the one English word of the same first letter one edit
    away ("illnesess": illnesses, "assosiated": associated, "pakage": package); None when there is none or more
    than one."""
    if len(word) < ENGLISH_RESPELL_MIN_CHARS or not word.isalpha() or not word.islower() or is_english(word):
        return None
    splits = [(word[:i], word[i:]) for i in range(len(word) + 1)]
    edits = {a + b[1:] for a, b in splits if b}
    edits |= {a + b[1] + b[0] + b[2:] for a, b in splits if len(b) > 1}
    edits |= {a + c + b[1:] for a, b in splits if b for c in _ALPHABET}
    edits |= {a + c + b for a, b in splits for c in _ALPHABET}
    found = [e for e in edits & _english_words() if e != word and e[:1] == word[:1]]
    return found[0] if len(found) == 1 else None


@lru_cache(maxsize=1)
def _english_words() -> frozenset[str]:
    """Every word form lemminflect's English tables know (about 70,000), to test hundreds of edits at once."""
    from lemminflect import Lemmatizer

    return frozenset(word for word in Lemmatizer()._getLemmaDict() if word.isalpha())


class Speller:
    def __init__(self, lexicon: Callable[[], NameLexicon]) -> None:
        self._lexicon = lexicon
        self._lock = threading.Lock()
        self._vocabulary: set[str] | None = None
        self._buckets: dict[tuple[str, int], list[str]] = {}
        self._by_key: dict[str, list[str]] = {}

    def _words(self) -> set[str]:
        with self._lock:
            if self._vocabulary is None:
                vocabulary = {w for w in self._lexicon().words() if w.isalpha()}
                buckets: dict[tuple[str, int], list[str]] = defaultdict(list)
                by_key: dict[str, list[str]] = defaultdict(list)
                for word in vocabulary:
                    if len(word) >= MIN_WORD_CHARS - 2:
                        buckets[(word[0], len(word))].append(word)
                        by_key[spelling_key(word)].append(word)
                self._buckets = dict(buckets)
                self._by_key = dict(by_key)
                self._vocabulary = vocabulary
            return self._vocabulary

    def warm(self) -> None:
        self._words()
        _english_words()

    def knows(self, word: str) -> bool:
        """Whether the word (lower case) is a word of some node's name."""
        return word in self._words()

    def readings(self, word: str) -> list[str]:
        """The name words an unknown word may be a misspelling of, best first: its one variant spelling (even of
        an English word: "tumour" when the names say "tumor"); else, for a word English does not know either, those
        one edit away or, for a long word with none, two edits away. Empty for a name word as written."""
        lowered = word.lower()
        if len(lowered) < MIN_WORD_CHARS or not lowered.isalpha() or lowered in self._words():
            return []
        variants = self._by_key.get(spelling_key(lowered), [])
        if len(variants) == 1:
            return list(variants)
        if is_english(lowered):
            return []  # "contain" is a word, not a typo of the name "contrin"
        found = self._within(lowered, 1)
        if not found and len(lowered) >= TWO_EDIT_MIN_CHARS:
            found = self._within(lowered, 2)
        # "lochs": a plural English does not know is its singular (not "locus"); otherwise a word derived from a
        # name word ("derivationally" from "derivational") is no typo of it
        singular = [w for w in (lowered[:-1], lowered[:-2]) if lowered.endswith("s") and w in found][:1]
        return singular + [w for w in found if not _derived_from(lowered, w) and w not in singular]

    def respellings(self, word: str, *, edits: bool = True) -> list[str]:
        """Other name words a known word may have been meant as: its variant spelling ("tumour" beside "tumor"),
        and with `edits`, for a word English does not know ("Rodriguez" written for "Rodrigues"), those one edit
        away."""
        lowered = word.lower()
        if len(lowered) < MIN_WORD_CHARS or not lowered.isalpha():
            return []
        self._words()
        found = [w for w in self._by_key.get(spelling_key(lowered), []) if w != lowered]
        if (
            edits
            and len(lowered) >= RESPELL_MIN_CHARS
            and (not is_english(lowered) or len(lowered) >= LONG_RESPELL_MIN_CHARS)
        ):
            found += [w for w in self._within(lowered, 1) if w != lowered and w not in found]
        return found[:MAX_READINGS]

    def _within(self, word: str, edits: int) -> list[str]:
        """Name words of the same first letter at most `edits` edits from `word`, nearest first (at most
        MAX_READINGS)."""
        from rapidfuzz import process
        from rapidfuzz.distance import DamerauLevenshtein

        found: list[tuple[int, str]] = []
        for length in range(len(word) - edits, len(word) + edits + 1):
            bucket = self._buckets.get((word[0], length), [])
            matches = process.extract(
                word, bucket, scorer=DamerauLevenshtein.distance, score_cutoff=edits, limit=MAX_READINGS
            )
            found.extend((int(distance), match) for match, distance, _ in matches)
        return [match for _, match in sorted(found)[:MAX_READINGS]]


# English suffixes that make one word of another: a word that is a name word plus one of them is that word derived
DERIVING_SUFFIXES = ("ly", "s", "es", "ed", "ing", "er", "al", "ness", "y")


def _derived_from(word: str, name_word: str) -> bool:
    return any(word == name_word + suffix or name_word == word + suffix for suffix in DERIVING_SUFFIXES)


MAX_SURFACES = 32  # readings of the words of one span tried together


def span_readings(
    text: QuestionText, span: tuple[int, int], index: int, readings: dict[int, list[str]]
) -> Iterator[str]:
    """The span read with `index` as one of its readings and every other word as written or as one of its own."""
    options = [readings[k] if k == index else [text.tokens[k].lower, *readings.get(k, [])] for k in range(*span)]
    for words in itertools.islice(itertools.product(*options), MAX_SURFACES):
        yield " ".join(words)
