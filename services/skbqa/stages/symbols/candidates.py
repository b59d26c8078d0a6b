"""Step 4 — symbol candidates: up to l_max nodes per constant, best first.

A constant's search strings (its names) are looked up exactly in the `NameLexicon` (names before aliases), then
the list is filled by vector search over node *names* embedded without relations (the paper's finding: relations
in the embedding mislead the search for non-target entities), restricted to the constant's type in strict mode.
Exact matches stay first; the vector hits follow by cosine to the search string.
"""

from __future__ import annotations

import numpy as np

from skbqa.query.structured import Symbol
from skbqa.stages.plural_names import name_positions
from skbqa.stages.senses import closest_senses
from skbqa.stores.lexicon import NameLexicon
from skbqa.stores.nodes import NodeTable
from skbqa.stores.vectors.base import VectorIndex


def constant_candidates(
    constant: Symbol,
    vectors: np.ndarray,
    *,
    lexicon: NameLexicon,
    names: VectorIndex,
    node_types: np.ndarray,
    type_code: int | None,
    l_max: int,
    nodes: NodeTable | None = None,
) -> np.ndarray:
    """Ranked candidate positions for one constant; `vectors` holds one embedding per search string. A constant
    with a sense (`Symbol.sense`) keeps, of the nodes bearing its name, the ones the sense means (`nodes` given)."""
    ordered: list[np.ndarray] = []
    unmeant: list[np.ndarray] = []
    for name in constant.names:
        exact = name_positions(lexicon, name)
        if type_code is not None and exact.size:
            exact = exact[node_types[exact] == type_code]
        if constant.sense and nodes is not None:
            meant = closest_senses(nodes, exact, constant.sense)
            unmeant.append(exact[~np.isin(exact, meant)])
            exact = meant
        ordered.append(exact)
    if l_max > 0 and vectors.size:
        types = None if type_code is None else [type_code]
        for hits in names.search(np.atleast_2d(vectors), l_max, node_types=types):
            ordered.append(hits.keys)
    merged = np.concatenate(ordered) if ordered else np.zeros(0, np.int64)
    if unmeant:  # the other senses of the name do not come back through its name vector
        merged = merged[~np.isin(merged, np.concatenate(unmeant))]
    _, first = np.unique(merged, return_index=True)
    return merged[np.sort(first)][:l_max].astype(np.int64)
