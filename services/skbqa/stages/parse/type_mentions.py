"""Node-type words in a question: the target type (step 1 without an LLM), type hints before constants, and the
types of unnamed intermediate nodes ("genes associated with *a disease* that …").

Forms come from the schema alone: the type name with `_`/`-` as spaces, each '/'-separated part on its own
("gene/protein" → "gene", "protein"), with every inflection of the last word (irregular plurals included, from
lemminflect's English tables), so "loci", "children" or "analyses" read as their types. A question names its target
with its head noun phrase: the mention right after a question word ("Which *genes* …", "List the *diseases* …") wins
over one that only types a constant ("the *gene* BRCA1"), one inside a constant's name ("Gaucher *disease*") or one
after a preposition ("… associated with a *disease* that …"), whatever the word order.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from skbqa.skb.schema import Schema
from skbqa.stages.parse.question_text import FUNCTION_WORDS, QUESTION_WORDS, QuestionText

ARTICLES = frozenset({"the", "a", "an", "some", "any", "all", "of", "those", "these", "me", "us"})
PREPOSITIONS = frozenset(
    {"of", "in", "on", "at", "to", "by", "with", "from", "into", "for", "via", "through", "about", "within"}
)
INDEFINITE = frozenset({"a", "an", "some", "another", "one"})
MODIFIERS_BEFORE_NOUN = 4  # names or words between a preposition and the type word it governs


def plural(word: str) -> str:
    if word.endswith(("s", "x", "z", "ch", "sh")):
        return word + "es"
    if word.endswith("y") and len(word) > 1 and word[-2] not in "aeiou":
        return word[:-1] + "ies"
    return word + "s"


# Plurals English forms from another word, which the inflection tables list as nouns of their own.
SUPPLETIVE_PLURALS = {"person": "people"}


@lru_cache(maxsize=4096)
def noun_forms(word: str) -> frozenset[str]:
    """Every inflection of an English noun: its regular plural and lemminflect's (irregular ones included)."""
    forms = {word, plural(word)}
    if word in SUPPLETIVE_PLURALS:
        forms.add(SUPPLETIVE_PLURALS[word])
    try:
        from lemminflect import getAllInflections

        for variants in getAllInflections(word, upos="NOUN").values():
            forms.update(v.lower() for v in variants)
    except ImportError:  # pragma: no cover - lemminflect is a core dependency; keep the regular forms without it
        pass
    return frozenset(forms)


@lru_cache(maxsize=8192)
def noun_lemma(word: str) -> str | None:
    """The word's lemma when English can read it as a noun (None for words that are never nouns)."""
    from lemminflect import getAllLemmas

    lemmas = getAllLemmas(word).get("NOUN")
    return lemmas[0].lower() if lemmas else None


@lru_cache(maxsize=8192)
def is_unknown_word(word: str) -> bool:
    """A plain lower-case word of four letters or more that English's dictionary does not know ("codebase")."""
    from lemminflect import getAllLemmas

    return word.isalpha() and word.islower() and len(word) >= 4 and not getAllLemmas(word)


@lru_cache(maxsize=8192)
def unknown_word_lemma(word: str) -> str | None:
    """The singular of a plural the dictionary does not know, read as a noun: jargon a user calls things by
    ("*apps*", "*codebases*", "*packagers*"). None for a word the dictionary knows (it said whether the word is a
    noun), for a singular (more often a name, a misspelling or a preposition: "among", "despite") and for anything
    that is not a plain lower-case word."""
    if not is_unknown_word(word):
        return None
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("sses", "ches", "shes", "xes", "zes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return None


def type_forms(type_name: str) -> list[tuple[str, ...]]:
    """Word sequences that mention a node type, longest first."""
    forms: set[tuple[str, ...]] = set()
    parts = [type_name, *type_name.split("/")] if "/" in type_name else [type_name]
    for part in parts:
        words = tuple(w for w in part.replace("_", " ").replace("-", " ").lower().split() if w)
        if not words:
            continue
        for last in noun_forms(words[-1]):
            forms.add((*words[:-1], last))
    return sorted(forms, key=len, reverse=True)


@dataclass(frozen=True)
class TypeMention:
    type_name: str
    start: int
    end: int
    # its words say what kind of node it is, not its type ("the *genus* that X belongs to"): evidence for the
    # edges that reach it
    says_kind: bool = False


def head_word_forms(schema: Schema) -> list[tuple[tuple[str, ...], str]]:
    """The last word of a multi-word type name on its own ("a *process* that …" for biological_process), for the
    types whose last word no other type shares; and the first words of `prefix_types`."""
    heads: dict[str, list[str]] = {}
    for node_type in schema.node_types:
        words = node_type.name.replace("_", " ").replace("-", " ").replace("/", " ").lower().split()
        heads.setdefault(words[-1] if words else "", []).append(node_type.name)
    found: list[tuple[tuple[str, ...], str]] = []
    for node_type in schema.node_types:
        words = node_type.name.replace("_", " ").replace("-", " ").lower().split()
        if len(words) > 1 and "/" not in node_type.name and len(heads.get(words[-1], [])) == 1:
            found += [((form,), node_type.name) for form in noun_forms(words[-1])]
    prefixed = prefix_types(schema)
    return found + [((form,), name) for name, first in prefixed.items() for form in noun_forms(first)]


def prefix_types(schema: Schema) -> dict[str, str]:
    """Types named by a word and a suffix several types share and none is named by alone ("adjective_concept",
    "verb_concept"), by their first word, when no other type's name has it: the first word tells the type
    ("*adjectives* similar to X")."""
    names = [n.name.replace("_", " ").replace("-", " ").lower().split() for n in schema.node_types]
    whole = {" ".join(words) for words in names}
    found: dict[str, str] = {}
    for node_type, words in zip(schema.node_types, names, strict=True):
        if len(words) != 2 or "/" in node_type.name or words[-1] in whole:
            continue
        if sum(words[-1] == other[-1] for other in names) > 1 and sum(words[0] in other for other in names) == 1:
            found[node_type.name] = words[0]
    return found


# Words that introduce an unnamed node: "maintain *a* source that …", "tags that *any* library …", "built from
# the *same* source as X"
INTRODUCERS = frozenset({"a", "an", "any", "some", "another", "one", "same"})


class TypeVocabulary:
    def __init__(self, schema: Schema, introduced_words: dict[str, str] | None = None) -> None:
        """`introduced_words`: other nouns that are a type's word when an article introduces them ("*a source*
        that X is built from", where the schema calls source packages sources), one type each."""
        whole = [(form, t.name) for t in schema.node_types for form in type_forms(t.name)]
        taken = {form for form, _ in whole}
        heads = [(form, name) for form, name in head_word_forms(schema) if form not in taken]
        self._forms: list[tuple[tuple[str, ...], str]] = sorted(
            whole + heads, key=lambda item: len(item[0]), reverse=True
        )
        self._form_set = {form for form, _ in self._forms}
        # "*noun senses*", "*adjective concepts*": a word of the type's own description after a one-word form of it
        # belongs to the mention (the type's noun), not to the question's other words
        prefixed = prefix_types(schema)
        self._own_words = {
            t.name: set(re.findall(r"[a-z]+", t.description.lower())) - FUNCTION_WORDS
            for t in schema.node_types
            if t.name in prefixed
        }
        self._introduced = {
            word: name for word, name in (introduced_words or {}).items() if (word,) not in self._form_set
        }

    def is_form(self, words: list[str]) -> bool:
        """Whether the words are exactly a type mention ("gene", "biological processes")."""
        return tuple(words) in self._form_set

    def occurs_in(self, words: list[str]) -> bool:
        """Whether a type mention occurs anywhere in the words."""
        return any(
            tuple(words[i : i + len(f)]) == f for f, _ in self._forms for i in range(len(words) - len(f) + 1)
        )

    def word_type(self, word: str) -> str | None:
        """The type one word names on its own: a one-word form of a type ("genes") or a description's noun of one
        type ("team")."""
        return next((name for form, name in self._forms if form == (word,)), None) or self._introduced.get(word)

    def introduces(self, word: str) -> bool:
        """Whether the word is one of the nouns only one type's description uses ("program", "codebase")."""
        return word in self._introduced

    def type_at(self, text: QuestionText, index: int) -> str | None:
        """The type the words at `index` name, by a type's form or a word its description gives only it ("the zsh
        *program*")."""
        words = [t.lower for t in text.tokens]
        for form, type_name in self._forms:
            if tuple(words[index : index + len(form)]) == form:
                return type_name
        return self._introduced.get(words[index]) if index < len(words) else None

    def mentions(self, text: QuestionText) -> list[TypeMention]:
        """Every non-overlapping type mention in free tokens, left to right, longest form first."""
        found: list[TypeMention] = []
        words = [t.lower for t in text.tokens]
        i = 0
        while i < len(words):
            hit = None
            if text.claimed[i] is None:
                for form, type_name in self._forms:
                    end = i + len(form)
                    if tuple(words[i:end]) == form and text.free(i, end):
                        hit = TypeMention(type_name, i, end)
                        break
                introduced = self._introduced.get(words[i]) if i > 0 and words[i - 1] in INTRODUCERS else None
                if hit is None and introduced is not None and text.free(i, i + 1):
                    hit = TypeMention(introduced, i, i + 1)
            if hit and hit.end - hit.start == 1 and self._owns_next(text, words, hit):
                hit = TypeMention(hit.type_name, hit.start, hit.end + 1)
            if hit:
                found.append(hit)
                i = hit.end
            else:
                i += 1
        return found

    def _owns_next(self, text: QuestionText, words: list[str], hit: TypeMention) -> bool:
        if hit.end >= len(words) or not text.free(hit.end, hit.end + 1) or (words[hit.end],) in self._form_set:
            return False
        return (noun_lemma(words[hit.end]) or words[hit.end]) in self._own_words.get(hit.type_name, set())


def choose_target(
    text: QuestionText, mentions: Sequence[TypeMention], name_spans: Sequence[tuple[int, int]]
) -> TypeMention | None:
    """The mention that heads the question's answer phrase; None when every mention is a hint or inside a name."""
    best: tuple[float, int] | None = None
    for order, mention in enumerate(mentions):
        if any(
            s <= mention.start and mention.end <= e and (s, e) != (mention.start, mention.end)
            for s, e in name_spans
        ):
            continue  # a word of a constant's name ("Gaucher disease"), not a type word
        if after_preposition(_words_before(text, mention.start, 3)) and any(
            start == mention.end for start, _ in name_spans
        ):
            continue  # "related to the *adjective* X": it types X, the preposition's object, not the answer
        score = target_score(text, mention, name_spans) - 0.1 * order
        if best is None or score > best[0]:
            best = (score, order)
    return mentions[best[1]] if best is not None else None


def heads_question(text: QuestionText, mention: TypeMention, name_spans: Sequence[tuple[int, int]]) -> bool:
    """Whether the mention is the question's head noun phrase (after a question word or first, and neither the
    object of a preposition nor a word typing a name), rather than a type word further on."""
    return target_score(text, mention, name_spans) >= 1.0


def target_score(text: QuestionText, mention: TypeMention, name_spans: Sequence[tuple[int, int]]) -> float:
    before = _words_before(text, mention.start, 3)
    score = 0.0
    if mention.start == 0 or any(w in QUESTION_WORDS for w in before):
        score += 1.0
    if after_preposition(before):
        score -= 1.5  # the object of a preposition: "associated with (a) disease …"
    if before and before[-1] in INDEFINITE and not any(w in QUESTION_WORDS for w in before):
        score -= 0.5  # "… that has a phenotype …": an unnamed node on the way, not the answer
    if any(start == mention.end for start, _ in name_spans):
        score -= 2.0  # "the gene BRCA1": the word types the name that follows
    return score


def after_preposition(before: Sequence[str]) -> bool:
    """Whether words ending so make what follows the object of a preposition ("of (the) genes")."""
    return bool(before) and (
        before[-1] in PREPOSITIONS or (len(before) > 1 and before[-1] in ARTICLES and before[-2] in PREPOSITIONS)
    )


def on_the_way(text: QuestionText, mention: TypeMention) -> bool:
    """ "… hypernyms *of a noun that* belongs to …": a type word introduced by an article after a preposition and
    qualified by a relative clause stands for an unnamed node between the answer and a name."""
    before = _words_before(text, mention.start, 2)
    following = text.tokens[mention.end].lower if mention.end < len(text) else ""
    return (
        len(before) == 2
        and before[0] in PREPOSITIONS
        and before[1] in INDEFINITE
        and following in ("that", "which", "who", "whose")
    )


def qualifies_another(
    text: QuestionText, mention: TypeMention, name_spans: Sequence[tuple[int, int]] = ()
) -> bool:
    """Whether the mention is the object of a preposition ("the products *of genes*", "the products *of* ACP1
    *genes*", a name before the type word belonging to its phrase): a node on the way to the answer rather than
    the answer."""
    # Back to where the mention's noun phrase starts, over the names and modifiers before the type word: "… of
    # lysophosphatidic | acid phosphatase | genes"
    start = mention.start
    ends = {span_end: span_start for span_start, span_end in name_spans}
    for _ in range(MODIFIERS_BEFORE_NOUN):
        if start in ends and ends[start] < start:
            start = ends[start]
        elif start > 0 and not text.boundary_before(start) and text.tokens[start - 1].lower not in FUNCTION_WORDS:
            start -= 1
        else:
            break
    return after_preposition(_words_before(text, start, 3))


def _words_before(text: QuestionText, index: int, count: int) -> list[str]:
    start = index
    while start > 0 and index - start < count and not text.boundary_before(start):
        start -= 1
    return text.words(start, index)
