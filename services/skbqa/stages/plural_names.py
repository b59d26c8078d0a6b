"""A name said in the plural: "types of *drinking glasses*" names the node "drinking glass". Tried only for names of
several words, after the words as written found nothing: a single plural word ("places", "words") is too often the
question's own noun to be read as the name of its singular. Shared by the parser and step 4, so both find the
same nodes for the name."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from skbqa.stores.lexicon import NameLexicon


def name_positions(
    lexicon: NameLexicon,
    surface: str,
    says_a_relation: Callable[[str], bool] = lambda _: False,
    *,
    plural_class: bool = False,
) -> np.ndarray:
    """The nodes the span names as written, else (several words, the last a plural noun; or one word the caller
    knows names a class in the plural, "types of *hammers*") in the singular; not when every word is one the
    schema says its relations with (in a dictionary, "related *word forms*" of X are a relation's words, whatever
    node "word form" names)."""
    found = lexicon.positions(surface, original=surface)
    words = surface.split()
    if (
        found.size
        or (len(words) < 2 and not plural_class)
        or not words[-1].islower()
        or all(says_a_relation(w) for w in words)
    ):
        return found
    from lemminflect import getAllLemmas

    singular = next(iter(getAllLemmas(words[-1]).get("NOUN", ())), words[-1]).lower()
    if singular == words[-1]:
        return found
    return lexicon.positions(" ".join([*words[:-1], singular]))
