"""What grounding (step 5) hands the later steps: the grounded target set, the evidence behind each answer, and
the scope expansion's outcome. Plain data, so the ranking stage and the wire codec read it without the algorithm."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from skbqa.query.structured import StructuredQuery, Triplet

EMPTY = np.zeros(0, np.int64)


@dataclass(frozen=True)
class TripletEvidence:
    """Why target candidates satisfy one triplet: parallel arrays, sorted by (target, other), capped per target.

    `other` holds nodes of the other symbol's final set connected to `target[i]` over the triplet (for a
    multi-hop triplet, the far end of a qualifying walk; for a self-loop triplet the target itself).
    """

    triplet_index: int
    triplet: Triplet
    other_symbol: str
    target: np.ndarray
    other: np.ndarray

    def for_node(self, node: int) -> np.ndarray:
        lo, hi = np.searchsorted(self.target, [node, node + 1])
        return self.other[lo:hi]


@dataclass
class GroundingResult:
    target: str
    candidates: np.ndarray  # the target's final set: sorted unique node positions
    sets: dict[str, np.ndarray | None]  # every symbol's final set; None = never restricted (lazy, all of its type)
    rounds: int  # passes over the triplets, including the final pass that confirmed the fixpoint
    converged: bool  # False when max_rounds stopped the loop first (the sets are then a superset of the fixpoint)
    evidence: list[TripletEvidence] = field(default_factory=list)  # one entry per triplet touching the target
    warnings: list[str] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return self.candidates.size == 0

    def evidence_for(self, node: int) -> dict[int, np.ndarray]:
        """triplet index → the other symbol's nodes supporting `node` over that triplet (capped)."""
        return {ev.triplet_index: ev.for_node(node) for ev in self.evidence}


@dataclass
class ScopeResult:
    """Outcome of the scope expansion (Algorithm 1 lines 5–10).

    `grounded` False means the graph strand does not apply (no triplet, no constant, or the target is not
    connected to a constant through triplets): the pipeline should fall back to VSS alone (step 7).
    """

    grounded: bool
    candidates: np.ndarray  # the target set of the last grounding (empty when ungrounded)
    scope: float  # the paper's l of the last grounding (0.0 when ungrounded)
    per_constant: int  # candidates per constant used by the last grounding (round(l), capped by l_max)
    iterations: list[tuple[float, int]]  # (l, |target set|) for every loop iteration, in order
    result: GroundingResult | None  # the last grounding
    reason: str = ""  # why the query is ungrounded
    # Parallel to `candidates`: the per-constant count with which each candidate was first grounded. Answers found
    # with the constants' best candidates are the focus; later ones come from widening the scope.
    levels: np.ndarray = field(default_factory=lambda: EMPTY)
    # The parse these answers ground, when the graph had none for the parse as given and one constant was dropped
    # (stages/grounding/relax.py): the later steps read it instead.
    relaxed: StructuredQuery | None = None
