"""Training pairs (T_X, P', label) for the scorer and judge, mined from questions with known answers (GRAPE A.2).

For one chain of a question's AKG and its seeds:
1. *Supporting paths* (MineSupportingPaths): a breadth-first walk over relation patterns from the seeds finds
   the shortest patterns whose re-query contains every answer and ends on the answers' type. Those are Stop.
   Their strict prefixes are Continue. Everything else is Drop.
2. *Examples* follow the search as inference runs it: level by level, every continuation of the current paths is
   labelled. The paths carried to the next level are the Continue ones (as the beam would) plus two Drop ones,
   so deeper levels also yield negatives. Drop continuations are subsampled to the hardest few (highest
   bi-encoder cosine) plus a few random ones — A.2's hard negatives arise naturally here: sibling relations of
   the same node (relation corruption), the reverse direction (topology perturbation), the right pattern from a
   wrong seed (entity / target corruption) and shorter or longer paths than the supporting one (edge dropout,
   detours).
3. *Augmentations* keep the labels: the chain without its edge names (synonymic rewrite: only the question's
   words and the bi-encoder remain) and the chain without the target type.
Random-walk pseudo-questions (1–3 hops) add the topology diversity of A.2, since the synthetic QA templates are
almost all one hop.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from skbqa.stores.index import IndexStores
from skbqa.stores.vectors.base import VectorIndex
from skbqa.strategies.grape.anchors import Anchor
from skbqa.strategies.grape.beam import describe
from skbqa.strategies.grape.features import FEATURE_NAMES, ChainContext, PathTexts
from skbqa.strategies.grape.models import CONTINUE, DROP, STOP
from skbqa.strategies.grape.paths import Explorer, PathState, Step, root
from skbqa.strategies.grape.query_graph import AkgNode, Chain, ChainStep, words

HARD_NEGATIVES = 6
RANDOM_NEGATIVES = 4
CARRIED_NEGATIVES = 2
GOLD_WIDTH = 80  # patterns kept per level while looking for supporting paths


@dataclass
class Examples:
    features: list[np.ndarray] = field(default_factory=list)
    labels: list[np.ndarray] = field(default_factory=list)
    groups: list[np.ndarray] = field(default_factory=list)  # question index, so splits never share a question

    def add(self, x: np.ndarray, y: np.ndarray, group: int) -> None:
        if len(y):
            self.features.append(x)
            self.labels.append(y)
            self.groups.append(np.full(len(y), group, np.int64))

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if not self.labels:
            width = len(FEATURE_NAMES)
            return np.zeros((0, width), np.float32), np.zeros(0, np.int64), np.zeros(0, np.int64)
        return np.concatenate(self.features), np.concatenate(self.labels), np.concatenate(self.groups)


def supporting_patterns(
    explorer: Explorer,
    anchor: Anchor,
    answers: np.ndarray,
    answer_type: int,
    depth: int,
    rng: np.random.Generator,
) -> set[tuple[int, tuple[Step, ...]]]:
    """Keys (seed, steps) of the shortest patterns that reach every answer; empty if none within `depth`."""
    frontier = [root(int(s), r) for r, s in enumerate(anchor.seeds)]
    for _ in range(depth):
        children = [c for state in frontier for c in explorer.children(state)]
        gold = {
            c.key
            for c in children
            if c.steps[-1].node_type == answer_type and np.isin(answers, c.members, assume_unique=True).all()
        }
        if gold:
            return gold
        if len(children) > GOLD_WIDTH:
            children = [children[i] for i in rng.choice(len(children), GOLD_WIDTH, replace=False)]
        frontier = children
    return set()


def label_of(state: PathState, gold: set[tuple[int, tuple[Step, ...]]]) -> int:
    if state.key in gold:
        return STOP
    if any(state.seed == seed and steps[: state.depth] == state.steps for seed, steps in gold):
        return CONTINUE
    return DROP


def mine_chain(
    contexts: list[ChainContext],
    explorer: Explorer,
    texts: PathTexts,
    documents: VectorIndex,
    gold: set[tuple[int, tuple[Step, ...]]],
    *,
    depth: int,
    rep_pool: int,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:
    """Labelled features for one chain; `contexts` are the chain and its augmentations (same seeds, same paths)."""
    xs: list[np.ndarray] = []
    ys: list[np.ndarray] = []
    frontier = [root(int(s), r) for r, s in enumerate(contexts[0].anchor.seeds)]
    for _ in range(depth):
        children = [c for state in frontier for c in explorer.children(state)]
        if not children:
            break
        kept, x = describe(contexts[0], children, texts, documents, rep_pool=rep_pool, shortlist=None)
        labels = np.asarray([label_of(c, gold) for c in kept], np.int64)
        drops = np.flatnonzero(labels == DROP)
        drops = drops[np.argsort(-x[drops, 0], kind="stable")]  # hardest first: nearest the question
        rest = drops[HARD_NEGATIVES:]
        chosen = np.concatenate(
            [
                np.flatnonzero(labels != DROP),
                drops[:HARD_NEGATIVES],
                rng.choice(rest, min(RANDOM_NEGATIVES, rest.size), replace=False) if rest.size else rest,
            ]
        ).astype(np.int64)
        picked = [kept[i] for i in chosen]
        xs.append(x[chosen])
        ys.append(labels[chosen])
        for ctx in contexts[1:]:
            xs.append(describe(ctx, picked, texts, documents, rep_pool=rep_pool, shortlist=None)[1])
            ys.append(labels[chosen])
        carried = [kept[i] for i in np.flatnonzero(labels == CONTINUE)]
        carried += [kept[i] for i in drops[:CARRIED_NEGATIVES]]
        frontier = carried
        if not frontier:
            break
    if not xs:
        return np.zeros((0, len(FEATURE_NAMES)), np.float32), np.zeros(0, np.int64)
    return np.concatenate(xs), np.concatenate(ys)


@dataclass
class WalkQuery:
    question: str
    chain: Chain
    seed_name: str
    answers: np.ndarray


def random_walk_query(
    stores: IndexStores, explorer: Explorer, rng: np.random.Generator, *, max_answers: int = 200
) -> WalkQuery | None:
    """A 1–3 hop pseudo-question: a random typed walk of relation clusters from a random node; the answers are
    every instantiation of the walked pattern."""
    nodes = stores.nodes
    hops = int(rng.choice([1, 2, 3], p=[0.4, 0.35, 0.25]))
    seed = int(rng.integers(len(nodes)))
    state = root(seed, 0)
    for _ in range(hops):
        children = [c for c in explorer.children(state) if c.members.size <= 5 * max_answers]
        if not children:
            return None
        state = children[int(rng.integers(len(children)))]
    if not 1 <= state.members.size <= max_answers or seed in state.members:
        return None
    type_names = nodes.schema.node_type_names
    steps: list[ChainStep] = []
    at = int(nodes.types[seed])
    for step in state.steps:
        edge = explorer.edge_names[step.edge]
        steps.append(ChainStep(edge, step.walk, type_names[at], type_names[step.node_type], 1, 1))
        at = step.node_type
    target = type_names[at]
    via = " and then ".join(words(s.relation) for s in steps)
    question = f"Which {words(target)} are connected to {nodes.names[seed]} through {via}?"
    constant = AkgNode("c1", nodes.names[seed], type_names[int(nodes.types[seed])], (nodes.names[seed],))
    return WalkQuery(question, Chain(constant, tuple(steps), target), nodes.names[seed], state.members)
