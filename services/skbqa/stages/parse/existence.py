"""A node the answer must have without naming it: "genes with *at least one* disease association", "packages
maintained by *some* team", "HOX genes linked to *any* disease". A type word after an existential determiner that
stands for no name, heads nothing and lies on no chain adds a triplet from the answer to a variable of that type;
grounding then keeps the answers that have such a neighbour (the variable's own set is never asked for).

The edge is chosen as a constant's would be, from the words of the type word's clause; when the words do not tell
two edges apart, any edge between the two types counts.
"""

from __future__ import annotations

from collections.abc import Sequence

from skbqa.query.structured import StructuredQuery, Symbol
from skbqa.stages.parse.question_text import QuestionText
from skbqa.stages.parse.relations import RelationChooser
from skbqa.stages.parse.type_mentions import TypeMention

# Words right before a type word that make it "some node of that type" rather than a particular one
EXISTENTIAL_WORDS = (("at", "least", "one"), ("one", "or", "more"), ("any",), ("some",), ("a",), ("an",))


def existential(text: QuestionText, mention: TypeMention) -> bool:
    """Whether the type word is introduced as "some X" ("a", "an", "any", "some", "at least one", "one or
    more"), maybe with one free adjective between ("*any known* disease")."""
    words = text.words(0, mention.start)
    for skip in (0, 1):
        if skip and (not words or text.claimed[mention.start - 1] is not None):
            break
        before = words[: len(words) - skip]
        if any(tuple(before[-len(w) :]) == w for w in EXISTENTIAL_WORDS if len(before) >= len(w)):
            return True
    return False


def add_existence_triplets(
    parsed: StructuredQuery,
    text: QuestionText,
    mentions: Sequence[TypeMention],
    name_starts: set[int],
    chooser: RelationChooser,
) -> None:
    """Adds a triplet from the answer to a new variable for every free existential type word of another type
    than the answer's that one edge type joins to it (claims the word)."""
    target_type = parsed.symbols[parsed.target].type
    if target_type is None:
        return
    for mention in mentions:
        if (
            mention.type_name == target_type
            or any(
                not s.is_constant and s.type == mention.type_name for s in parsed.symbols.values()
            )  # on a chain
            or any(text.claimed[i] is not None for i in range(mention.start, mention.end))
            or mention.end in name_starts  # "a gene BRCA1": the word types the name after it
            or not existential(text, mention)
        ):
            continue
        options = [
            o for o in chooser.options(mention.type_name, target_type, constant_is_subject=False) if not o.vias
        ]
        if not options:
            continue
        left, right = text.clause(mention.start, mention.end)
        phrase = " ".join(text.words(left, mention.start) + text.words(mention.end, right))
        best = chooser.rank(options, phrase, None)[0]
        name = f"e{sum(1 for s in parsed.symbols if s.startswith('e')) + 1}"
        parsed.symbols[name] = Symbol(name, mention.type_name)
        parsed.triplets.extend(best.triplets(name, parsed.target, []))
        text.claim(mention.start, mention.end, "via")
        parsed.warnings.append(
            f"the answer must have some {mention.type_name}: {text.span_text(mention.start, mention.end)!r}"
        )
