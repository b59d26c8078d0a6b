"""Constants in a question (encoder parser, step 2): node names and aliases matched exactly — longest word sequence
first, regardless of case and punctuation — then leftover phrases linked to the closest node name by the encoder.
A name that only labels the relation of the next name ("with the *mode of inheritance* Autosomal dominant") is a
relation word, not a constant."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from skbqa.query.context import QueryContext
from skbqa.stages.english import is_english, word_classes
from skbqa.stages.parse.chain_words import PLACEHOLDERS, RELATING_PREPOSITIONS, after_kind_noun
from skbqa.stages.parse.gerunds import gerund_name, with_verb_nodes
from skbqa.stages.parse.modifier_words import compared, only_a_modifier
from skbqa.stages.parse.name_slots import a_participle, in_a_name_slot, object_of_a_preposition
from skbqa.stages.parse.question_text import FUNCTION_WORDS, QuestionText, is_discourse_word
from skbqa.stages.parse.relation_labels import RelationLabels
from skbqa.stages.parse.relation_verbs import (
    DO_AUXILIARIES,
    relates,
    stated_stems,
    states_a_relation,
    verb_after_do_subject,
    verb_after_type_word,
    verb_of_relative_clause,
)
from skbqa.stages.parse.relations import stems
from skbqa.stages.parse.spelling import Speller, span_readings
from skbqa.stages.parse.type_descriptions import called_nouns
from skbqa.stages.parse.type_mentions import QUESTION_WORDS, TypeVocabulary, noun_lemma
from skbqa.stages.parse.type_synonyms import COPULAS
from skbqa.stages.plural_names import name_positions
from skbqa.stores.index import IndexStores
from skbqa.stores.lexicon import NameLexicon

FUZZY_MIN_COSINE = 0.86  # a leftover phrase links to a node name only when the name vectors are this close
MIN_SINGLE_WORD_CHARS = 2
# Two-letter English words that are no names ("tk", "jq" and "C3" are names; "we", "up" are not).
SHORT_ENGLISH = frozenset(
    {"am", "go", "he", "hi", "id", "if", "im", "ma", "mr", "ms", "my", "oh", "ok", "so", "up", "us", "vs", "we",
     "ie", "eg", "et", "al", "re", "pm", "st", "nd", "rd", "th"}
)  # fmt: skip
INDEFINITE_ARTICLES = frozenset({"a", "an"})  # before a single word: a common noun ("an archive"), no name
MAIN_VERBS = COPULAS | {"has", "have", "had"}  # what may follow a noun phrase's end
MIN_FUZZY_WORDS = 2
LONG_RESPELL_NAME_WORDS = 3  # a long word English also knows is respelt only inside a name this long
MIN_SINGLE_CORRECTED_CHARS = 7  # a corrected one-word name must be long: short unknown words are mostly jargon


@dataclass
class Constant:
    start: int
    end: int
    surface: str
    positions: np.ndarray  # matching nodes (names first), all types
    exact: bool  # found in the lexicon as written (False: after a typo correction, or the embedding fallback)
    sense: tuple[str, ...] = ()  # words that say which of its nodes is meant (`sense_qualifiers`)


class ConstantSpotter:
    def __init__(
        self,
        stores: IndexStores,
        lexicon: Callable[[], NameLexicon],
        types: TypeVocabulary,
        *,
        fuzzy_min_cosine: float = FUZZY_MIN_COSINE,
    ) -> None:
        self._stores = stores
        self._lexicon = lexicon
        self._types = types
        self._fuzzy_min_cosine = fuzzy_min_cosine
        self._speller = Speller(lexicon)
        schema = stores.nodes.schema
        # A word of a multi-word type name on its own ("the curl *source*", "a *virtual* one") speaks of the type.
        # what the schema says its nodes are called ("also called a word, term, concept …"): the question's words
        # for what it asks about, even where a node bears the word as its name (every word does in a dictionary)
        self.called = called_nouns(schema)
        self._type_name_words = {
            word
            for t in schema.node_types
            if len(words := t.name.replace("/", " ").replace("_", " ").replace("-", " ").lower().split()) > 1
            for word in words
        }
        self.node_words = self.called | self._type_name_words
        self._labels = RelationLabels(stores)
        self.relation_stems = set().union(*(stems(e.name + " " + e.description) for e in schema.edge_types))
        self._stated_stems = stated_stems(schema.edge_types)

    def warm(self) -> None:
        self._speller.warm()

    def knows_word(self, word: str) -> bool:
        """Whether the word (lower case) is a word of some node's name, or its plural ("warships")."""
        return any(self._speller.knows(w) for w in (word, word[:-1] if word.endswith("s") else word))

    def name_spans(self, text: QuestionText) -> list[tuple[int, int]]:
        """Where names of nodes stand, before anything is claimed (longest match, left to right): a type word
        inside one ("Gaucher disease") or right before one ("the gene BRCA1") does not name the answer's type."""
        lexicon = self._lexicon()
        spans: list[tuple[int, int]] = []
        i = 0
        while i < len(text):
            for n in range(min(lexicon.max_words, len(text) - i), 0, -1):
                words = text.words(i, i + n)
                if n == 1 and (not self._may_be_single_name(text, i) or self._types.is_form(words)):
                    continue
                if all(w in FUNCTION_WORDS for w in words):
                    continue
                surface = text.span_text(i, i + n)
                if lexicon.positions(surface, original=surface).size and not self._labels.says_an_edge_name(
                    text, i, i + n
                ):
                    spans.append((i, i + n))
                    i += n - 1
                    break
            i += 1
        return spans

    def exact(self, text: QuestionText, *, typos: bool = True) -> list[Constant]:
        lexicon = self._lexicon()
        found: list[Constant] = []
        i = 0
        while i < len(text):
            hit: Constant | None = None
            if text.claimed[i] is None:
                for n in range(min(lexicon.max_words, len(text) - i), 0, -1):
                    if not text.free(i, i + n) or not self._may_be_name(text, i, i + n):
                        continue
                    surface = text.span_text(i, i + n)
                    positions = name_positions(
                        lexicon,
                        surface,
                        lambda w: states_a_relation(w, self._stated_stems),
                        plural_class=after_kind_noun(text, i, n),
                    )
                    if positions.size:
                        hit = Constant(i, i + n, surface, positions, True)
                        break
                if (gerund := gerund_name(text, i, lexicon)) is not None:
                    if hit is None:
                        hit = Constant(i, i + 1, gerund[0], gerund[1], True)
                    elif hit.end == i + 1:
                        hit = replace(hit, positions=with_verb_nodes(hit.positions, gerund[1]))
            if hit:
                found.append(hit)
                text.claim(hit.start, hit.end, "constant")
                i = hit.end
            else:
                i += 1
        if typos:
            corrected = self._corrected(text, found)
            # a corrected name may take in a shorter one found as written ("potasium ion | leak channel activity")
            found = [c for c in found if not any(k.start <= c.start and c.end <= k.end for k in corrected)]
            found += corrected
        found.sort(key=lambda c: c.start)
        self._claim_called_type_words(text, found)
        return self._labels.drop(text, self._drop_typing_words(text, found))

    def _claim_called_type_words(self, text: QuestionText, found: list[Constant]) -> None:
        """ "the serf *program*", "the *tool* X": a word one type's description calls its nodes, next to a name,
        types that name (a hint for `assemble`), like a type word; it is no name itself (`_may_be_single_name`)."""
        for constant in found:
            for i in (constant.start - 1, constant.end):
                if not 0 <= i < len(text) or text.claimed[i] is not None or not text.tokens[i].text.islower():
                    continue
                # after the name only where its clause ends ("the serf *program* and …", not "X *tool* both built")
                ends = i + 1 >= len(text) or text.boundary_before(i + 1)
                if i == constant.end and not ends and text.tokens[i + 1].lower not in ("and", "or"):
                    continue
                word = text.tokens[i].lower
                if word in self.called and self._types.introduces(word):
                    text.claim(i, i + 1, "type")

    def _drop_typing_words(self, text: QuestionText, found: list[Constant]) -> list[Constant]:
        """ "the zsh *program*", "the mixer *library* libsdl2-mixer": a one-word lower-case name next to another
        name that the schema's description gives one type is that name's type word, not a second node (even where
        some tag is called "program")."""
        kept: list[Constant] = []
        for i, constant in enumerate(found):
            before = kept[-1] if kept else None
            after = found[i + 1] if i + 1 < len(found) else None
            typing = (
                constant.end - constant.start == 1
                and text.tokens[constant.start].text.islower()
                and self._types.introduces(text.tokens[constant.start].lower)
            )
            if typing and after is not None and after.start == constant.end:
                # "the SDL2 mixer *library* libsdl2-mixer": the type word and a one-word modifier before it
                # describe the name that follows
                text.claim(constant.start, constant.end, "type")
                if before is not None and before.end == constant.start and before.end - before.start == 1:
                    text.claim(before.start, before.end, "type")
                    kept.pop()
                continue
            if typing and before is not None and before.end == constant.start:
                text.claim(constant.start, constant.end, "type")  # a hint for the name (`assemble`), not text
                continue
            single = constant.end - constant.start == 1 and text.tokens[constant.start].text.islower()
            if (
                single
                and after is not None
                and after.start == constant.end + 1
                and self._types.word_type(text.tokens[constant.end].lower) is not None
            ):
                text.claim(constant.start, constant.end, "type")  # "the SDL2 *mixer* library libsdl2-mixer"
                continue
            kept.append(constant)
        return kept

    def _corrected(self, text: QuestionText, written: list[Constant]) -> list[Constant]:
        """Names written misspelt: spans that match a name once words in them are read as the `Speller` proposes,
        longest first; a span may take in whole names found as written (`written`). A known word is respelt only
        into a longer name of two words or more: a word of a name found as written only as its spelling variant
        ("*tumour* protein p63"; "MAPKKKK" is an alias, not a typo of "MAPKKK"), another name word also one edit
        away ("*Rodriguez* blindness")."""
        readings: dict[int, list[str]] = {}
        respelt: dict[int, int] = {}  # a respelt known word: the fewest words of a name it may be read into
        for i, token in enumerate(text.tokens):
            if states_a_relation(token.lower, self._stated_stems):
                continue
            found = self._speller.readings(token.text) if text.claimed[i] is None else []
            if not found and text.claimed[i] in (None, "constant"):
                found = self._speller.respellings(token.text, edits=text.claimed[i] is None)
                if found:
                    respelt[i] = LONG_RESPELL_NAME_WORDS if is_english(token.lower) else 2
            if found:
                readings[i] = found
        if not readings:
            return []
        lexicon = self._lexicon()
        corrected: list[Constant] = []
        for index in sorted(readings):
            if any(c.start <= index < c.end for c in corrected):
                continue
            inside = next((c for c in written if c.start <= index < c.end), None)
            shortest = respelt.get(index, 1)
            if inside is not None:
                shortest = max(shortest, inside.end - inside.start + 1)
            for n in range(min(lexicon.max_words, len(text)), shortest - 1, -1):
                spans = [(s, s + n) for s in range(max(0, index - n + 1), min(index, len(text) - n) + 1)]
                hit = next(
                    (
                        (span, surface)
                        for span in spans
                        if _free_but_names(text, span, written, corrected) and self._may_be_name(text, *span)
                        for surface in span_readings(text, span, index, readings)
                        if lexicon.positions(surface).size
                    ),
                    None,
                )
                if hit is None:
                    continue
                (start, end), surface = hit
                corrected.append(Constant(start, end, surface, lexicon.positions(surface), False))
                text.claim(start, end, "constant")
                break
        return corrected

    def _may_be_name(self, text: QuestionText, start: int, end: int) -> bool:
        words = text.words(start, end)
        if all(w in FUNCTION_WORDS for w in words):
            return False
        if end - start == 1 and not self._may_be_single_name(text, start):
            return False
        if verb_after_do_subject(text, start) and all(w in FUNCTION_WORDS for w in words[1:]):
            return False  # "what groups does the dog *belong to*": the question's verb and its particle
        if (
            all(t.text.islower() or i == 0 for i, t in enumerate(text.tokens[start:end], start))
            and all(w in FUNCTION_WORDS or w in QUESTION_WORDS or is_discourse_word(w) for w in words)
            and not (end - start == 1 and len(words[0]) == 2 and in_a_name_slot(text, start, self._stated_stems))
        ):
            return False  # "I'm *looking for* …", "*tell me* which …": how one asks, in words some node is named
        # A bare type word ("gene", "diseases") is a type hint, not a node name.
        return not self._types.is_form(words)

    def _may_be_single_name(self, text: QuestionText, index: int) -> bool:
        """Whether one word alone may be a node's name: long enough, not a short English word, not a word of a
        multi-word type name, and not introduced by an indefinite article."""
        word = text.tokens[index].lower
        if len(word) < MIN_SINGLE_WORD_CHARS or word in FUNCTION_WORDS or word in self._type_name_words:
            return False
        if word in PLACEHOLDERS and text.tokens[index].text.islower():  # "kinds of *things* that …": no name
            return False
        lower = text.tokens[index].text.islower() or index == 0
        # (not "to" before a verb: "I'd like to *know* …" is an infinitive)
        after_preposition = index > 0 and (
            text.tokens[index - 1].lower in RELATING_PREPOSITIONS
            and not (text.tokens[index - 1].lower == "to" and "NOUN" not in word_classes(word))
        )
        name_slot = in_a_name_slot(text, index, self._stated_stems)  # "modules that import *re*"
        if lower and not (after_preposition or name_slot) and (word in self.called or is_discourse_word(word)):
            return False  # "which *words* …", "I'd like to *know* …", "*Help* me find …": how one asks
        if len(word) == 2 and (word in SHORT_ENGLISH or not word.isalnum()) and not name_slot:
            return False
        if index == 0 and word in QUESTION_WORDS:  # "*Identify* all the tags …", "*List* …": the request itself
            return False
        if index == 0 and text.tokens[0].text.islower() and is_discourse_word(word):
            return False  # "*hey*, quick one: …", "*stuff* that suggests X": how the question opens
        if text.gap_before(index) == "-" and text.tokens[index].text.islower() and a_participle(word):
            return False  # "Golgi stack-*localized* genes", "CLRN1-*related*": it relates the word before
        if verb_of_relative_clause(text, index) or verb_after_do_subject(text, index) or compared(text, index):
            return False  # "… that *links* against X"; "the *same* as X", "more *general* terms"
        if not after_preposition and relates(text, index, self._stated_stems):
            return False  # "are *used* in the field of X", "adverbs *formed* from X"
        if verb_after_type_word(text, index, self._stated_stems, lambda w: self._types.is_form([w])):
            return False
        if (
            text.tokens[index].text.islower()
            and only_a_modifier(word)
            and not self._typed_next_to(text, index)
            and not object_of_a_preposition(text, index)
        ):
            # "but *only* those …", "*less* than 9": English, unless a type word says it is one ("the less package")
            return False
        # "a subtype of …", "a protein that …" introduce an unnamed node; "the parts of *a car*" names one, and so
        # does "which parts of *a car* are there": the question's own verb follows, nothing qualifies the noun
        ends_clause = (
            index + 1 >= len(text) or text.boundary_before(index + 1) or text.tokens[index + 1].lower in MAIN_VERBS
        )
        start = index
        # "a *noun* sense that …", "an *adjective* term which …": the schema's own words for its nodes between the
        # article and the word still introduce an unnamed node
        while (
            start > 1 and text.tokens[start - 1].text.islower() and text.tokens[start - 1].lower in self.node_words
        ):
            start -= 1
        if start == 0 or text.tokens[start - 1].lower not in INDEFINITE_ARTICLES or ends_clause:
            return True
        # "which parts does *a bank* have?": the subject of a do-question is what it asks about
        return start >= 2 and text.tokens[start - 2].lower in DO_AUXILIARIES

    def _typed_next_to(self, text: QuestionText, index: int) -> bool:
        """A type word right after ("the less package"), or a singular one right before ("the package less"; "the
        number of packages less than 9" compares)."""
        after = text.tokens[index + 1].lower if index + 1 < len(text) else ""
        if after == "than":
            return False
        before = text.tokens[index - 1].lower if index > 0 else ""
        return bool(after and self._types.is_form([after])) or bool(
            before and self._types.is_form([before]) and noun_lemma(before) in (before, None)
        )

    def fuzzy(self, text: QuestionText, query: QueryContext) -> list[Constant]:
        """Leftover phrases with content words: link to the closest node name if it is close enough."""
        runs = []
        for start, end in text.free_runs():
            # Trim connecting words at the edges ("participating in …"): they name the relation, not the node.
            while start < end and self.connecting(text.tokens[start].lower):
                start += 1
            while end > start and self.connecting(text.tokens[end - 1].lower):
                end -= 1
            content = [w for w in text.words(start, end) if not self.connecting(w) and not w.isdigit()]
            # One leftover word is a verb or a number far more often than a misspelt name: fallback for phrases
            if len(content) >= MIN_FUZZY_WORDS and not self._types.occurs_in(text.words(start, end)):
                runs.append((start, end))
        if not runs:
            return []
        names = self._stores.vectors["name"]
        vectors = query.encode_with_question([text.span_text(s, e) for s, e in runs])
        found: list[Constant] = []
        for (start, end), vector in zip(runs, vectors, strict=True):
            hits = names.search(vector[None, :], 5)[0]
            if hits.keys.size and float(hits.scores[0]) >= self._fuzzy_min_cosine:
                keep = hits.keys[hits.scores >= self._fuzzy_min_cosine]
                found.append(Constant(start, end, self._stores.nodes.names[int(keep[0])], keep, False))
                text.claim(start, end, "constant")
        return found

    def connecting(self, word: str) -> bool:
        return word in FUNCTION_WORDS or word[:5] in self.relation_stems


def _free_but_names(
    text: QuestionText, span: tuple[int, int], names: list[Constant], corrected: list[Constant]
) -> bool:
    """Whether every token of the span is free or part of a name found as written that lies wholly inside it
    (never of one corrected already)."""
    inside = {k for c in names if span[0] <= c.start and c.end <= span[1] for k in range(c.start, c.end)}
    taken = {k for c in corrected for k in range(c.start, c.end)}
    return all((text.claimed[k] is None or k in inside) and k not in taken for k in range(*span))
