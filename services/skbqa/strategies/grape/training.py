"""`skbqa train-grape`: train the scorer and judge on a synthetic SKB and store them in an index.

1. generate a synthetic bibliographic SKB with QA (`skbqa.synth`) in a temp dir and ingest it with the index's
   own encoder (features are cosines of that encoder, so training and use must share it);
2. mine labelled (T_X, P') pairs from the synthetic questions and from random-walk pseudo-questions
   (mining.py), parsing every question with the same parser the strategy uses;
3. hold out 20% of the questions (all their pairs), fit both models on the rest, and measure the held-out pairs
   (judge accuracy, scorer accuracy and AUC) and the held-out questions end to end (GRAPE answers alone, no
   af fill, beside the af strategy on the same questions);
4. save the models and a manifest (sizes, accuracies, seconds) under INDEX_DIR/grape/.
"""

from __future__ import annotations

import logging
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from skbqa.common.errors import IndexStoreError
from skbqa.query.context import QueryContext
from skbqa.query.encoder import Encoder
from skbqa.skb.model import QAItem
from skbqa.stores.index import IndexStores, open_index, read_manifest
from skbqa.strategies.af import AfStrategy
from skbqa.strategies.grape.anchors import find_anchors
from skbqa.strategies.grape.beam import BeamConfig
from skbqa.strategies.grape.features import ChainContext, PathTexts, build_context
from skbqa.strategies.grape.mining import Examples, mine_chain, random_walk_query, supporting_patterns
from skbqa.strategies.grape.models import DROP, LABELS, GrapeModels, Mlp, save_models
from skbqa.strategies.grape.paths import Explorer
from skbqa.strategies.grape.query_graph import Chain, QueryGraph
from skbqa.strategies.grape.strategy import GrapeStrategy, chain_contexts

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class TrainSettings:
    synth_nodes: int = 3000
    questions: int = 400
    walks: int = 300  # random-walk pseudo-questions (1–3 hops)
    seed: int = 0
    holdout: float = 0.2
    beam: BeamConfig = field(default_factory=BeamConfig)


@dataclass
class MiningStats:
    questions: int = 0
    chains: int = 0
    chains_supported: int = 0
    walks: int = 0
    walks_used: int = 0


def _augmented(ctx: ChainContext, texts: PathTexts, stores: IndexStores) -> list[ChainContext]:
    """The chain plus its label-preserving rewrites (edge names dropped; target type dropped)."""

    def rebuilt(chain: Chain) -> ChainContext:
        return build_context(
            chain,
            ctx.question,
            ctx.anchor,
            ctx.others,
            texts,
            type_names=ctx.type_names,
            edge_names=ctx.edge_names,
            node_types=stores.nodes.types,
        )

    out = [ctx]
    if ctx.chain.relations:
        out.append(rebuilt(ctx.chain.without_relations()))
    if ctx.chain.target_type:
        out.append(rebuilt(ctx.chain.untyped()))
    return out


def _majority_type(stores: IndexStores, answers: np.ndarray) -> int:
    return int(np.bincount(stores.nodes.types[answers]).argmax())


def mine_examples(
    stores: IndexStores,
    af: AfStrategy,
    encoder: Encoder,
    items: list[QAItem],
    settings: TrainSettings,
    rng: np.random.Generator,
) -> tuple[Examples, MiningStats]:
    """Pairs from every question (group = its index) and from `settings.walks` pseudo-questions (groups after)."""
    config = settings.beam
    texts = PathTexts(encoder)
    explorer = Explorer(stores.graph, stores.nodes.types, member_cap=config.member_cap)
    documents = stores.vectors["relations"]
    examples = Examples()
    stats = MiningStats(questions=len(items))

    def mine(contexts: list[ChainContext], gold: Any, group: int) -> None:
        x, y = mine_chain(
            contexts, explorer, texts, documents, gold, depth=config.depth, rep_pool=config.rep_pool, rng=rng
        )
        examples.add(x, y, group)

    for group, item in enumerate(items):
        answers = stores.nodes.positions(item.answers)
        answers = np.unique(answers[answers >= 0])
        if not answers.size:
            continue
        query = QueryContext(item.question, encoder)
        graph = QueryGraph.from_structured(af.parser.parse(query))
        for ctx in chain_contexts(stores, af, query, graph, texts, config.seeds):
            stats.chains += 1
            gold = supporting_patterns(
                explorer, ctx.anchor, answers, _majority_type(stores, answers), config.depth, rng
            )
            if gold:
                stats.chains_supported += 1
                mine(_augmented(ctx, texts, stores), gold, group)
    lexicon = af.lookups.lexicon()
    for i in range(settings.walks):
        walk = random_walk_query(stores, explorer, rng)
        stats.walks += 1
        if walk is None:
            continue
        query = QueryContext(walk.question, encoder)
        anchor = find_anchors(stores, lexicon, query, [walk.chain.constant], per_constant=config.seeds).get("c1")
        if anchor is None:
            continue
        ctx = build_context(
            walk.chain,
            query.embedding,
            anchor,
            [],
            texts,
            type_names=stores.nodes.schema.node_type_names,
            edge_names=stores.graph.edge_names,
            node_types=stores.nodes.types,
        )
        gold = supporting_patterns(
            explorer, anchor, walk.answers, _majority_type(stores, walk.answers), config.depth, rng
        )
        # Keep walks whose shortest support is the walked length, so the chain's hop count tells the truth.
        if gold and all(len(steps) == len(walk.chain.steps) for _, steps in gold):
            stats.walks_used += 1
            mine(_augmented(ctx, texts, stores), gold, len(items) + i)
    return examples, stats


def auc(scores: np.ndarray, positive: np.ndarray) -> float:
    """Probability that a random positive outscores a random negative (ties count half)."""
    pos, neg = scores[positive], scores[~positive]
    if not pos.size or not neg.size:
        return float("nan")
    ranks = np.argsort(np.argsort(np.concatenate([pos, neg]), kind="stable"), kind="stable") + 1.0
    values = np.concatenate([pos, neg])
    for v in np.unique(values):  # average ranks of ties
        tie = values == v
        ranks[tie] = ranks[tie].mean()
    return float((ranks[: pos.size].sum() - pos.size * (pos.size + 1) / 2) / (pos.size * neg.size))


def fit_models(
    x: np.ndarray, y: np.ndarray, groups: np.ndarray, holdout: float, rng: np.random.Generator
) -> tuple[Mlp, Mlp, dict[str, Any], np.ndarray]:
    """Fit on the non-held-out groups; return (scorer, judge, held-out report, held-out group ids)."""
    unique = np.unique(groups)
    held = (
        rng.choice(unique, max(1, round(holdout * unique.size)), replace=False) if unique.size > 1 else unique[:0]
    )
    test = np.isin(groups, held)
    train = ~test
    judge = Mlp.fit(x[train], y[train], 3)
    scorer = Mlp.fit(x[train], (y[train] != DROP).astype(np.int64), 2)
    report: dict[str, Any] = {"pairs_train": int(train.sum()), "pairs_heldout": int(test.sum())}
    report["label_counts"] = {LABELS[c]: int((y == c).sum()) for c in range(3)}
    if test.any():
        predicted = judge.proba(x[test]).argmax(axis=1)
        truth = y[test]
        recalls = {LABELS[c]: float((predicted[truth == c] == c).mean()) for c in range(3) if (truth == c).any()}
        report["judge_accuracy"] = round(float((predicted == truth).mean()), 4)
        report["judge_balanced_accuracy"] = round(float(np.mean(list(recalls.values()))), 4)
        report["judge_recall"] = {k: round(v, 4) for k, v in recalls.items()}
        s_rank = scorer.proba(x[test])[:, 1]
        positive = truth != DROP
        report["scorer_accuracy"] = round(float(((s_rank >= 0.5) == positive).mean()), 4)
        report["scorer_auc"] = round(auc(s_rank, positive), 4)
    return scorer, judge, report, held


def heldout_questions(
    stores: IndexStores, af: AfStrategy, models: GrapeModels, encoder: Encoder, items: list[QAItem]
) -> dict[str, Any]:
    """GRAPE's own answers (no af fill) and af's, on the held-out synthetic questions."""
    grape = GrapeStrategy(stores, af, models=models, fill=False)
    # hit@1 and recall@20 as skbqa.eval defines them (computed here: eval sits above the stage packages).
    rows: dict[str, list[tuple[float, float]]] = {"grape": [], "af": []}
    calls = []
    for item in items:
        gold = set(item.answers)
        for name, strategy in (("grape", grape), ("af", af)):
            query = QueryContext(item.question, encoder)
            ranked = [int(stores.nodes.ids[c.position]) for c in strategy.retrieve(query, 20)]
            rows[name].append((float(bool(ranked) and ranked[0] in gold), len(gold & set(ranked)) / len(gold)))
            if name == "grape":
                calls.append(query.notes["grape"]["model_calls"])

    def mean(name: str, column: int) -> float:
        return round(100.0 * float(np.mean([r[column] for r in rows[name]])), 2) if rows[name] else 0.0

    return {
        "questions": len(items),
        "grape_no_fill": {"hit@1": mean("grape", 0), "recall@20": mean("grape", 1)},
        "af": {"hit@1": mean("af", 0), "recall@20": mean("af", 1)},
        "model_calls_per_question": round(float(np.mean(calls)) if calls else 0.0, 2),
    }


def train_grape(
    index_dir: Path, settings: TrainSettings, *, encoder: Encoder | None = None, progress: bool = False
) -> dict[str, Any]:
    """Train on a fresh synthetic SKB and save the models into `index_dir`; returns the saved manifest."""
    from skbqa.ingest.builder import ingest
    from skbqa.models.local_encoder import encoder_from_name
    from skbqa.skb.qa import load_qa
    from skbqa.synth.generator import generate

    started = time.perf_counter()
    index_dir = Path(index_dir)
    built_with = read_manifest(index_dir).get("encoder", {}).get("name", "")
    if encoder is None:
        encoder = encoder_from_name(built_with)
    elif encoder.name != built_with:
        raise IndexStoreError(f"{index_dir} was built with encoder {built_with!r}, not {encoder.name!r}")
    seconds: dict[str, float] = {}
    rng = np.random.default_rng(settings.seed)
    with tempfile.TemporaryDirectory(prefix="skbqa-grape-") as tmp:
        bundle, synth_index = Path(tmp) / "bundle", Path(tmp) / "index"
        generate(bundle, nodes=settings.synth_nodes, seed=settings.seed, questions=settings.questions)
        ingest(bundle, synth_index, encoder, progress=progress)
        seconds["synth_and_ingest"] = round(time.perf_counter() - started, 2)
        stores = open_index(synth_index)
        af = AfStrategy(stores)
        items = load_qa(bundle / "qa.jsonl")
        mark = time.perf_counter()
        examples, stats = mine_examples(stores, af, encoder, items, settings, rng)
        seconds["mining"] = round(time.perf_counter() - mark, 2)
        x, y, groups = examples.arrays()
        if not y.size:
            raise IndexStoreError("no training pairs could be mined from the synthetic SKB; try more --questions")
        mark = time.perf_counter()
        scorer, judge, report, held = fit_models(x, y, groups, settings.holdout, rng)
        seconds["fit"] = round(time.perf_counter() - mark, 2)
        manifest: dict[str, Any] = {
            "encoder": encoder.name,
            "synth": {"nodes": settings.synth_nodes, "questions": len(items), "seed": settings.seed},
            "mining": vars(stats),
            "heldout_pairs": report,
            "beam": vars(settings.beam),
        }
        models = GrapeModels(scorer, judge, manifest)
        mark = time.perf_counter()
        held_items = [items[int(g)] for g in np.sort(held) if g < len(items)]
        manifest["heldout_questions"] = heldout_questions(stores, af, models, encoder, held_items)
        seconds["heldout_eval"] = round(time.perf_counter() - mark, 2)
    seconds["total"] = round(time.perf_counter() - started, 2)
    manifest["seconds"] = seconds
    save_models(index_dir, models)
    logger.info("grape models saved in %s", index_dir / "grape")
    return manifest
