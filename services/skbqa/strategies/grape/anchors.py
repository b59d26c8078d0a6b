"""Linking the AKG's constants to seed nodes (GRAPE §3.2, "map non-anonymous entities to node candidates").

A constant's seeds are its best few candidates from AF step 4 (`constant_candidates`: exact names and aliases
first, then name-vector search within the constant's type). Each seed keeps how well its name matches the
constant (cosine of name embeddings) — a feature of every path that starts from it — and the one-hop
neighbourhood of a constant's seeds is kept so other chains can check that their candidates also touch it
(the "coverage of constants" feature).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from skbqa.query.context import QueryContext
from skbqa.query.structured import Symbol
from skbqa.stages.symbols.candidates import constant_candidates
from skbqa.stores.index import IndexStores
from skbqa.stores.lexicon import NameLexicon
from skbqa.stores.vectors.base import VectorIndex
from skbqa.strategies.grape.query_graph import AkgNode


@dataclass
class Anchor:
    seeds: np.ndarray  # candidate positions, best first
    name_cosine: np.ndarray  # per seed: max cosine between the constant's names and the seed's name
    neighbourhood: np.ndarray  # sorted unique one-hop neighbours of all seeds (any edge, either direction)


def vectors_in_order(index: VectorIndex, keys: np.ndarray) -> np.ndarray:
    """`VectorIndex.vectors_for` returns rows for the sorted unique keys; this returns them in `keys` order."""
    unique = np.unique(keys)
    rows = index.vectors_for(unique)
    if rows.shape[0] != unique.size:  # a key without a vector: the index and node table disagree
        raise ValueError("vector index lacks some node positions")
    return rows[np.searchsorted(unique, keys)]


def find_anchors(
    stores: IndexStores,
    lexicon: NameLexicon,
    query: QueryContext,
    constants: list[AkgNode],
    *,
    per_constant: int,
) -> dict[str, Anchor]:
    if not constants:
        return {}
    texts = sorted({n for c in constants for n in c.names})
    vectors = dict(zip(texts, query.encode_with_question(texts), strict=True))
    names = stores.vectors["name"]
    type_codes = {t.name: i for i, t in enumerate(stores.nodes.schema.node_types)}
    out: dict[str, Anchor] = {}
    for constant in constants:
        own = np.stack([vectors[n] for n in constant.names])
        seeds = constant_candidates(
            Symbol(constant.name, constant.type, constant.names),
            own,
            lexicon=lexicon,
            names=names,
            node_types=stores.nodes.types,
            type_code=type_codes.get(constant.type or ""),
            l_max=per_constant,
        )
        if not seeds.size:
            continue
        cosine = (vectors_in_order(names, seeds) @ own.T).max(axis=1).astype(np.float32)
        _, around = stores.graph.neighbour_pairs(seeds, None, "both")
        out[constant.name] = Anchor(seeds, cosine, np.unique(around))
    return out
