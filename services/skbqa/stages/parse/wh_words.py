"""The wh-words that ask for a kind of node without naming it: "who" for the schema's one type of persons or
teams, "where" for its one type of places, whether opening the question ("*Who* looks after X?") or ending it
("… maintained *by whom*?"). The types come from the schema's descriptions (`type_descriptions`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from skbqa.skb.schema import Schema
from skbqa.stages.english import word_classes
from skbqa.stages.parse.question_text import QuestionText, is_discourse_word
from skbqa.stages.parse.type_descriptions import agent_types, place_types
from skbqa.stages.parse.type_mentions import ARTICLES, PREPOSITIONS, TypeMention, heads_question
from skbqa.stages.parse.type_synonyms import COPULAS

AGENT_QUESTION_WORDS = frozenset({"who", "whom", "whoever"})
PLACE_QUESTION_WORDS = frozenset({"where", "whereabouts"})
MIN_CLOSING_WORDS = 4  # "… maintained by whom": a question this long that ends in a wh-word
SUBJECT_QUESTION_WORDS = frozenset({"what", "which", "whatever"})


class WhWordTypes:
    def __init__(self, schema: Schema) -> None:
        self._schema = schema
        self._agents = agent_types(schema)
        self._places = place_types(schema)

    def asked_by_wh_word(
        self,
        text: QuestionText,
        chosen: TypeMention | None,
        spans: list[tuple[int, int]],
        types_named: Callable[[], set[str]],
        mentions: Sequence[TypeMention] = (),
    ) -> tuple[str, str] | None:
        """ "*Who* looks after X?", "… maintained by *whom*?": the one type whose nodes are persons or teams;
        "*Where* does X localize?": the one type whose nodes are places. Only when no type word heads the question,
        for a wh-word that asks (a relative "who" or "where" after a noun asks nothing), and for a type an edge
        joins to the named nodes (their types: `types_named()`, read only when needed), or to a type word's nodes
        ("who maintains *the packages* that provide X": the answer reaches the name through them). Returns the type
        and the wh-word."""
        if chosen is not None and heads_question(text, chosen, spans):
            return None
        named = types_named()
        mentioned = {m.type_name for m in mentions}
        for question_words, types in ((AGENT_QUESTION_WORDS, self._agents), (PLACE_QUESTION_WORDS, self._places)):
            if len(types) != 1:
                continue
            (asked,) = types
            if (named or mentioned) and not any(
                self._joined(asked, types_near) for types_near in (named, mentioned) if types_near
            ):
                continue
            for i, token in enumerate(text.tokens):
                if token.lower in question_words and (
                    i == 0 or text.boundary_before(i) or text.tokens[i - 1].lower in PREPOSITIONS
                ):
                    return asked, token.lower
        return None

    def _joined(self, asked: str, types_near: set[str]) -> bool:
        return any(
            {e.source, e.target} & types_near and asked in (e.source, e.target) for e in self._schema.edge_types
        )

    def asked_at_the_end(self, text: QuestionText) -> tuple[str, str] | None:
        """ "the packages suggested by mutt are maintained *by whom*?", "… are filed *where*": a wh-word that ends
        the question asks, whatever the question opens with (a relative one never ends it)."""
        words = text.words(0, len(text))
        if len(words) < MIN_CLOSING_WORDS:
            return None
        for question_words, types in ((AGENT_QUESTION_WORDS, self._agents), (PLACE_QUESTION_WORDS, self._places)):
            if words[-1] in question_words and len(types) == 1:
                return next(iter(types)), words[-1]
        return None

    def asked_at_the_start(self, text: QuestionText) -> str | None:
        """ "*Who are* the packagers of …": "who" with a copula asks for a person or team, whatever noun follows
        (the noun is what the question calls them)."""
        words = text.words(0, min(len(text), 2))
        if len(words) == 2 and words[0] in AGENT_QUESTION_WORDS and words[1] in COPULAS and len(self._agents) == 1:
            return next(iter(self._agents))
        return None


def asks_for_the_subject(text: QuestionText, mentions: Sequence[TypeMention]) -> str | None:
    """ "*What depends on* a virtual package that postfix provides?": a wh-word that is itself the subject of the
    verb right after it asks for that verb's subject, so a type word further on is a node on the way, not the
    answer. A word English reads only as a verb qualifies; one that is also a noun ("what *conflicts* with X")
    only before a preposition or an article, and never a type word ("which *packages* …"). Returns the verb."""
    words = text.words(0, len(text))
    opening = next(
        (i for i, w in enumerate(words) if not is_discourse_word(w) or w in SUBJECT_QUESTION_WORDS), None
    )
    if opening is None or words[opening] not in SUBJECT_QUESTION_WORDS or opening + 2 >= len(words):
        return None
    verb, after = words[opening + 1], words[opening + 2]
    if any(m.start <= opening + 1 < m.end for m in mentions):
        return None
    classes = word_classes(verb)
    if "VERB" not in classes or "AUX" in classes:
        return None
    return verb if "NOUN" not in classes or after in PREPOSITIONS or after in ARTICLES else None
