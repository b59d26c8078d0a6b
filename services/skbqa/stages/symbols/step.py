"""Step 4 of af: candidate nodes per constant (exact names and aliases, then name-vector search, up to l_max), and
attribute-filtered sets for symbols with hard constraints. Serves the embedded strategy and the symbols service."""

from __future__ import annotations

import numpy as np

from skbqa.query.context import QueryContext
from skbqa.query.structured import AttributeConstraint, StructuredQuery, Symbol, parse_summary
from skbqa.stages.config import AfConfig
from skbqa.stages.symbols.candidates import constant_candidates
from skbqa.stages.symbols.filters import apply_constraints
from skbqa.stores.index import IndexStores
from skbqa.stores.lexicon import NAME
from skbqa.stores.lookups import Lookups


class SymbolStep:
    def __init__(self, stores: IndexStores, lookups: Lookups) -> None:
        self._stores = stores
        self._lookups = lookups

    def run(self, query: QueryContext, parsed: StructuredQuery, config: AfConfig) -> dict[str, np.ndarray]:
        """Ranked candidate positions per constant, and attribute-filtered sets per symbol."""
        nodes = self._stores.nodes
        with query.stage("symbols"):
            ranked: dict[str, np.ndarray] = {}
            constants = parsed.constants
            passing, extra_words = self.filter(parsed) if parsed.constraints else ({}, {})
            if constants:
                vectors = self.search_vectors(query, constants, extra_words)
                for constant, own in zip(constants, vectors, strict=True):
                    ranked[constant.name] = constant_candidates(
                        constant,
                        own,
                        lexicon=self._lookups.lexicon(),
                        names=self._stores.vectors["name"],
                        node_types=nodes.types,
                        type_code=self._lookups.type_codes.get(constant.type or ""),
                        l_max=config.l_max,
                        nodes=nodes,
                    )
            for name, allowed in passing.items():
                # A constant keeps its ranked candidates that pass (in order); a variable starts from the set.
                ranked[name] = ranked[name][np.isin(ranked[name], allowed)] if name in ranked else allowed
            if parsed.constraints:
                query.notes["parsed"] = parse_summary(parsed)
            ids = nodes.ids
            query.notes["constants"] = {
                c.name: {
                    "names": list(c.names),
                    "search_extra": extra_words.get(c.name, []),
                    "candidates": [int(ids[p]) for p in ranked.get(c.name, [])[:5]],
                }
                for c in constants
            }
        return ranked

    def filter(self, parsed: StructuredQuery) -> tuple[dict[str, np.ndarray], dict[str, list[str]]]:
        """Attribute constraints as hard filters: the nodes passing every applicable constraint, per symbol.

        What cannot be applied (an attribute or value the SKB does not have) joins, as the paper does, a
        constant's search string; for a variable it joins the question's text constraints for ranking.
        """
        by_symbol: dict[str, list[AttributeConstraint]] = {}
        for constraint in parsed.constraints:
            by_symbol.setdefault(constraint.symbol, []).append(constraint)
        passing: dict[str, np.ndarray] = {}
        extra: dict[str, list[str]] = {}
        for name, constraints in by_symbol.items():
            symbol = parsed.symbols.get(name)
            result = apply_constraints(self._lookups.catalog(), constraints, symbol.type if symbol else None)
            for skipped in result.not_applied:
                if skipped.reason == "name":
                    continue  # a name equality is the constant's own search string already
                if symbol is not None and symbol.is_constant:
                    extra.setdefault(name, []).append(skipped.search_text)
                else:
                    parsed.text_constraints.append(skipped.search_text)
                parsed.warnings.append(
                    f"constraint on {name} not applied ({skipped.reason}): {skipped.search_text}"
                )
            if result.positions is not None:
                passing[name] = result.positions
        return passing, extra

    def search_vectors(
        self, query: QueryContext, constants: list[Symbol], extra_words: dict[str, list[str]]
    ) -> list[np.ndarray]:
        """One embedding per search string of each constant. A string that is exactly a node's name reuses that
        node's stored name vector (the same text through the same encoder); only the others are encoded."""
        names = self._stores.vectors["name"]
        lexicon = self._lookups.lexicon()
        strings = [[" ".join([n, *extra_words.get(c.name, [])]) for n in c.names] for c in constants]
        found: dict[str, np.ndarray] = {}
        missing: list[str] = []
        for text in {t for group in strings for t in group}:
            exact = [e.position for e in lexicon.lookup(text, original=text) if e.kind == NAME]
            stored = names.vectors_for(np.asarray(exact[:1], np.int64)) if exact else np.zeros((0, 0))
            if stored.shape[0]:
                found[text] = stored[0]
            else:
                missing.append(text)
        for text, vector in zip(missing, query.encode_with_question(missing), strict=True):
            found[text] = vector
        return [np.stack([found[t] for t in group]) for group in strings]
