"""Which nodes carry rich text: the paper adds similarity edges "only among nodes with rich textual descriptions",
leaving atomic entities to the structured strategies.

Text length is a poor proxy on real SKBs: a gene's text here is its name, symbol, aliases and "Human
protein-coding gene at cytogenetic band 19q13.43" (~130 characters, longer than many GO definitions), and a
disease without a description repeats its name and identifier. So the criterion counts *content words*: distinct
words of the text (letters only, 3+ characters, not stop words) that are not

- in the node's name or in its string attribute values (restating structured fields is not description), nor
- template words of its type: words found in at least half of that type's texts ("also known as", "human",
  "band"), measured on the data, for types with enough nodes to tell a template from a coincidence.

A node is rich when it has at least `min_content_words` of them. On the biomedical SKB the counts split cleanly
(bench/results/sage-biomed.json, "rich"): genes have 0–2 (aliases are attribute values), diseases are bimodal (0–1
for name-only entries, ≥ 6 with a MONDO description), GO and HPO terms mostly carry a definition; 3 sits in the
gap of the disease histogram and drops one-line glosses ("Underdevelopment of the uterus").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from skbqa.stores.nodes import NodeTable
from skbqa.strategies.sage.corpus import Vocabulary, tokenize

DEFAULT_MIN_CONTENT_WORDS = 3
TEMPLATE_SHARE = 0.5  # a word in at least this share of a type's texts is that type's boilerplate
TEMPLATE_MIN_NODES = 50  # below this, "half the texts" is too few to call a word a template
_MIN_WORD_CHARS = 3


@dataclass
class RichText:
    mask: np.ndarray  # bool per node position
    content_words: np.ndarray  # int64 per node position
    templates: dict[str, list[str]]  # type name → its template words
    min_content_words: int

    def summary(self, nodes: NodeTable) -> dict[str, Any]:
        by_type: dict[str, Any] = {}
        for code, node_type in enumerate(nodes.schema.node_types):
            of_type = nodes.types == code
            if not of_type.any():
                continue
            counts = self.content_words[of_type]
            by_type[node_type.name] = {
                "nodes": int(of_type.sum()),
                "rich": int(self.mask[of_type].sum()),
                "content_words_p10_p50_p90": [int(v) for v in np.percentile(counts, [10, 50, 90])],
                "template_words": self.templates.get(node_type.name, []),
            }
        return {
            "criterion": f">= {self.min_content_words} content words beyond name, attribute values and type template",
            "rich_nodes": int(self.mask.sum()),
            "by_type": by_type,
        }


def _attribute_text(attrs: dict[str, Any]) -> str:
    return " ".join(v for v in attrs.values() if isinstance(v, str))


def _stopwords() -> frozenset[str]:
    from bm25s.stopwords import STOPWORDS_EN  # the stop list BM25 uses, so "content" means the same in both

    return frozenset(STOPWORDS_EN)


def rich_text(nodes: NodeTable, *, min_content_words: int = DEFAULT_MIN_CONTENT_WORDS) -> RichText:
    vocabulary = Vocabulary()
    texts = tokenize(nodes.texts, vocabulary)
    names = tokenize(nodes.names, vocabulary)
    attrs = tokenize([_attribute_text(a) for a in nodes.attrs], vocabulary)
    size = len(vocabulary)
    stop = _stopwords()
    # Per vocabulary word (not per node): can it count as content at all?
    eligible = np.fromiter(
        (len(w) >= _MIN_WORD_CHARS and w.isalpha() and w not in stop for w in vocabulary.words), bool, size
    )
    pairs = texts.doc_word_pairs(size)
    pairs = pairs[eligible[pairs % size]]
    pairs = pairs[~np.isin(pairs, np.union1d(names.doc_word_pairs(size), attrs.doc_word_pairs(size)))]
    docs, words = pairs // size, pairs % size

    # Template words: (type, word) pairs found in at least TEMPLATE_SHARE of the type's texts.
    types = nodes.types.astype(np.int64)
    type_sizes = np.bincount(types, minlength=len(nodes.schema.node_types))
    type_words, df = np.unique(types[docs] * size + words, return_counts=True)
    owner = type_words // size
    template = (df >= TEMPLATE_SHARE * type_sizes[owner]) & (type_sizes[owner] >= TEMPLATE_MIN_NODES)
    is_template = np.isin(types[docs] * size + words, type_words[template])
    content = np.bincount(docs[~is_template], minlength=len(nodes)).astype(np.int64)

    templates: dict[str, list[str]] = {}
    for key in type_words[template]:
        name = nodes.schema.node_types[int(key // size)].name
        templates.setdefault(name, []).append(vocabulary.words[int(key % size)])
    return RichText(
        content >= min_content_words, content, {k: sorted(v) for k, v in templates.items()}, min_content_words
    )
