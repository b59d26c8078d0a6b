"""A node's name used as a category of answers: "what *clinical course* or *onset* terms are recorded for X?",
"*onset* & *clinical course* terms annotated to …" ask for terms of the kind those nodes head, not for the nodes:
names followed by a term noun (term, class, concept, entry, code) at the head of the question give the answer's
type, and are no constants. English only; the names and their types come from the loaded SKB.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from skbqa.stages.parse.chain_words import TERM_NOUNS
from skbqa.stages.parse.question_text import FUNCTION_WORDS, QuestionText, is_discourse_word
from skbqa.stages.parse.type_mentions import PREPOSITIONS, noun_lemma
from skbqa.stores.index import IndexStores
from skbqa.stores.lexicon import NameLexicon

# What may join several category names before one term noun ("clinical course *or* onset terms", "… / …", "… & …")
_JOINERS = frozenset({"or", "and", "/", "&", ","})


class NamedCategories:
    def __init__(self, stores: IndexStores, lexicon: Callable[[], NameLexicon]) -> None:
        self._stores = stores
        self._schema = stores.nodes.schema
        self._lexicon = lexicon
        self._hierarchies: dict[int, str | None] = {}
        self._type_names = {t.name.replace("_", " ").lower() for t in self._schema.node_types}

    def read(self, text: QuestionText, spans: Sequence[tuple[int, int]]) -> tuple[str, int, int] | None:
        """The type of the nodes named right before a term noun that heads the question, with the start and end
        of the names and the noun; None when no such names head it or they name nodes of several types."""
        for k, (start, end) in enumerate(spans):
            if not _opens_the_answer(text, start):
                continue
            names = [(start, end)]
            close = end
            for next_start, next_end in spans[k + 1 :]:
                gaps = [text.gap_before(i).strip() for i in range(close, next_start + 1)]
                words = text.words(close, next_start)
                if not all(g in _JOINERS or not g for g in gaps) or not all(w in _JOINERS for w in words):
                    break
                if not words and not any(gaps):
                    break
                names.append((next_start, next_end))
                close = next_end
            noun = text.tokens[close].lower if close < len(text) else ""
            lemma = noun_lemma(noun) or noun
            if lemma not in TERM_NOUNS or lemma in self._type_names:
                continue  # (a term noun that names a type is that type: "weakref *classes*" where classes are one)
            kinds = self._kinds_named(text, names)
            if len(kinds) == 1:
                return next(iter(kinds)), start, close + 1
        return None

    def _kinds_named(self, text: QuestionText, spans: list[tuple[int, int]]) -> set[str]:
        """The types of the named nodes that head narrower nodes of their own type (their type's hierarchy ends at
        them): what "*clinical course* terms" can be said of, and a gene's symbol cannot."""
        found: set[str] = set()
        for start, end in spans:
            surface = text.span_text(start, end)
            positions = self._lexicon().positions(surface, original=surface)
            for code in np.unique(self._stores.nodes.types[positions]):
                name = self._schema.node_types[int(code)].name
                nodes = positions[self._stores.nodes.types[positions] == code]
                hierarchy = self._hierarchy(int(code))
                if hierarchy is not None and int(self._stores.graph.degree(nodes, hierarchy, "in").sum()):
                    found.add(name)
        return found

    def _hierarchy(self, code: int) -> str | None:
        """The edge among the type's own nodes that the most of them have: its hierarchy, when it has one."""
        if code not in self._hierarchies:
            name = self._schema.node_types[code].name
            own = [e.name for e in self._schema.edge_types if e.source == name and e.target == name]
            nodes = np.flatnonzero(self._stores.nodes.types == code)
            counts = {edge: int(np.count_nonzero(self._stores.graph.degree(nodes, edge, "out"))) for edge in own}
            self._hierarchies[code] = max(counts, key=lambda edge: counts[edge]) if counts else None
        return self._hierarchies[code]


def _opens_the_answer(text: QuestionText, start: int) -> bool:
    """Whether only question, discourse and function words stand between the clause's start and `start`."""
    i = start
    while i > 0 and not text.boundary_before(i):
        i -= 1
    words = text.words(i, start)
    # "*In the* shells category, which …": the object of a preposition is a setting, not the answer
    return not PREPOSITIONS & set(words) and all(w in FUNCTION_WORDS or is_discourse_word(w) for w in words)
