"""Shared entities: node names (and aliases) found inside the texts of the graph's nodes.

The paper's chunks carry LLM-extracted entities; an SKB already names its entities, so linking is exact matching
of the name lexicon's keys against word n-grams of each text. It runs as array arithmetic: every n-gram of every
text gets a 64-bit polynomial hash of its word ids, and a hash is looked up in a sorted array of key hashes. The
key hashes are a superset (whole names, plus every n-gram of the alias columns' values, since an alias is a word
run of its value), so each distinct matched string is confirmed with `NameLexicon.positions`, which stays the
one authority on what a name is (including its case rules for short all-caps aliases).

Each text's entities become a row of a sparse node × entity matrix holding sqrt(IDF), so the dot product of
two rows is the summed IDF of the entities they share: sharing a rare entity, or several, scores high. (A cosine
would saturate: most texts mention one or two entities, so thousands of candidate pairs score exactly 1.0 and a
95th percentile lands on that tie.) A node's own name is not its entity, and entities found in very many texts
(generic names such as "cell" or "All") are dropped: they would link everything to everything.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from skbqa.stores.lexicon import NameLexicon
from skbqa.stores.nodes import NodeTable
from skbqa.strategies.sage.corpus import Corpus, Vocabulary, tokenize

MAX_NGRAM_WORDS = 12  # longer names are practically never quoted verbatim inside another node's text
DEFAULT_MAX_DF_SHARE = 0.005  # an entity in more than 0.5% of the graph's texts is too generic to bridge
_MULTIPLIER = np.uint64(0x9E3779B97F4A7C15)


@dataclass
class EntityMatrix:
    matrix: sp.csr_matrix  # rows: graph nodes (local order); columns: entities; values sqrt(IDF)
    keys: list[str]  # entity column → its normalised name
    nodes: np.ndarray  # entity column → a node it names (names before aliases)
    df: np.ndarray  # entity column → number of graph nodes whose text mentions it
    mentions: int  # linked (node, entity) pairs before the document-frequency cut


def _ngrams(
    corpus: Corpus, codes: np.ndarray, max_words: int, known: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(start token, length, hash) of every n-gram of up to `max_words` words that stays inside one document
    (only those whose hash is in the sorted array `known`, when given: filtering per length bounds memory)."""
    ids = corpus.ids
    docs = corpus.doc_of_tokens()
    starts_out, lengths_out, hashes_out = [], [], []
    hashes = np.zeros(ids.size, np.uint64)
    alive = np.ones(ids.size, bool)
    for n in range(1, max_words + 1):
        count = ids.size - n + 1
        if count <= 0:
            break
        last = np.arange(n - 1, ids.size)
        hashes = hashes[:count] * _MULTIPLIER + codes[ids[last]]
        alive = alive[:count] & (docs[last] == docs[:count])
        if not alive.any():
            break
        starts = np.flatnonzero(alive)
        if known is not None:
            starts = starts[np.isin(hashes[starts], known, assume_unique=False)]
        starts_out.append(starts)
        lengths_out.append(np.full(starts.size, n, np.int64))
        hashes_out.append(hashes[starts])
    if not starts_out:
        empty = np.zeros(0, np.int64)
        return empty, empty, np.zeros(0, np.uint64)
    return np.concatenate(starts_out), np.concatenate(lengths_out), np.concatenate(hashes_out)


def _whole_hashes(corpus: Corpus, codes: np.ndarray) -> np.ndarray:
    """The hash of each whole document (as `_ngrams` would compute it), for documents of 1..MAX_NGRAM_WORDS words."""
    lengths = np.diff(corpus.indptr)
    keep = np.flatnonzero((lengths >= 1) & (lengths <= MAX_NGRAM_WORDS))
    hashes = np.zeros(keep.size, np.uint64)
    for offset in range(int(lengths[keep].max(initial=0))):
        inside = offset < lengths[keep]
        words = corpus.ids[corpus.indptr[keep[inside]] + offset]
        hashes[inside] = hashes[inside] * _MULTIPLIER + codes[words]
    return hashes


def link_entities(
    nodes: NodeTable,
    lexicon: NameLexicon,
    graph_nodes: np.ndarray,
    *,
    max_df_share: float = DEFAULT_MAX_DF_SHARE,
    seed: int = 0,
) -> EntityMatrix:
    """The entity matrix of `graph_nodes` (positions, ascending), linking names of *all* nodes in their texts."""
    vocabulary = Vocabulary()
    texts = tokenize([nodes.texts[int(p)] for p in graph_nodes], vocabulary)
    names = tokenize(nodes.names, vocabulary)
    alias_columns: dict[int, list[str]] = {}
    for code, key, _separator in lexicon.alias_keys:
        alias_columns.setdefault(code, []).append(key)
    alias_values = [
        value
        for position, attrs in enumerate(nodes.attrs)
        for key in alias_columns.get(int(nodes.types[position]), ())
        if isinstance(value := attrs.get(key), str)
    ]
    aliases = tokenize(alias_values, vocabulary)
    codes = np.random.default_rng(seed).integers(0, 2**63, len(vocabulary), dtype=np.uint64)
    max_words = min(MAX_NGRAM_WORDS, lexicon.max_words)

    known = np.unique(np.concatenate([_whole_hashes(names, codes), _ngrams(aliases, codes, max_words)[2]]))
    starts, lengths, hashes = _ngrams(texts, codes, max_words, known)

    # Confirm each distinct matched string with the lexicon (tens of thousands of look-ups, not millions).
    distinct, first, column_of_hit = np.unique(hashes, return_index=True, return_inverse=True)
    keys: list[str] = []
    owners: list[np.ndarray] = []
    confirmed = np.full(distinct.size, -1, np.int64)
    for index, occurrence in enumerate(first):
        start, length = int(starts[occurrence]), int(lengths[occurrence])
        text = " ".join(vocabulary.words[w] for w in texts.ids[start : start + length])
        found = lexicon.positions(text)
        if found.size:
            confirmed[index] = len(keys)
            keys.append(text)
            owners.append(found)
    entity = confirmed[column_of_hit]
    row = texts.doc_of_tokens()[starts]
    row, entity = row[entity >= 0], entity[entity >= 0]

    # Drop self-mentions: the node's own name or alias inside its text.
    n_all = len(nodes)
    owner_pairs = (
        np.concatenate([i * n_all + o for i, o in enumerate(owners)]) if owners else np.zeros(0, np.int64)
    )
    pairs = np.unique(entity * n_all + graph_nodes[row])
    pairs = pairs[~np.isin(pairs, owner_pairs)]
    entity, row = pairs // n_all, np.searchsorted(graph_nodes, pairs % n_all)
    mentions = int(pairs.size)

    df = np.bincount(entity, minlength=len(keys))
    max_df = max(2, int(max_df_share * graph_nodes.size))
    useful = (df >= 2) & (df <= max_df)  # an entity in one text bridges nothing
    old_to_new = np.cumsum(useful) - 1
    keep = useful[entity]
    row, entity = row[keep], old_to_new[entity[keep]]
    root_idf = np.sqrt(np.log(graph_nodes.size / df[useful])).astype(np.float32)
    matrix = sp.csr_matrix((root_idf[entity], (row, entity)), shape=(graph_nodes.size, int(useful.sum())))
    matrix.sort_indices()
    useful_columns = np.flatnonzero(useful)
    return EntityMatrix(
        matrix,
        [keys[int(c)] for c in useful_columns],
        np.asarray([int(owners[int(c)][0]) for c in useful_columns], np.int64),
        df[useful],
        mentions,
    )
