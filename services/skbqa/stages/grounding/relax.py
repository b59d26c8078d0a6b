"""When the graph has no answer to a parse with several constants, one of them is often no name at all: an English
word that some node bears ("defined *using* the word X", "which *belong to* Y"), a word of the schema's own
vocabulary, a guess of the fuzzy linker. Ground the query without each constant in turn and keep a reading the
graph answers, dropping the least name-like constant that allows one. The dropped constant's triplets go with it,
and so do triplets its removal cuts off from the answer.

A name written as names are ("Canidae", "New World monkey", "HbA1c"), or pinned by a sense qualifier, is more
name-like than a lower-case dictionary word; nothing here knows any one schema.
"""

from __future__ import annotations

from dataclasses import replace

from skbqa.query.structured import StructuredQuery, Symbol, linked_to
from skbqa.stages.english import is_english

SENSE_PINNED = 6  # a name the question qualifies by its sense ("kill, meaning 'cause to die'") outranks any other
MAX_CONSTANTS = 4  # past this many constants a parse is read as it is (each try is a grounding)
# A relaxed reading's confidence is the parse's times this: a little less sure (one of its constants was no name),
# still above ranking's TRUST_PARSE for a parse that was trusted, so the answers the graph found come first.
RELAXED_SHARE = 0.8


def name_likeness(symbol: Symbol) -> int:
    """How strongly the symbol's written names look like names rather than English words (higher: more)."""
    best = 0
    for name in symbol.names:
        words = name.split()
        score = 0
        if any(c.isupper() or c.isdigit() for c in name):
            score += 2
        if any(w.isalpha() and not is_english(w.lower()) for w in words):
            score += 2
        if len(words) > 1 and sum(len(w) > 3 for w in words) > 1:
            score += 1  # "mammal genus", not "belong to"
        best = max(best, score)
    return best + (SENSE_PINNED if symbol.sense else 0)


def relaxations(parsed: StructuredQuery) -> list[tuple[str, StructuredQuery]]:
    """(dropped constant, the parse without it), least name-like constant first; none for a parse with fewer than
    two constants (without its only constant it asks the graph nothing) or more than MAX_CONSTANTS."""
    constants = [s for s in parsed.constants if s.name != parsed.target]
    if not 2 <= len(constants) <= MAX_CONSTANTS:
        return []
    order = sorted(constants, key=name_likeness)  # stable: ties keep the question's order
    readings = [(c.name, without(parsed, c.name)) for c in order]
    return [(name, q) for name, q in readings if any(s.is_constant for s in q.symbols.values()) and q.triplets]


def loosenings(parsed: StructuredQuery) -> list[tuple[str, StructuredQuery]]:
    """(edge type, the parse with that one triplet's edge type left open), for each triplet between nodes of two
    different types whose edge the words chose ("conditions that *feature* X": `has_clinical_feature`, where the
    graph has the link as `has_phenotype`). Edges among one type's nodes keep theirs: there the edge is the
    meaning ("a part of X" is not "a kind of X")."""
    found: list[tuple[str, StructuredQuery]] = []
    for k, triplet in enumerate(parsed.triplets):
        head, tail = parsed.symbols.get(triplet.head), parsed.symbols.get(triplet.tail)
        if triplet.edge is None or head is None or tail is None or None in (head.type, tail.type):
            continue
        if head.type == tail.type:
            continue
        triplets = [*parsed.triplets[:k], replace(triplet, edge=None), *parsed.triplets[k + 1 :]]
        confidence = None if parsed.confidence is None else round(parsed.confidence * RELAXED_SHARE, 4)
        warning = f"the graph has no answer through {triplet.edge!r}: read with any edge between its two types"
        reading = replace(parsed, triplets=triplets, warnings=[*parsed.warnings, warning], confidence=confidence)
        found.append((triplet.edge, reading))
    return found


def without(parsed: StructuredQuery, symbol: str) -> StructuredQuery:
    """The parse minus `symbol`, its triplets, and whatever they alone linked to the answer."""
    triplets = [t for t in parsed.triplets if symbol not in (t.head, t.tail)]
    linked = linked_to(parsed.target, triplets)
    triplets = [t for t in triplets if t.head in linked and t.tail in linked]
    symbols = {n: s for n, s in parsed.symbols.items() if n in linked or n == parsed.target}
    confidence = None if parsed.confidence is None else round(parsed.confidence * RELAXED_SHARE, 4)
    return replace(
        parsed,
        symbols=symbols,
        triplets=triplets,
        constraints=[c for c in parsed.constraints if c.symbol in symbols],
        warnings=[
            *parsed.warnings,
            f"the graph has no answer with {_names(parsed.symbols[symbol])}: read without it",
        ],
        confidence=confidence,
    )


def _names(symbol: Symbol) -> str:
    return " / ".join(repr(n[:60]) for n in symbol.names[:2])
