"""The target type from a head noun that is not a type name ("which *disorders* …", "what *traits* …").

Three signals, all from the loaded index: the noun is a word of exactly one type's description (a curator who
writes "a phenotypic abnormality, mode of inheritance …" names what users call it); how close the encoder puts the
noun to each type's name; and how much more often one type's nodes use the noun of themselves (`TypeWordUsage`).
The last two are combined as independent evidence (a product of the two distributions), so a type is taken when
they agree, or when one is sure and the other does not object. A generic noun ("entities", "things") names no type.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from skbqa.query.encoder import Encoder
from skbqa.skb.schema import Schema
from skbqa.stages.parse.chains import is_narrower_noun
from skbqa.stages.parse.question_text import FUNCTION_WORDS, QuestionText
from skbqa.stages.parse.type_descriptions import GENERIC_NOUNS, MIN_NOUN_CHARS, description_nouns
from skbqa.stages.parse.type_mentions import (
    QUESTION_WORDS,
    noun_forms,
    noun_lemma,
    unknown_word_lemma,
)
from skbqa.stages.parse.type_word_usage import TypeWordUsage

# The encoder's cosines to the type names become a distribution at this temperature: a lead of 0.1 in cosine is
# worth a factor of e² ≈ 7.
NAME_TEMPERATURE = 0.05
MIN_POSTERIOR = 0.6  # the combined evidence must put this much on one type
WH_WORDS = frozenset({"which", "what", "whose"})
COPULAS = frozenset({"is", "are", "was", "were"})  # "what *are the* tools …": the noun comes after the verb
OPENING_AUXILIARIES = COPULAS | {"do", "does", "did", "there", "have", "has"}
OPENING_WORDS = 4  # "Can you show …", "I'm looking for …": where a request word opens the question


@dataclass(frozen=True)
class HeadNoun:
    start: int
    end: int
    lemma: str


class TypeSynonyms:
    def __init__(self, schema: Schema, usage: Callable[[], TypeWordUsage] | None = None) -> None:
        """`usage`: the index's word usage per type, built on first need (None: the encoder and descriptions
        only)."""
        self._usage = usage
        self._names = [t.name for t in schema.node_types]
        self._name_texts = [t.name.replace("_", " ").replace("/", " or ") for t in schema.node_types]
        self._described = description_nouns(schema)
        self._vectors: np.ndarray | None = None
        self._lock = threading.Lock()

    def head_noun(self, text: QuestionText, name_spans: Sequence[tuple[int, int]]) -> HeadNoun | None:
        """The answer's noun after a question word: in the words up to the next function word or name, the last
        plural noun ("which OMIM-catalogued *disorders* …", "games section *packages* …"), else the first noun."""
        # A one-word name written in lower case that English reads as a noun ("which *traits* …" where some gene
        # has the alias TRAITS) is the question's noun, not a name.
        inside = {
            i
            for s, e in name_spans
            if not (e - s == 1 and text.tokens[s].text.islower() and noun_lemma(text.tokens[s].lower))
            for i in range(s, e)
        }
        words = text.words(0, len(text))
        # Where the answer's noun phrase may start, most telling first: after a wh-word ("For the source package
        # X, *which team* …"), after another question word ("list …", "looking for …"), at the question's start.
        # A question word further in is more often a verb of a clause ("disorders … that also *show* a specific
        # kind of …") than the request itself, so the question's start comes before it.
        wh = [i for i, w in enumerate(words) if w in WH_WORDS and text.claimed[i] is None]
        asks = [
            i for i, w in enumerate(words) if w in QUESTION_WORDS and w not in WH_WORDS and text.claimed[i] is None
        ]
        opening = [i for i in asks if i < OPENING_WORDS]
        for i in [*wh, *opening, -1, *(i for i in asks if i >= OPENING_WORDS)]:
            j = i + 1
            if i in wh and j < len(words) and words[j] in COPULAS:
                j += 1
            while i == -1 and j < len(words) and words[j] in OPENING_AUXILIARIES:  # "*Are there* any codebases …"
                j += 1
            while j < len(words) and words[j] in ("the", "a", "an", "all", "any", "some", "me", "of", "for"):
                j += 1
            end = j
            while (
                end < len(words)
                and text.claimed[end] is None
                and end not in inside
                and words[end] not in FUNCTION_WORDS
                and (end == j or not text.boundary_before(end))
            ):
                end += 1
            nouns = [
                (k, lemma)
                for k in range(j, end)
                if len(words[k]) >= MIN_NOUN_CHARS
                and (lemma := noun_lemma(words[k]) or unknown_word_lemma(words[k])) is not None
            ]
            plural = [(k, lemma) for k, lemma in nouns if lemma != words[k]]
            if plural and words[plural[-1][0]] in GENERIC_NOUNS:  # "which *ones* …", "the more specific *kinds*"
                continue
            nouns = [(k, lemma) for k, lemma in nouns if words[k] not in GENERIC_NOUNS]
            plural = [(k, lemma) for k, lemma in plural if words[k] not in GENERIC_NOUNS]
            # A compound's head is its last noun ("games section *packages*", "OMIM-catalogued *disorders*"); the
            # compound ends at the first word after a plural that is no noun ("*genes* encode components of …").
            run_end = (
                next((k for k in range(plural[0][0] + 1, end) if noun_lemma(words[k]) is None), end)
                if plural
                else end
            )
            plural = [(k, lemma) for k, lemma in plural if k < run_end]
            chosen = plural[-1] if plural else (nouns[0] if nouns else None)
            if (
                chosen is not None
                and is_narrower_noun(words[chosen[0]])
                and words[chosen[0] + 1 : chosen[0] + 2] == ["of"]
            ):
                return None  # "the direct *subtypes of* X": X's own type, which the hierarchy's reading gives
            if chosen is not None:
                return HeadNoun(chosen[0], chosen[0] + 1, chosen[1])
        return None

    def words_of_one_type(self) -> dict[str, str]:
        """The description nouns only one type's description uses, with that type."""
        return {word: next(iter(types)) for word, types in self._described.items() if len(types) == 1}

    def described_as(self, text: QuestionText, head: HeadNoun) -> set[str]:
        """The types whose descriptions use the head noun ("a source package, also called a *codebase*")."""
        if head.lemma in GENERIC_NOUNS:
            return set()
        return self._described.get(head.lemma) or self._described.get(
            text.span_text(head.start, head.end).lower(), set()
        )

    def type_of(self, text: QuestionText, head: HeadNoun, encoder: Encoder) -> str | None:
        if head.lemma in GENERIC_NOUNS:
            return None
        described = self.described_as(text, head)
        if len(described) == 1:
            return next(iter(described))
        # Named in several types' descriptions: one of those ("program": a package, or a tag's example value)
        allowed = np.array([name in described for name in self._names]) if described else None
        vector = encoder.encode([text.span_text(head.start, head.end)])[0]
        cosines = self._type_vectors(encoder) @ vector
        by_name = np.exp((cosines - cosines.max()) / NAME_TEMPERATURE)
        evidence = by_name / by_name.sum()
        usage = self._usage().shares(noun_forms(head.lemma)) if self._usage is not None else None
        if usage is not None:
            evidence = evidence * usage
        if allowed is not None:
            evidence = evidence * allowed
        if usage is not None or allowed is not None:
            if not evidence.any():
                return None
            evidence = evidence / evidence.sum()
        best = int(np.argmax(evidence))
        return self._names[best] if evidence[best] >= MIN_POSTERIOR else None

    def _type_vectors(self, encoder: Encoder) -> np.ndarray:
        with self._lock:
            if self._vectors is None:
                self._vectors = encoder.encode(self._name_texts)
            return self._vectors
