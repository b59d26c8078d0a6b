"""Exact phrase matches: a quoted or multi-word text constraint found verbatim in a node's document.

"Which phenotype is described as: '…that contain granules proaggregatory factors…'": BM25 and cosine rank the
right node near the top; containment of the whole phrase (case, punctuation and spacing ignored) singles it out.
"""

from __future__ import annotations

import re

import numpy as np

from skbqa.stores.lexicon import normalise
from skbqa.stores.nodes import NodeTable

MIN_PHRASE_WORDS = 3
_WORD = re.compile(r"\w+")


def _normal(text: str) -> str:
    """Word-normalised with spaces at both ends, so containment respects word boundaries."""
    return f" {normalise(text)} "


def phrase_matches(nodes: NodeTable, phrases: list[str], keys: np.ndarray) -> np.ndarray:
    """For each key, how many of the (≥3-word) phrases its name or text contains."""
    wanted = [_normal(p) for p in phrases if len(_WORD.findall(p)) >= MIN_PHRASE_WORDS]
    counts = np.zeros(keys.size, np.float32)
    if not wanted:
        return counts
    for i, key in enumerate(keys.tolist()):
        document = _normal(nodes.names[key] + " " + nodes.texts[key])
        counts[i] = sum(phrase in document for phrase in wanted)
    return counts
