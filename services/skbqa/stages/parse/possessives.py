"""A name owned by another name: "asyncio's StreamReader", "logging's Handler", "django's Form". When the owner's
words are part of what identifies some of the owned name's nodes (their qualified name or another attribute: the
`StreamReader` of `asyncio.streams`, not of `codecs`), the owner says which node the name means: the name keeps
those nodes and the owner is no constant of its own. An owner that is no part of the name's nodes ("France's
capital") stays a constant, related like any other.
"""

from __future__ import annotations

import re
from dataclasses import replace

import numpy as np

from skbqa.stages.parse.constants import Constant
from skbqa.stages.parse.question_text import QuestionText
from skbqa.stores.nodes import NodeTable

_WORD = re.compile(r"\w+")


def read_possessives(text: QuestionText, constants: list[Constant], nodes: NodeTable) -> list[Constant]:
    """The constants with each owner that identifies its owned name folded into it (see the module's doc)."""
    dropped: set[int] = set()
    changed: dict[int, Constant] = {}
    for k, owner in enumerate(constants):
        after = _possessive_end(text, owner)
        if after is None:
            continue
        owned = next((j for j, c in enumerate(constants) if c.start == after and j != k), None)
        if owned is None or owned in dropped:
            continue
        words = {w for w in _WORD.findall(owner.surface.lower()) if w != "s"}
        named = constants[owned]
        kept = [int(p) for p in named.positions if words and words <= _identity_words(nodes, int(p))]
        if not kept:
            continue
        changed[owned] = replace(named, positions=np.asarray(kept, np.int64))
        dropped.add(k)
    return [changed.get(k, c) for k, c in enumerate(constants) if k not in dropped]


def _possessive_end(text: QuestionText, constant: Constant) -> int | None:
    """The token after "X's" when the constant is X (with or without its "s" token), else None."""
    tokens = text.tokens
    last = constant.end - 1
    if tokens[last].lower == "s" and last > constant.start and text.apostrophe_before(last):
        return constant.end
    if constant.end < len(tokens) and tokens[constant.end].lower == "s" and text.apostrophe_before(constant.end):
        return constant.end + 1
    return None


def _identity_words(nodes: NodeTable, position: int) -> set[str]:
    """The words of a node's name and short string attributes (not its text: a description mentions many things)."""
    words = set(_WORD.findall(nodes.names[position].lower()))
    for value in nodes.attrs[position].values():
        if isinstance(value, str) and len(value) <= 200:
            words.update(_WORD.findall(value.lower()))
    return words
