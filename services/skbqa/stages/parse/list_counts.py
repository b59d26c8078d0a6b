"""Counts of a list: a numeric attribute whose value is the number of items in a list-valued attribute of the same
nodes (`word_count` beside `lemmas: "dog; domestic dog; Canis familiaris"`). A question counts the items by the
list's name ("with over 4 *lemmas*"), or by the word the type's description glosses the list with ("all *synonyms*
(lemmas …)"); both name the count. Read from the data and the schema's descriptions, nothing of one schema.

English words for *other* names ("synonym", "alias") exclude the node's own name: where the list holds that name,
"at least one synonym" is a count of two or more.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from skbqa.stages.parse.type_mentions import noun_lemma
from skbqa.stores.attributes.catalog import AttributeCatalog
from skbqa.stores.attributes.columns import AttributeColumn
from skbqa.stores.attributes.values import humanise, split_items

SAMPLE = 2000  # nodes compared per (count, list) pair
AGREEMENT = 0.95  # share of sampled nodes whose count equals their list's length
# English nouns for another name of the same thing: the thing's own name is not one of them.
OTHER_NAME_WORDS = frozenset({"synonym", "alias", "alternate", "alternative"})
OWN_NAME_WORD = "name"


@dataclass(frozen=True)
class CountedList:
    count_key: str  # the numeric attribute
    nouns: tuple[str, ...]  # singular words that name the items: the list's own name and its description's gloss
    holds_name: bool  # the list holds the node's own name


def counted_lists(catalog: AttributeCatalog, node_type: str, description: str) -> list[CountedList]:
    """Every numeric column of `node_type` that counts the items of one of its list columns."""
    columns = catalog.columns(node_type)
    lists = [c for c in columns if c.kind == "list" and c.separator]
    counts = [c for c in columns if c.numeric is not None and c.kind == "numeric"]
    found: list[CountedList] = []
    for count in counts:
        for listed in lists:
            if listed.key == count.key or not _counts(count, listed):
                continue
            label = humanise(listed.key).split()
            nouns = tuple(dict.fromkeys(w for w in (_singular(label[-1]), *_glosses(label, description)) if w))
            holds_name = _holds_name(catalog, listed)
            if holds_name:  # a list that holds the node's own name is its names: "with more than one *name*"
                nouns = (*nouns, OWN_NAME_WORD)
            found.append(CountedList(count.key, nouns, holds_name))
            break
    return found


def _items(column: AttributeColumn, at: np.ndarray) -> list[list[str]]:
    assert column.separator is not None
    return [split_items(column.display[int(code)], column.separator) for code in column.codes[at]]


def _counts(count: AttributeColumn, listed: AttributeColumn) -> bool:
    assert count.numeric is not None
    numbers = count.numeric
    shared = np.intersect1d(numbers.positions, listed.positions, assume_unique=True)
    if shared.size < 10:
        return False
    shared = shared[:: max(1, shared.size // SAMPLE)][:SAMPLE]
    values = numbers.values[np.searchsorted(numbers.positions, shared)]
    lengths = np.asarray([len(items) for items in _items(listed, np.searchsorted(listed.positions, shared))])
    varied = np.unique(lengths).size > 1  # a column of ones beside single items says nothing
    return varied and float(np.mean(values == lengths)) >= AGREEMENT


def _holds_name(catalog: AttributeCatalog, listed: AttributeColumn) -> bool:
    sample = np.arange(0, listed.positions.size, max(1, listed.positions.size // SAMPLE))[:SAMPLE]
    names = catalog.nodes.names
    held = [
        names[int(listed.positions[i])].lower() in {item.lower() for item in items}
        for i, items in zip(sample, _items(listed, sample), strict=True)
    ]
    return bool(held) and sum(held) / len(held) >= AGREEMENT


def _glosses(label: list[str], description: str) -> list[str]:
    """ "all *synonyms* (lemmas, …)": the noun right before the list's name in parentheses."""
    pattern = rf"([a-z]+)\s*\(\s*{re.escape(' '.join(label))}\b"
    return [_singular(m.group(1)) for m in re.finditer(pattern, description.lower())]


def _singular(word: str) -> str:
    """English's lemma; for a plural it does not know ("lemmas"), the regular singular."""
    known = noun_lemma(word)
    if known is not None:
        return known
    return word[:-1] if word.endswith("s") and not word.endswith("ss") else word
