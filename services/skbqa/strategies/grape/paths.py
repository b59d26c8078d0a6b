"""Path patterns over the CSR graph: relation-wise clusters, re-query and bound paths (GRAPE §3.3–3.4).

A `PathState` is a *relation pattern* from one seed node: the sequence of typed hops (edge, walk direction, type
of the nodes reached) plus the set of nodes the pattern reaches. Expanding a state enumerates the one-hop
neighbourhood of its nodes and groups it by (edge, direction, neighbour type): that group is the paper's
relation cluster C_r, and it becomes one child state. Children are scored once each (through a representative
member, chosen later by the beam), and a cluster's members are only expanded themselves when the child is kept
in the beam — the paper's deferred decompression, without one Python object per neighbour.

Everything is a gather over CSR arrays; no loop runs over nodes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from skbqa.stores.graph.base import GraphStore

HopWalk = Literal["out", "in"]
WALKS: tuple[HopWalk, ...] = ("out", "in")


@dataclass(frozen=True)
class Step:
    edge: int  # code in GraphStore.edge_names
    walk: HopWalk  # as walked from the seed
    node_type: int  # type code of the nodes this hop reaches


@dataclass(eq=False)
class PathState:
    seed: int
    seed_rank: int  # the seed's rank among its constant's candidates (0 = best)
    steps: tuple[Step, ...]
    members: np.ndarray  # sorted unique positions the pattern reaches from the seed (capped while exploring)
    share: float = 1.0  # members / all distinct neighbours of the expanded nodes: how selective the relation is
    representative: int = -1  # v*_r, chosen among the members by the beam
    score: float = 0.0
    label: str = ""  # the judge's S / C / D
    scores: dict[str, float] = field(default_factory=dict)

    @property
    def depth(self) -> int:
        return len(self.steps)

    @property
    def key(self) -> tuple[int, tuple[Step, ...]]:
        return self.seed, self.steps


def root(seed: int, seed_rank: int) -> PathState:
    return PathState(seed, seed_rank, (), np.asarray([seed], np.int64), representative=seed)


class Explorer:
    """Typed one-hop expansion and pattern re-query over a GraphStore."""

    def __init__(self, graph: GraphStore, node_types: np.ndarray, *, member_cap: int = 20_000) -> None:
        self.graph = graph
        self.node_types = node_types
        self.edge_names = graph.edge_names
        self.member_cap = member_cap

    def children(self, state: PathState) -> list[PathState]:
        """One child per relation cluster of the state's nodes. Past `member_cap` nodes the frontier is cut (in
        position order) so a hub cannot stall the search; re-query later walks the pattern uncapped."""
        frontier = state.members[: self.member_cap]
        out: list[PathState] = []
        reached_all: list[np.ndarray] = []
        for code, edge in enumerate(self.edge_names):
            for walk in WALKS:
                _, reached = self.graph.neighbour_pairs(frontier, edge, walk)
                if not reached.size:
                    continue
                reached_all.append(reached)
                types = self.node_types[reached]
                for t in np.unique(types):
                    step = Step(code, walk, int(t))
                    out.append(
                        PathState(
                            state.seed, state.seed_rank, (*state.steps, step), np.unique(reached[types == t])
                        )
                    )
        if out:
            total = np.unique(np.concatenate(reached_all)).size
            for child in out:
                child.share = child.members.size / total
        return out

    def levels(self, seed: int, steps: tuple[Step, ...]) -> list[np.ndarray]:
        """The nodes reached after each hop of a pattern, uncapped: levels[0] = [seed], levels[-1] = answers."""
        levels = [np.asarray([seed], np.int64)]
        for step in steps:
            _, reached = self.graph.neighbour_pairs(levels[-1], self.edge_names[step.edge], step.walk)
            reached = np.unique(reached)
            levels.append(reached[self.node_types[reached] == step.node_type])
        return levels

    def requery(self, seed: int, steps: tuple[Step, ...]) -> np.ndarray:
        """Every node that instantiates the pattern (GRAPE's path-pattern query for multi-answer questions)."""
        return self.levels(seed, steps)[-1]

    def bound_path(self, levels: list[np.ndarray], steps: tuple[Step, ...], answer: int) -> list[int]:
        """One concrete path seed → … → answer through the pattern's levels (the answer's evidence)."""
        path = [answer]
        at = answer
        for i in range(len(steps), 0, -1):
            step = steps[i - 1]
            back: HopWalk = "in" if step.walk == "out" else "out"
            _, previous = self.graph.neighbour_pairs(np.asarray([at]), self.edge_names[step.edge], back)
            previous = previous[np.isin(previous, levels[i - 1])]
            if not previous.size:  # cannot happen for a member of levels[i]; kept defensive for damaged graphs
                break
            at = int(previous.min())
            path.append(at)
        return path[::-1]
