"""Hierarchy hops in a parse: whether it reads one ("a subtype of", "part of some"), and how many levels a hop next
to a constant spans ("*grandchild* terms of X": two)."""

from __future__ import annotations

from dataclasses import replace

from skbqa.query.structured import StructuredQuery
from skbqa.stages.parse.chain_words import TWO_LEVEL_WORDS, hierarchy_depth
from skbqa.stages.parse.question_text import QuestionText


def reads_hierarchy(parsed: StructuredQuery) -> bool:
    """Whether a triplet joins two nodes of one type (a hierarchy hop through an unnamed node)."""
    return any(
        t.head in parsed.symbols
        and t.tail in parsed.symbols
        and parsed.symbols[t.head].type == parsed.symbols[t.tail].type
        and not (parsed.symbols[t.head].is_constant and parsed.symbols[t.tail].is_constant)
        for t in parsed.triplets
    )


def span_two_levels(
    text: QuestionText, parsed: StructuredQuery, leftover: list[str], warnings: list[str]
) -> list[str]:
    """ "Grandchild terms of X", "terms two levels below X": the one hierarchy hop next to a constant spans two
    levels (the grounding walks exactly two edges of it). The depth words are then explained, not text."""
    depth = hierarchy_depth(text.words(0, len(text)))
    if depth == 1:
        return leftover
    hops = [i for i, t in enumerate(parsed.triplets) if parsed.symbols[t.head].type == parsed.symbols[t.tail].type]
    # one hop only: "a subtype of a subtype of X" has its two levels as two hops already
    if len(hops) != 1 or parsed.triplets[hops[0]].edge is None:
        return leftover
    parsed.triplets[hops[0]] = replace(parsed.triplets[hops[0]], min_hops=depth, max_hops=depth)
    warnings.append(f"the hierarchy hop spans {depth} levels")
    return [w for w in leftover if w.lower() not in TWO_LEVEL_WORDS | {"levels", "level", "two", "below"}]
