"""The target type from a head noun that is not a type name ("which *disorders* …", "what *traits* …").

Three signals, all from the loaded index: the noun is a word of exactly one type's description (a curator who
writes "a phenotypic abnormality, mode of inheritance …" names what users call it); how close the encoder puts the
noun to each type's name; and how much more often one type's nodes use the noun of themselves (`TypeWordUsage`).
The last two are combined as independent evidence (a product of the two distributions), so a type is taken when
they agree, or when one is sure and the other does not object. A generic noun ("entities", "things") names no type.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from skbqa.query.encoder import Encoder
from skbqa.skb.schema import Schema
from skbqa.stages.english import word_classes
from skbqa.stages.parse.chain_words import PLACEHOLDERS, names_level, names_narrower
from skbqa.stages.parse.question_text import FUNCTION_WORDS, QuestionText, is_discourse_word
from skbqa.stages.parse.relations import stems
from skbqa.stages.parse.spelling import is_plain_verb
from skbqa.stages.parse.type_descriptions import (
    GENERIC_NOUNS,
    MIN_NOUN_CHARS,
    description_heads,
    description_nouns,
)
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
ROOT_MIN_CHARS = 6  # shorter words share their first letters by chance ("form", "formal")
COPULAS = frozenset({"is", "are", "was", "were"})  # "what *are the* tools …": the noun comes after the verb
OPENING_AUXILIARIES = COPULAS | {"do", "does", "did", "there", "have", "has"}
OPENING_WORDS = 4  # "Can you show …", "I'm looking for …": where a request word opens the question
# Words between a question word and its noun ("which *of those* sources", "list *all the* …").
HEAD_DETERMINERS = frozenset(
    {"the", "a", "an", "all", "any", "some", "me", "of", "for", "those", "these", "out", "among"}
)  # "*Out of the* packages depended on by X, which …"
# What may open the object of a verb right after a wh-word ("what makes *something* …", "what causes *the* …")
VERB_OBJECT_OPENERS = frozenset(
    {"something", "someone", "somebody", "anything", "anyone", "it", "them", "the", "a", "an"}
)
ELLIPTIC_WORDS = 5  # "…: *modes of inheritance*?", "…? *genes please*": a last part this short may be the request


@dataclass(frozen=True)
class HeadNoun:
    start: int
    end: int
    lemma: str
    # found right after a wh-word ("… : *which disorders*?") or heading a short last part ("…: *modes* of …?"),
    # wherever that stands
    asked: bool = False
    # a level of a hierarchy before "of" ("the direct *subtypes* of X"): X's kind, not a type of its own
    level: bool = False
    # the lemmas of the nouns before it in its compound ("*noun* senses"): they may tell apart the types whose
    # descriptions all use the head noun
    modifiers: tuple[str, ...] = ()


class TypeSynonyms:
    def __init__(self, schema: Schema, usage: Callable[[], TypeWordUsage] | None = None) -> None:
        """`usage`: the index's word usage per type, built on first need (None: the encoder and descriptions
        only)."""
        self._usage = usage
        self._names = [t.name for t in schema.node_types]
        self._name_texts = [t.name.replace("_", " ").replace("/", " or ") for t in schema.node_types]
        self._type_words = {w for text in self._name_texts for w in text.split()}
        self._described = description_nouns(schema)
        # Types whose nodes are words of another part of speech ("A verb sense of WordNet"): a head noun, a noun in
        # the question's grammar, is no name for them unless their descriptions use it ("actions": verbs); when
        # one of them is chosen for "which *places* …", the others are asked.
        self._not_nouns = {
            t.name
            for t in schema.node_types
            if re.search(r"\b(verbs?|adjectives?|adverbs?)\b", t.description.lower())
            and not re.search(r"\bnouns?\b", t.description.lower())
        }
        self._opening = description_heads(schema)
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
        wh = [
            i
            for i, w in enumerate(words)
            if w in WH_WORDS and text.claimed[i] is None and not _relative_pronoun(text, words, i)
        ]
        asks = [
            i for i, w in enumerate(words) if w in QUESTION_WORDS and w not in WH_WORDS and text.claimed[i] is None
        ]
        # "*Can you list* …", "*Are there any* …": a request word opens the question when nothing but such words
        # comes before it ("debtags that *any* package … is tagged with" opens with its noun)
        opening = [
            i
            for i in asks
            if i < OPENING_WORDS and all(w in FUNCTION_WORDS or is_discourse_word(w) for w in words[:i])
        ]
        # Without a wh-word, a short last part set off by a colon or a question mark may be the request itself:
        # "CLRN1-related diseases: *modes of inheritance*?", "anything localized to …? *genes* please".
        segments = [k for k in text.segment_starts() if "(" not in text.gap_before(k)]  # not an aside
        elliptic = (
            [segments[-1] - 1] if not wh and segments and len(words) - segments[-1] <= ELLIPTIC_WORDS else []
        )
        for i in [*wh, *opening, *elliptic, -1, *(i for i in asks if i >= OPENING_WORDS)]:
            j = i + 1
            if i in wh and j < len(words) and words[j] in COPULAS:
                j += 1
            elif i in wh and _verb_of_the_wh_word(words, j):
                continue  # "what *causes* the disease", "what *makes* something appear": the wh-word is the subject
            while i == -1 and j < len(words) and words[j] in OPENING_AUXILIARIES:  # "*Are there* any codebases …"
                j += 1
            j = _past_qualifying_names(words, j, inside)
            while j < len(words) and words[j] in HEAD_DETERMINERS:
                j += 1
            j = _past_qualifying_names(words, j, inside)
            if j < len(words) and words[j] in PLACEHOLDERS:
                return None  # "list *everything* X substitutes": the answer has no noun of its own
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
                and (words[k] in GENERIC_NOUNS or not is_discourse_word(words[k]))  # "which *ones*" stops here
                and (lemma := noun_lemma(words[k]) or unknown_word_lemma(words[k])) is not None
            ]
            plural = [(k, lemma) for k, lemma in nouns if lemma != words[k]]
            if plural and words[plural[-1][0]] in GENERIC_NOUNS:  # "which *ones* …", "the more specific *kinds*"
                continue
            nouns = [(k, lemma) for k, lemma in nouns if words[k] not in GENERIC_NOUNS]
            plural = [(k, lemma) for k, lemma in plural if words[k] not in GENERIC_NOUNS]
            lemma_at = dict(plural)
            plural_at = set(lemma_at)
            # A compound's head is its last noun ("games section *packages*", "OMIM-catalogued *disorders*"); the
            # compound ends at the first word after a plural that is no noun ("*genes* encode components of …"),
            # or that is a plain verb between a type word's plural and another plural ("*sections* hold packages";
            # "games section packages" is one compound).
            run_end = (
                next(
                    (
                        k
                        for k in range(plural[0][0] + 1, end)
                        if noun_lemma(words[k]) is None
                        or (
                            k - 1 in plural_at
                            and k + 1 in plural_at
                            and lemma_at.get(k - 1) in self._type_words
                            and is_plain_verb(words[k])
                        )
                    ),
                    end,
                )
                if plural
                else end
            )
            plural = [(k, lemma) for k, lemma in plural if k < run_end]
            chosen = plural[-1] if plural else (nouns[0] if nouns else None)
            if (
                chosen is not None
                and (names_narrower(words, chosen[0]) or names_level(words, chosen[0]))
                and words[chosen[0] + 1 : chosen[0] + 2] == ["of"]
            ):
                # "the direct *subtypes of* X": X's own type, which the hierarchy's reading gives
                return HeadNoun(chosen[0], chosen[0] + 1, chosen[1], asked=i in wh or i in elliptic, level=True)
            if chosen is not None:
                modifiers = tuple(
                    noun_lemma(w) or w for w in words[j : chosen[0]] if w not in FUNCTION_WORDS and w.isalpha()
                )
                return HeadNoun(
                    chosen[0], chosen[0] + 1, chosen[1], asked=i in wh or i in elliptic, modifiers=modifiers
                )
        return None

    def words_of_one_type(self) -> dict[str, str]:
        """The description nouns only one type's description uses, with that type."""
        return {word: next(iter(types)) for word, types in self._described.items() if len(types) == 1}

    def described_as(self, text: QuestionText, head: HeadNoun) -> set[str]:
        """The types whose descriptions use the head noun ("a source package, also called a *codebase*")."""
        if head.lemma in GENERIC_NOUNS:
            return set()
        described = self._described.get(head.lemma) or self._described.get(
            text.span_text(head.start, head.end).lower(), set()
        )
        # Several descriptions use it; one opens with it ("A *binary* package …" vs "… builds binary packages")
        opening = described & self._opening.get(head.lemma, set())
        if len(described) > 1 and len(opening) == 1:
            return opening
        if len(described) != 1 and head.modifiers:
            # Every description uses it, or several open with it ("A *noun sense* …", "A *verb sense* …"): the
            # one whose opening also has the compound's other nouns ("which *noun senses* …")
            compound = set(self._opening.get(head.lemma, set()))
            for modifier in head.modifiers:
                compound &= self._opening.get(modifier, set())
            if len(compound) == 1:
                return compound
            # "*describing* words" where one type is "also called a *description* or word": a modifier of the
            # same root as a noun only one of those types' descriptions uses
            rooted = {
                t
                for modifier in head.modifiers
                for noun, types in self._described.items()
                if noun != head.lemma and same_root(noun, modifier)
                for t in types
            } & (described or set(self._names))
            if len(rooted) == 1:
                return rooted
        return described

    def type_of(
        self,
        text: QuestionText,
        head: HeadNoun,
        encoder: Encoder,
        *,
        exclude: frozenset[str] | set[str] = frozenset(),
    ) -> str | None:
        """The type the head noun names, if the evidence puts enough on one; `exclude`: types the question's
        grammar rules out, whose share of the evidence goes to the others."""
        if head.lemma in GENERIC_NOUNS:
            return None
        described = self.described_as(text, head) - set(exclude)
        if len(described) == 1:
            return next(iter(described))
        # Named in several types' descriptions: one of those ("program": a package, or a tag's example value)
        allowed = np.array([name in described for name in self._names]) if described else None
        if exclude:
            kept = np.array([name not in exclude for name in self._names])
            allowed = kept if allowed is None else allowed & kept
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
        chosen = self._names[best] if evidence[best] >= MIN_POSTERIOR else None
        if chosen in self._not_nouns - described and len(self._not_nouns | set(exclude)) < len(self._names):
            return self.type_of(text, head, encoder, exclude=self._not_nouns | set(exclude))
        return chosen

    def _type_vectors(self, encoder: Encoder) -> np.ndarray:
        with self._lock:
            if self._vectors is None:
                self._vectors = encoder.encode(self._name_texts)
            return self._vectors


def _relative_pronoun(text: QuestionText, words: Sequence[str], index: int) -> bool:
    """Whether a wh-word right after a noun introduces a relative clause of that noun ("Genes *whose* function is
    …", "diseases *which* …", "… localised to X *and whose* product …") rather than asking the question ("For X,
    *which* team …", "In *which* diseases …", "Help me figure out *which* apps …")."""
    if index == 0 or text.boundary_before(index):
        return False
    before = words[index - 1]
    if words[index] == "whose" and before in ("and", "or"):
        return True
    return before not in FUNCTION_WORDS and not is_discourse_word(before) and noun_lemma(before) is not None


def _past_qualifying_names(words: Sequence[str], start: int, inside: set[int]) -> int:
    """Past names (and a possessive 's) that qualify the noun after them ("CNGA3 disease *phenotypes*", "which
    autosomal dominant *disorders*"); not past a name followed by a verb ("Pulmonary fibrosis *shows* up …")."""
    end = start
    while end < len(words) and (end in inside or (end > start and words[end] == "s")):
        end += 1
    if end == start or end >= len(words):
        return start
    from lemminflect import getAllLemmas

    readings = getAllLemmas(words[end])
    return end if "NOUN" in readings and "VERB" not in readings else start


def same_root(a: str, b: str) -> bool:
    """ "description" and "describing": one crude stem (`relations.stems`), both words long enough to carry one."""
    return min(len(a), len(b)) >= ROOT_MIN_CHARS and stems(a) == stems(b)


def _verb_of_the_wh_word(words: list[str], j: int) -> bool:
    """ "what *causes* the disease": a verb with the -s of its third person right after the wh-word, its object
    following, makes the wh-word the subject; a plural noun would be followed by its own verb ("what *drugs*
    treat …")."""
    if j + 1 >= len(words) or not words[j].endswith("s") or words[j + 1] not in VERB_OBJECT_OPENERS:
        return False
    return "VERB" in word_classes(words[j]) or "VERB" in word_classes(words[j][:-1])
