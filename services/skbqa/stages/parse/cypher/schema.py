"""Schema resolution for the builder in `skbqa.stages.parse.cypher.parser`.

Labels and edge types are checked against the schema: strict mode drops unknown ones, lenient mode maps them to
the most similar known type (the `similarity` callable, else `closest_type`). Also the name-like keys of a node
type, and the direction of an edge checked against its schema signatures (flipped when only the reverse fits).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from typing import Literal

from skbqa.query.structured import Triplet
from skbqa.skb.schema import Schema
from skbqa.stages.parse.cypher.syntax_tree import RelPat, short

SIMILARITY_THRESHOLD = 0.8  # difflib ratio on normalised names for lenient type mapping

Similarity = Callable[[str, list[str]], str | None]
_DROP = "\x00drop"  # a relationship whose only types are unknown (strict): its triplet is dropped


def _normalise_type_name(name: str) -> str:
    name = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name).lower()
    words = []
    for word in re.split(r"[^0-9a-z]+", name):
        if len(word) > 4 and word.endswith("ies"):
            word = word[:-3] + "y"
        elif len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        if word:
            words.append(word)
    return " ".join(words)


def closest_type(name: str, candidates: list[str]) -> str | None:
    """Built-in lenient matching: equal after normalising case, separators, camelCase and plurals (in any word
    order), else the best difflib ratio on the normalised names if at least `SIMILARITY_THRESHOLD`."""
    norm = _normalise_type_name(name)
    normalised = [_normalise_type_name(c) for c in candidates]
    for cand, cn in zip(candidates, normalised, strict=True):
        if cn == norm:
            return cand
    words = sorted(norm.split())
    for cand, cn in zip(candidates, normalised, strict=True):
        if sorted(cn.split()) == words:
            return cand
    best, best_score = None, SIMILARITY_THRESHOLD
    for cand, cn in zip(candidates, normalised, strict=True):
        score = difflib.SequenceMatcher(None, norm, cn).ratio()
        if score >= best_score and (best is None or score > best_score):
            best, best_score = cand, score
    return best


class SchemaResolver:
    """Schema lookups for one parse, cached per name, with their warnings."""

    rel_types: dict[RelPat, tuple[str, ...]]  # resolved types per relationship (set per part by the builder)

    def __init__(
        self, schema: Schema | None, mode: str, similarity: Similarity | None, warnings: list[str]
    ) -> None:
        self.schema = schema
        self.mode = mode
        self.similarity = similarity
        self.warnings = warnings
        self.type_cache: dict[tuple[str, str], str | None] = {}
        self.impossible_choice = False  # set when a chosen alternation type cannot connect its nodes (strict)

    def warn(self, message: str) -> None:
        if message not in self.warnings:
            self.warnings.append(message)

    # types against the schema
    def resolve_type(self, kind: Literal["label", "edge type"], name: str) -> str | None:
        """The schema type for a label / edge type, None when it is dropped (strict) or has no match (lenient)."""
        if self.schema is None:
            return name
        known = self.schema.node_type_names if kind == "label" else self.schema.edge_names
        if name in known:
            return name
        cache_key = (kind, name)
        if cache_key in self.type_cache:
            return self.type_cache[cache_key]
        result: str | None = None
        if self.mode == "strict":
            self.warn(f"{kind} '{name}' is not in the schema and was dropped (strict)")
        else:
            if self.similarity is not None:
                try:
                    guess = self.similarity(name, list(known))
                except Exception as exc:
                    self.warn(f"the similarity function failed on {kind} '{name}': {type(exc).__name__}")
                    guess = None
                result = guess if isinstance(guess, str) and guess in known else None
            if result is None:
                result = closest_type(name, known)
            if result is None:
                self.warn(f"{kind} '{name}' is not in the schema and matches no known type; ignored (lenient)")
            else:
                self.warn(f"{kind} '{name}' is not in the schema; mapped to '{result}' (lenient)")
        self.type_cache[cache_key] = result
        return result

    def name_keys(self, type_name: str | None) -> set[str]:
        keys = {"name", "title"}
        if self.schema is not None:
            for t in self.schema.node_types:
                if type_name is None or t.name == type_name:
                    keys.add(t.name_attr.lower())
        return keys

    def resolve_rel(self, rel: RelPat) -> tuple[str, ...]:
        if not rel.types:
            return ()
        resolved: list[str] = []
        for t in rel.types:
            r = self.resolve_type("edge type", t)
            if r is None and self.mode != "strict":
                return ()  # an unmatched alternative means any edge type (lenient)
            if r is not None and r not in resolved:
                resolved.append(r)
        return tuple(resolved) if resolved else (_DROP,)

    def triplet(
        self, rel: RelPat, a: str, b: str, choice: dict[RelPat, str], types: dict[str, str | None]
    ) -> Triplet | None:
        resolved = self.rel_types[rel]
        if resolved == (_DROP,):
            self.warn(f"relationship {short(rel)} dropped: no edge type in the schema (strict)")
            return None
        edge = choice.get(rel) or (resolved[0] if len(resolved) == 1 else None)
        head, tail = (b, a) if rel.direction == "in" else (a, b)
        direction: Literal["out", "undirected"] = "undirected" if rel.direction == "undirected" else "out"
        if edge is not None and self.schema is not None:
            sigs = self.schema.signatures(edge)

            def fits(h: str | None, t: str | None) -> bool:
                return any((h is None or s == h) and (t is None or d == t) for s, d in sigs)

            th, tt = types.get(head), types.get(tail)
            if fits(th, tt) or (direction == "undirected" and fits(tt, th)):
                pass
            elif fits(tt, th):
                self.warn(
                    f"edge '{edge}' fits the schema only as ({tt or 'any'})->({th or 'any'}); "
                    f"({head})-({tail}) flipped"
                )
                head, tail = tail, head
            elif self.mode == "strict":
                self.impossible_choice = self.impossible_choice or rel in choice
                self.warn(
                    f"edge '{edge}' cannot connect ({th}) and ({tt}) in the schema; triplet dropped (strict)"
                )
                return None
            else:
                self.warn(f"edge '{edge}' cannot connect ({th}) and ({tt}) in the schema; kept (lenient)")
        return Triplet(head, edge, tail, direction, rel.min_hops, rel.max_hops)
