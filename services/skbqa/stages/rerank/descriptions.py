"""Node descriptions for reranker prompts, at the three detail levels of AF-Retriever step 8.

A candidate is described by its type, name, attributes and text, then its relations:
- "full": every 1-hop relation (both directions) and the 2-hop paths through relations that are functional for
  the candidate (it has exactly one neighbour over that edge and direction: the paper's 1-1 / n-1 relations);
- "grounded": only relations incident to the retrieved non-target entity candidates the candidate is connected
  to (`evidence["grounded_neighbours"]`, node positions) — the paper's first context-overflow fallback. Without
  that evidence (e.g. a VSS-only candidate) nothing is known to be relevant, so this level has no relations;
- "bare": no relations at all — the paper's second fallback.

`fit_prompt` picks the most detailed level whose whole prompt fits the token budget (one level for every
description in a prompt, as in the paper), and as a last resort beyond the paper truncates the bare
descriptions evenly so a prompt is still sent. Grouping and labels mirror `ingest.documents.relation_groups`
(whose all-nodes pass is too slow per query), with roomier caps: a prompt holds far more than the encoder's
128 tokens.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from skbqa.ingest.documents import readable
from skbqa.models.chat import estimate_tokens
from skbqa.query.context import Candidate
from skbqa.stores.graph.base import GraphStore
from skbqa.stores.nodes import NodeTable

Level = Literal["full", "grounded", "bare", "truncated"]
LEVELS: tuple[Level, ...] = ("full", "grounded", "bare")

DEFAULT_MAX_TEXT_CHARS = 4000
DEFAULT_NAMES_PER_RELATION = 20
DEFAULT_NAMES_PER_SECOND_HOP = 5
INVERSE = " (inverse)"

Group = tuple[str, np.ndarray]  # (relation label, neighbour positions)


@dataclass(frozen=True)
class Description:
    position: int
    type_name: str  # readable node type, for the prompts' "{node_type}"
    full: str
    grounded: str
    bare: str

    def text(self, level: Level) -> str:
        # "truncated" starts from the bare text; fit_prompt does the cutting.
        return {"full": self.full, "grounded": self.grounded}.get(level, self.bare)


@dataclass(frozen=True)
class FittedPrompt:
    prompt: str
    level: Level


def grounded_neighbours(candidate: Candidate) -> frozenset[int]:
    """The non-target symbol candidates this candidate is connected to; empty when grounding said nothing."""
    raw: Any = candidate.evidence.get("grounded_neighbours")
    if raw is None:
        return frozenset()
    try:
        return frozenset(int(p) for p in np.asarray(raw).ravel())
    except (TypeError, ValueError):
        return frozenset()  # malformed evidence is ignored rather than failing the rerank


def node_relation_groups(graph: GraphStore, positions: Sequence[int]) -> dict[int, list[Group]]:
    """Per position: (label, neighbours) for each edge name and direction with neighbours, in
    `relation_groups` order (edge names in schema order, out before in). One batched gather per edge and
    direction, however many positions are asked for."""
    wanted = np.unique(np.asarray(list(positions), np.int64))
    groups: dict[int, list[Group]] = {int(p): [] for p in wanted}
    if wanted.size == 0:
        return groups
    for edge in graph.edge_names:
        for direction in ("out", "in"):
            sources, targets = graph.neighbour_pairs(wanted, edge, direction)
            if sources.size == 0:
                continue
            label = readable(edge) if direction == "out" else f"{readable(edge)}{INVERSE}"
            starts = np.flatnonzero(np.r_[True, sources[1:] != sources[:-1]])
            ends = np.r_[starts[1:], sources.size]
            for start, end in zip(starts, ends, strict=True):
                groups[int(sources[start])].append((label, targets[start:end]))
    return groups


class NodeDescriber:
    """Builds the three description levels for a batch of candidates (the top-k of one question)."""

    def __init__(
        self,
        nodes: NodeTable,
        graph: GraphStore,
        *,
        max_text_chars: int = DEFAULT_MAX_TEXT_CHARS,
        names_per_relation: int = DEFAULT_NAMES_PER_RELATION,
        names_per_second_hop: int = DEFAULT_NAMES_PER_SECOND_HOP,
    ) -> None:
        self._nodes = nodes
        self._graph = graph
        self._max_text_chars = max_text_chars
        self._names_per_relation = names_per_relation
        self._names_per_second_hop = names_per_second_hop

    def describe(self, candidates: Sequence[Candidate]) -> list[Description]:
        positions = [c.position for c in candidates]
        first = node_relation_groups(self._graph, positions)
        # Functional relations lead to exactly one neighbour; their own relations form the 2-hop paths.
        vias = {int(t[0]) for groups in first.values() for _, t in groups if t.size == 1}
        second = node_relation_groups(self._graph, sorted(vias))
        return [self._describe(c, first[c.position], second, grounded_neighbours(c)) for c in candidates]

    def _describe(
        self, candidate: Candidate, groups: list[Group], second: dict[int, list[Group]], grounded: frozenset[int]
    ) -> Description:
        position = candidate.position
        bare = self._own_content(position)
        full = self._relations(position, groups, second, keep=None)
        kept = self._relations(position, groups, second, keep=grounded) if grounded else ""
        return Description(
            position=position,
            type_name=readable(self._nodes.type_name(position)),
            full=_join(bare, full),
            grounded=_join(bare, kept),
            bare=bare,
        )

    def _own_content(self, position: int) -> str:
        nodes = self._nodes
        attrs = "; ".join(f"{readable(k)}: {v}" for k, v in nodes.attrs[position].items() if v not in (None, ""))
        text = _one_line(nodes.texts[position])[: self._max_text_chars]
        parts = [f"{_one_line(nodes.names[position])}.", f"Attributes: {attrs}." if attrs else "", text]
        return " ".join(p for p in parts if p)

    def _relations(
        self, position: int, groups: list[Group], second: dict[int, list[Group]], keep: frozenset[int] | None
    ) -> str:
        """1-hop then functional 2-hop relations; with `keep`, only those reaching a kept node."""
        names = self._nodes.names
        parts: list[str] = []
        for label, targets in groups:
            shown = _kept(targets, keep)
            if shown.size:
                parts.append(f"{label}: {self._names(shown, self._names_per_relation)}")
        for label, targets in groups:
            if targets.size != 1:
                continue
            via = int(targets[0])
            for label2, targets2 in second.get(via, []):
                # As in ingest.documents: only the intermediate's own outgoing relations (inverse ones list the
                # candidate's siblings), and never a path back to the candidate itself.
                if label2.endswith(INVERSE) or position in targets2:
                    continue
                shown = _kept(targets2, keep)
                if shown.size:
                    names2 = self._names(shown, self._names_per_second_hop)
                    parts.append(f"{label} {names[via]} → {label2}: {names2}")
        return "; ".join(parts)

    def _names(self, positions: np.ndarray, cap: int) -> str:
        shown = ", ".join(self._nodes.names[int(p)] for p in positions[:cap])
        return f"{shown} and {positions.size - cap} more" if positions.size > cap else shown


def _kept(targets: np.ndarray, keep: frozenset[int] | None) -> np.ndarray:
    if keep is None:
        return targets
    return targets[np.fromiter((int(t) in keep for t in targets), bool, targets.size)]


def _join(own: str, relations: str) -> str:
    return f"{own} Relations: {relations}." if relations else own


def _one_line(text: str) -> str:
    # Prompts list candidates one per row; newlines inside a text would blur where a row ends.
    return " ".join(text.split())


def fit_prompt(
    render: Callable[[list[str]], str], descriptions: Sequence[Description], budget_tokens: int
) -> FittedPrompt:
    """The most detailed prompt within `budget_tokens` (estimated): full, then grounded, then bare relations,
    then — beyond the paper, so a prompt can still be sent — bare descriptions cut to an even share of the room."""
    for level in LEVELS:
        prompt = render([d.text(level) for d in descriptions])
        if estimate_tokens(prompt) <= budget_tokens:
            return FittedPrompt(prompt, level)
    overhead = estimate_tokens(render(["" for _ in descriptions]))
    share = max(0, (budget_tokens - overhead) * 4) // max(1, len(descriptions))
    return FittedPrompt(render([_cut(d.bare, share) for d in descriptions]), "truncated")


def _cut(text: str, chars: int) -> str:
    return text if len(text) <= chars else text[: max(0, chars - 1)] + "…"
