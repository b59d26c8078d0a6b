"""The attribute catalog: what every (node type, attribute key) of a node table holds, as arrays filters can use.

Built once per node table (see `attr_columns` for the columns and their single-pass build), so AF-Retriever's
step 4 hard filters ("year >= 2012", "chromosome = 17") are array operations, never loops over nodes. The
catalog also maps the attribute names a question or an LLM's Cypher uses onto the stored keys
(`resolve_attribute`) and lists the small vocabularies a question may quote (`value_mentions`). Nothing here
knows any particular SKB.
"""

from __future__ import annotations

import gc
import logging
import time
from dataclasses import dataclass

import numpy as np

from skbqa.stores.attributes.columns import (
    SMALL_VOCABULARY,
    AttributeColumn,
    DateColumn,
    Kind,
    NumericColumn,
    build_columns,
)
from skbqa.stores.attributes.values import humanise, name_match_score, name_tokens
from skbqa.stores.nodes import NodeTable

__all__ = [
    "SMALL_VOCABULARY",
    "AttributeCatalog",
    "AttributeColumn",
    "DateColumn",
    "Kind",
    "NumericColumn",
    "ValueMention",
]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ValueMention:
    """A small vocabulary a question may quote ("on chromosome 17"), in the words a question would use."""

    node_type: str
    key: str
    label: str  # humanised key: "gene type"
    kind: Kind
    values: tuple[str, ...]  # stored spellings, most frequent first (list items for list-valued attributes)
    counts: tuple[int, ...]  # nodes per value


class AttributeCatalog:
    """Every attribute column of a node table, by node type; see the module docstring."""

    def __init__(self, nodes: NodeTable, columns: dict[str, dict[str, AttributeColumn]]) -> None:
        self.nodes = nodes
        self._columns = columns  # node type name → key → column
        self._type_positions: dict[str, np.ndarray] = {}
        self._tokens: dict[str, tuple[str, ...]] = {}

    @classmethod
    def build(cls, nodes: NodeTable) -> AttributeCatalog:
        started = time.perf_counter()
        # Building allocates millions of short-lived objects and no cycles; the cyclic collector would rescan
        # the whole (large) heap over and over, which costs more than the build at a million nodes.
        collecting = gc.isenabled()
        gc.disable()
        try:
            columns = build_columns(nodes)
        finally:
            if collecting:
                gc.enable()
        catalog = cls(nodes, columns)
        logger.info(
            "attribute catalog: %d nodes, %d columns in %.2fs",
            len(nodes),
            sum(len(c) for c in columns.values()),
            time.perf_counter() - started,
        )
        return catalog

    # ------------------------------------------------------------------------------------------ lookups

    def known_type(self, node_type: str | None) -> str | None:
        """`node_type` if the schema declares it, else None (an unknown label restricts nothing)."""
        if node_type is not None and self.nodes.schema.has_node_type(node_type):
            return node_type
        return None

    def type_positions(self, node_type: str | None) -> np.ndarray:
        """Sorted positions of the nodes of `node_type` (all nodes for None or an unknown type)."""
        name = self.known_type(node_type) or ""
        cached = self._type_positions.get(name)
        if cached is None:
            if name:
                code = self.nodes.schema.node_code(name)
                cached = np.flatnonzero(np.asarray(self.nodes.types) == code).astype(np.int64)
            else:
                cached = np.arange(len(self.nodes), dtype=np.int64)
            self._type_positions[name] = cached
        return cached

    def columns(self, node_type: str | None = None) -> list[AttributeColumn]:
        name = self.known_type(node_type)
        if name is not None:
            return list(self._columns.get(name, {}).values())
        return [c for by_key in self._columns.values() for c in by_key.values()]

    def column(self, node_type: str, key: str) -> AttributeColumn | None:
        return self._columns.get(node_type, {}).get(key)

    def columns_for(self, node_type: str | None, key: str) -> list[AttributeColumn]:
        """The column of `key` for one type, or for every type that has it when the type is None/unknown."""
        return [c for c in self.columns(node_type) if c.key == key]

    def resolve_attribute(self, node_type: str | None, name: str) -> str | None:
        """The stored key an attribute name means, tolerating case, separators, camelCase, plurals, word order,
        filler words and generic abbreviations ("publication year" → `year` or `publication_year`).

        Exact keys win, then the best `attr_values.name_match_score`; among equally good matches the most
        populated key wins, except for the extension rules, where several candidates mean the name is ambiguous
        ("id" among `entrez_id` and `ensembl_id`) → None.
        """
        counts: dict[str, int] = {}
        for column in self.columns(node_type):
            counts[column.key] = counts.get(column.key, 0) + column.count
        if name in counts:
            return name
        query = name_tokens(name)
        best: list[str] = []
        best_score = 0
        for key in counts:
            tokens = self._tokens.get(key)
            if tokens is None:
                tokens = self._tokens[key] = name_tokens(key)
            score = name_match_score(query, tokens)
            if score > best_score:
                best, best_score = [key], score
            elif score == best_score and score > 0:
                best.append(key)
        if not best or (best_score <= 2 and len(best) > 1):
            return None
        return max(best, key=lambda k: counts[k])

    def value_mentions(
        self, node_type: str | None = None, max_values: int = SMALL_VOCABULARY
    ) -> list[ValueMention]:
        """Small-vocabulary attributes (categorical, boolean, and list-valued ones with few distinct items) with
        their values in stored spelling, so a parser can spot "on chromosome 17" without knowing the schema."""
        mentions: list[ValueMention] = []
        for column in self.columns(node_type):
            if column.kind in ("categorical", "boolean"):
                order = np.argsort(-column.counts, kind="stable")
                values = tuple(column.display[i] for i in order.tolist())
                counts = tuple(int(column.counts[i]) for i in order.tolist())
            elif column.kind == "list":
                ranked = _list_vocabulary(column)
                occurrences = sum(c for _, c in ranked)
                if len(ranked) > 20 and 2 * len(ranked) > occurrences:
                    continue  # mostly one-off items (identifiers, aliases): nothing a question quotes
                values = tuple(v for v, _ in ranked)
                counts = tuple(c for _, c in ranked)
            else:
                continue
            if len(values) > max_values:
                continue
            label = humanise(column.key)
            mentions.append(ValueMention(column.node_type, column.key, label, column.kind, values, counts))
        return mentions


def _list_vocabulary(column: AttributeColumn) -> list[tuple[str, int]]:
    """The items of a list-valued column (single-item values included), as (stored spelling, nodes), most
    frequent first."""
    totals: dict[str, tuple[str, int]] = {}
    sep = column.separator or ""
    for code, shown in enumerate(column.display):
        if not sep or sep not in shown:
            norm = column.vocab[code]
            first, count = totals.get(norm, (shown, 0))
            totals[norm] = (first, count + int(column.counts[code]))
    for norm, (shown, codes) in column.items.items():
        first, count = totals.get(norm, (shown, 0))
        totals[norm] = (first, count + int(column.counts[codes].sum()))
    return sorted(totals.values(), key=lambda entry: -entry[1])
