"""The target type read from the question's verb or noun when no word names it: "How is X *inherited*?", "Where in
the cell are the products of genes … *located*?", "Who *maintains* X?".

A question that asks "how", "where" or "who" names its answer by what the answer does, and the schema's edge names
say the same thing in the same words: a content word of the question that shares its stem with a word of an edge's
name (`disease_has_mode_of_inheritance`, `gene_located_in_cellular_component`, `maintained_by`), or with a word of a
type's name ("maintains" ~ maintainer), points at that edge. The answer is the edge's end that the rest of the
question does not already hold: not the type of a named node, nor a type word that qualifies something else
("products of *genes*"). Taken only when that leaves exactly one type; otherwise the caller keeps its guess.
"""

from __future__ import annotations

import re

from skbqa.skb.schema import Schema
from skbqa.stages.parse.question_text import FUNCTION_WORDS, QuestionText

# Two words are one stem when they share this many leading letters ("inherited" ~ "inheritance", "located" ~
# "location"); shorter words must be equal. Five letters: the shortest prefix that keeps "general" from "gene".
STEM_LETTERS = 5
MIN_WORD_LETTERS = 4
_WORD = re.compile(r"[a-z]+")
ENGLISH_EQUIVALENTS = {"involved": "participates", "involves": "participates", "involvement": "participation"}


def name_words(name: str) -> set[str]:
    return {w for w in _WORD.findall(name.lower()) if w not in FUNCTION_WORDS and len(w) >= MIN_WORD_LETTERS}


def same_stem(a: str, b: str) -> bool:
    if len(a) < STEM_LETTERS or len(b) < STEM_LETTERS:
        return _singular(a) == _singular(b)  # "modes" ~ "mode"
    return a[:STEM_LETTERS] == b[:STEM_LETTERS]


def _singular(word: str) -> str:
    return word[:-1] if word.endswith("s") and not word.endswith("ss") else word


class EdgeWordTarget:
    def __init__(self, schema: Schema) -> None:
        self._type_words = {t.name: name_words(t.name) for t in schema.node_types}
        # each edge: the words of its name that are not its end types' names ("mode", "inheritance"), its ends
        self._edges = [
            (name_words(e.name) - self._type_words.get(e.source, set()) - self._type_words.get(e.target, set()),
             e.source, e.target)
            for e in schema.edge_types
        ]  # fmt: skip

    def target(self, text: QuestionText, named: set[str], mentioned: set[str], skip: set[int]) -> str | None:
        """The one type the question's free content words point at through an edge or a type's name. `named`:
        the types of the nodes the question names; `mentioned`: the types of type words that do not head the
        question; `skip`: token positions of names and type words. Of several types, the one the earliest word
        points at. None when the words point nowhere, when their earliest points at several types, or along an
        edge that joins a mentioned type to a named one (then the mentioned type may well be the answer: "In
        Debian, packages *maintained* by X")."""
        words = {
            i: w
            for i, token in enumerate(text.tokens)
            if i not in skip
            and text.claimed[i] is None
            and (w := token.lower) not in FUNCTION_WORDS
            and len(w) >= MIN_WORD_LETTERS
            and w.isalpha()
        }
        if not words:
            return None
        # English verbs that say another verb an edge is named with ("what is X *involved* in": participates)
        words = {i: ENGLISH_EQUIVALENTS.get(w, w) for i, w in words.items()}
        held = named | mentioned
        # each type pointed at: the first word that points at it, and how much of the pointing name the question's
        # words cover ("dependencies" is all of `depends` but half of `build_depends`)
        answers: dict[str, tuple[int, float]] = {}

        def point(type_name: str, position: int, covered: float) -> None:
            answers[type_name] = min((position, -covered), answers.get(type_name, (position, -covered)))

        def coverage(name_words: set[str]) -> float:
            return sum(any(same_stem(w, e) for w in words.values()) for e in name_words) / max(len(name_words), 1)

        for edge_words, source, target in self._edges:
            matched = [i for i, w in words.items() if any(same_stem(w, e) for e in edge_words)]
            if not matched:
                continue
            if (source in mentioned and target in named) or (target in mentioned and source in named):
                return None
            if source == target:
                point(source, matched[0], coverage(edge_words))
            elif (source in held) != (target in held):
                point(source if target in held else target, matched[0], coverage(edge_words))
        for type_name, type_words in self._type_words.items():
            matched = [i for i, w in words.items() if any(same_stem(w, t) for t in type_words)]
            if type_name not in held and matched:
                point(type_name, matched[0], coverage(type_words))
        if not answers:
            return None
        # Several types: the question's main verb comes first ("who *maintains* the programs *providing* X?"), then
        # the name its words say in full.
        first = min(answers.values())
        earliest = [name for name, rank in answers.items() if rank == first]
        if len(earliest) > 1 and len(same := [name for name in earliest if name in named]) == 1:
            # "dependencies of X" where depends reaches packages and virtual packages: X's own type
            return same[0]
        return earliest[0] if len(earliest) == 1 else None

    def subject_of(self, verb: str) -> str | None:
        """ "*what depends* on …": the one type that is the source of every edge the verb names (None: the verb
        names no edge, or edges from several types)."""
        word = ENGLISH_EQUIVALENTS.get(verb, verb)
        sources = {source for words, source, _ in self._edges if any(same_stem(word, w) for w in words)}
        return next(iter(sources)) if len(sources) == 1 else None
