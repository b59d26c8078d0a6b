"""Questions for the siblings of a named node ("what *else* gets built from the *same* source as wireshark",
"anything else that shares a maintainer with vim"): no word names the answer's type, which is the named node's own
kind, the one that can reach the shared node. English only; the types come from the schema.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from skbqa.skb.schema import Schema
from skbqa.stages.parse.chain_words import SHARING_WORDS
from skbqa.stages.parse.question_text import QuestionText

ELSE_WORDS = frozenset({"else", "other", "others"})
OPENING_SPAN = 3  # "what else", "is there anything else", "which other ones"


def sibling_type(
    text: QuestionText, schema: Schema, types_named: Callable[[], set[str]], mentioned: Iterable[str]
) -> str | None:
    """The named node's type when the question asks for others like it sharing a node: "else" or "other" opens
    it, a sharing word states it, and of the named node's types exactly one has an edge to a type the question
    mentions (the shared node's). `types_named()`: the named nodes' types, read only for such a question."""
    words = text.words(0, len(text))
    if not ELSE_WORDS & set(words[: OPENING_SPAN + 1]) or not SHARING_WORDS & set(words):
        return None
    named = types_named()
    if not named:
        return None
    shared = set(mentioned)
    joined = {
        kind
        for kind in named
        for edge in schema.edge_types
        if (edge.source == kind and edge.target in shared) or (edge.target == kind and edge.source in shared)
    }
    return next(iter(joined)) if len(joined) == 1 else None
