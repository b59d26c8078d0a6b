"""What the answer's head noun asks for, read from what follows it rather than from the word itself: a level of a
hierarchy ("the direct *subtypes* of X" asks for X's kind), and the types a synonym at the head cannot mean because
the question names them another way (`TargetTypeReader` takes the synonym's next best reading then).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from skbqa.query.encoder import Encoder
from skbqa.stages.parse.chain_words import TERM_NOUNS, is_level_noun
from skbqa.stages.parse.question_text import FUNCTION_WORDS, QuestionText
from skbqa.stages.parse.type_mentions import ARTICLES, TypeMention, noun_lemma
from skbqa.stages.parse.type_synonyms import HeadNoun, TypeSynonyms
from skbqa.stores.index import IndexStores
from skbqa.stores.lexicon import NameLexicon

TypesNamed = Callable[[QuestionText, list[tuple[int, int]]], set[str]]
DETERMINERS = frozenset({"the", "a", "an", "its", "their", "these", "those", "this", "that", "each", "every"})


class HeadNounLimits:
    def __init__(
        self,
        stores: IndexStores,
        lexicon: Callable[[], NameLexicon],
        synonyms: TypeSynonyms,
        types_named: TypesNamed,
        types_corrected_at: Callable[[QuestionText, int], set[str]],
    ) -> None:
        """`types_named`: the types of the nodes whose names stand at the given spans; `types_corrected_at`: the
        types of the nodes named, once misspellings are read, by a name starting at a token."""
        self._stores = stores
        self._schema = stores.nodes.schema
        self._lexicon = lexicon
        self._synonyms = synonyms
        self._types_named = types_named
        self._types_corrected_at = types_corrected_at

    def untyped_of_object(
        self,
        text: QuestionText,
        head: HeadNoun,
        spans: list[tuple[int, int]],
        mentions: list[TypeMention],
        encoder: Encoder,
    ) -> set[str]:
        """The types the head noun cannot be, read from "<head> of (the) <node>" ("in", "for", "between", "among"
        alike): the object's types that no edge joins to nodes of their own type (a thing *of* a disease, the signs
        *in* or *between* diseases, is a disease only through a disease–disease edge)."""
        j = head.end
        if text.words(j, j + 1)[:1] not in (["of"], ["in"], ["for"], ["between"], ["among"]):
            return set()
        j += 1
        while j < len(text) and text.tokens[j].lower in ARTICLES:
            j += 1
        named = {m.type_name for m in mentions if m.start == j}
        named |= self._types_named(text, [(s, e) for s, e in spans if s == j])
        if not named and j < len(text) and text.tokens[j].text[:1].isupper():
            named = self._types_corrected_at(text, j)  # "symptoms of *Rodriguez* blindness": a misspelt name
        if (
            not named
            and j < len(text)
            and text.tokens[j].lower not in FUNCTION_WORDS  # "conditions in *which* …": a relative clause
            and (lemma := noun_lemma(text.tokens[j].lower)) is not None
        ):
            # "symptoms of the *disorders* …": the object named by a synonym
            of_object = self._synonyms.type_of(text, HeadNoun(j, j + 1, lemma), encoder)
            named = {of_object} if of_object is not None else set()
        return {t for t in named if not any(e.source == t and e.target == t for e in self._schema.edge_types)}

    def kind_of_level(
        self, text: QuestionText, head: HeadNoun, mentions: list[TypeMention], spans: list[tuple[int, int]]
    ) -> str | None:
        """The direct *subtypes* of X", "*parent terms* of the functions …", "*grandchildren* of X": a noun for a
        level of a hierarchy, heading the answer, asks for nodes of the kind of what follows "of", when some edge
        joins nodes of that kind (whatever it is called)."""
        words = text.words(0, len(text))
        if not any(is_level_noun(w) for w in words[max(head.start - 1, 0) : head.end]):
            return None
        j = head.end
        while j < len(words) and (noun_lemma(words[j]) or words[j]) in TERM_NOUNS:
            j += 1
        if words[j : j + 1] != ["of"]:
            return None
        j += 1
        while j < len(words) and words[j] in DETERMINERS:
            j += 1
        kinds = {m.type_name for m in mentions if m.start == j}
        if kinds:
            kinds = {k for k in kinds if any(e.source == k and e.target == k for e in self._schema.edge_types)}
            return next(iter(kinds)) if len(kinds) == 1 else None
        span = next(((s, e) for s, e in spans if s == j), None)
        if span is None:
            return None
        # "the subclasses of the Mailbox *class*": a type word right after the name says its kind
        typed = {m.type_name for m in mentions if m.start == span[1]}
        typed = {k for k in typed if any(e.source == k and e.target == k for e in self._schema.edge_types)}
        return next(iter(typed)) if len(typed) == 1 else self._kind_in_a_hierarchy(text.span_text(*span))

    def _kind_in_a_hierarchy(self, surface: str) -> str | None:
        """Of the types of the nodes so named, the one whose nodes have the most edges to nodes of their own type
        (a name that is also a disease's names a phenotype in the phenotype hierarchy)."""
        positions = self._lexicon().positions(surface, original=surface)
        types = self._stores.nodes.types[positions] if positions.size else np.zeros(0, dtype=np.int64)
        best: tuple[int, str] | None = None
        for code in np.unique(types).tolist():
            kind = self._schema.node_types[int(code)].name
            edges = {e.name for e in self._schema.edge_types if e.source == kind and e.target == kind}
            nodes = positions[types == code]
            links = sum(int(self._stores.graph.degree(nodes, edge, "both").sum()) for edge in edges)
            if links and (best is None or links > best[0]):
                best = (links, kind)
        return None if best is None else best[1]

    def said_otherwise(
        self, text: QuestionText, head: HeadNoun, spans: list[tuple[int, int]], mentions: list[TypeMention]
    ) -> set[str]:
        """Types a synonym at the head cannot mean, because the question names them another way: the type of
        every named node when no edge joins two nodes of it ("what *symptoms* does Hemophilia B have": no disease
        has a disease), or a type word in the plural further on that types no name ("*symptoms* seen across the
        *diseases* associated with F9": nodes on the way, which the user would not call two ways)."""
        named = self._types_named(text, spans)
        own = {t for t in named if any(e.source == t and e.target == t for e in self._schema.edge_types)}
        out = set(named) if len(named) == 1 and not own else set()
        ends = {s for s, _ in spans} | {e for _, e in spans}
        for m in mentions:
            last = text.tokens[m.end - 1].lower
            if m.start > head.end and not {m.start, m.end} & ends and noun_lemma(last) not in (last, None):
                out.add(m.type_name)
        return out
