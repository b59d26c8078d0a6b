"""GRAPE: the anonymous query graph, beam search and re-query on a small ingested synthetic SKB with models
trained in the test (seconds), the judge's Stop / Continue / Drop on constructed paths, the missing-model error,
the weights round trip and `skbqa train-grape`."""

from __future__ import annotations

import argparse
import json
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from skbqa.common.errors import IndexStoreError
from skbqa.query.context import QueryContext
from skbqa.query.structured import StructuredQuery, Symbol, Triplet
from skbqa.skb.model import QAItem
from skbqa.stores.index import IndexStores, open_index
from skbqa.strategies.af import AfStrategy
from skbqa.strategies.grape.anchors import find_anchors
from skbqa.strategies.grape.beam import BeamConfig, describe
from skbqa.strategies.grape.features import FEATURE_NAMES, PathTexts, build_context
from skbqa.strategies.grape.models import CONTINUE, DROP, STOP, GrapeModels, load_models, save_models
from skbqa.strategies.grape.paths import Explorer, PathState, Step, root
from skbqa.strategies.grape.query_graph import AkgNode, Chain, ChainStep, QueryGraph
from skbqa.strategies.grape.strategy import GrapeStrategy
from skbqa.strategies.grape.training import TrainSettings, fit_models, mine_examples

# --------------------------------------------------------------------------------------------- query graph


def _parsed() -> StructuredQuery:
    """Authors affiliated with Fidiria College who wrote a paper published in Journal of Maize."""
    return StructuredQuery(
        target="y",
        symbols={
            "y": Symbol("y", "author"),
            "p": Symbol("p", "paper"),
            "c1": Symbol("c1", "institution", ("Fidiria College",)),
            "c2": Symbol("c2", "venue", ("Journal of Maize",)),
        },
        triplets=[
            Triplet("y", "affiliated_with", "c1"),
            Triplet("y", "writes", "p"),
            Triplet("p", "published_in", "c2"),
        ],
    )


def test_query_graph_binds_constants_and_anonymises_variables() -> None:
    graph = QueryGraph.from_structured(_parsed())
    assert [c.label for c in graph.constants] == ["Fidiria College", "Journal of Maize"]
    assert {n.label for n in graph.nodes.values() if not n.is_constant} == {"X1", "X2"}
    assert graph.nodes["y"].type == "author" and graph.nodes["y"].names == ()
    assert len(graph.incident("y")) == 2  # T_X of the target
    near, far = graph.chains()
    # Fidiria College ← affiliated_with ← X: one hop walked against the edge.
    assert [(s.relation, s.walk) for s in near.steps] == [("affiliated_with", "in")]
    # Journal of Maize ← published_in ← paper ← writes ← author: two hops through the anonymous paper.
    assert [(s.relation, s.walk, s.to_type) for s in far.steps] == [
        ("published_in", "in", "paper"),
        ("writes", "in", "author"),
    ]
    assert (far.min_hops, far.max_hops, far.target_type) == (2, 2, "author")
    assert far.text == "paper published in venue; author writes paper"  # anonymous: types, no entity names
    assert far.without_relations().relations == frozenset()
    assert "Journal of Maize (venue) -published_in-> X2" not in graph.describe()
    assert "X2 (paper) -published_in-> Journal of Maize (venue)" in graph.describe()


def test_query_graph_without_a_path_to_the_target_has_no_chain() -> None:
    parsed = StructuredQuery(
        target="y",
        symbols={"y": Symbol("y", "gene"), "c1": Symbol("c1", "disease", ("asthma",))},
        triplets=[],
    )
    assert QueryGraph.from_structured(parsed).chains() == []


# --------------------------------------------------------------------------------------------- synthetic SKB


@dataclass
class Trained:
    stores: IndexStores
    af: AfStrategy
    models: GrapeModels
    items: list[QAItem]
    report: dict


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory, onnx_encoder) -> Trained:
    """A 400-node synthetic SKB ingested with the real encoder; models mined and fitted on it (seconds)."""
    from skbqa.ingest.builder import ingest
    from skbqa.skb.qa import load_qa
    from skbqa.synth.generator import generate

    root_dir = tmp_path_factory.mktemp("grape")
    generate(root_dir / "bundle", nodes=400, seed=5, questions=80)
    ingest(root_dir / "bundle", root_dir / "index", onnx_encoder, progress=False)
    stores = open_index(root_dir / "index")
    af = AfStrategy(stores)
    items = load_qa(root_dir / "bundle" / "qa.jsonl")
    rng = np.random.default_rng(0)
    examples, _ = mine_examples(stores, af, onnx_encoder, items, TrainSettings(walks=120), rng)
    x, y, groups = examples.arrays()
    scorer, judge, report, _ = fit_models(x, y, groups, 0.2, rng)
    return Trained(stores, af, GrapeModels(scorer, judge, {}), items, report)


def _question(trained: Trained, pattern: str) -> QAItem:
    return next(item for item in trained.items if re.match(pattern, item.question))


def test_models_separate_held_out_pairs(trained: Trained) -> None:
    # Balanced: Drop is ~90% of the pairs, so plain accuracy would reward a judge that always drops.
    assert trained.report["judge_balanced_accuracy"] > 0.8
    assert trained.report["scorer_auc"] > 0.9


def test_beam_search_finds_the_answer_path_and_every_answer(trained: Trained, onnx_encoder) -> None:
    item = _question(trained, r"Which papers were written by ")
    author = item.question.removeprefix("Which papers were written by ").rstrip("?")
    grape = GrapeStrategy(trained.stores, trained.af, models=trained.models, fill=False)
    query = QueryContext(item.question, onnx_encoder)
    ranked = grape.retrieve(query, 50)
    ids = trained.stores.nodes.ids
    assert {int(ids[c.position]) for c in ranked} == set(item.answers)  # all answers, nothing else
    notes = query.notes["grape"]
    [chain] = notes["chains"]
    assert chain["winner"] == f"{author} (author) -writes-> paper"
    assert notes["fallback"] is None and notes["model_calls"] >= 2 and notes["expansions"] >= 1
    evidence = ranked[0].evidence["paths"][0]
    assert evidence["judge"] == "S"
    assert evidence["path"][0]["name"] == author
    assert evidence["path"][-1]["id"] == int(ids[ranked[0].position])


def test_two_constants_join_on_the_target(trained: Trained, onnx_encoder) -> None:
    item = _question(trained, r"Which papers written by .+ were published in ")
    grape = GrapeStrategy(trained.stores, trained.af, models=trained.models, fill=False)
    query = QueryContext(item.question, onnx_encoder)
    ranked = grape.retrieve(query, 100)
    ids = trained.stores.nodes.ids
    both = [int(ids[c.position]) for c in ranked if c.scores["join"] == 2.0]
    assert set(both) == set(item.answers)  # the intersection of both chains' patterns is the answer set
    assert [int(ids[c.position]) for c in ranked[: len(both)]] == both  # and ranks first


def test_requery_returns_every_instantiation_of_the_pattern(trained: Trained) -> None:
    stores = trained.stores
    graph, types = stores.graph, stores.nodes.types
    writes = graph.edge_names.index("writes")
    paper = stores.nodes.schema.node_code("paper")
    authors = np.flatnonzero(types == stores.nodes.schema.node_code("author"))
    prolific = int(authors[np.argmax(graph.degree(authors, "writes", "out"))])
    # A member cap of 1 cuts exploration, never the re-query.
    tiny = Explorer(graph, types, member_cap=1)
    pattern = (Step(writes, "out", paper), Step(writes, "in", int(types[prolific])))
    coauthors = tiny.requery(prolific, pattern)
    expected = np.unique(
        graph.neighbour_pairs(graph.neighbours(np.asarray([prolific]), "writes", "out"), "writes", "in")[1]
    )
    assert coauthors.size > 1 and np.array_equal(coauthors, expected)
    levels = tiny.levels(prolific, pattern)
    for answer in coauthors[:5]:
        bound = tiny.bound_path(levels, pattern, int(answer))
        assert bound[0] == prolific and bound[-1] == answer and bound[1] in levels[1]


def test_judge_stops_continues_and_drops(trained: Trained, onnx_encoder) -> None:
    """Author → writes → paper → published_in → venue: the venue path is complete (Stop), its paper prefix is
    not yet (Continue), the author's institution is irrelevant (Drop)."""
    stores = trained.stores
    types = stores.nodes.schema.node_type_names
    code = stores.nodes.schema.node_code
    edge = stores.graph.edge_names.index
    papers_of = Explorer(stores.graph, stores.nodes.types)
    authors = np.flatnonzero(stores.nodes.types == code("author"))
    author = int(authors[np.argmax(stores.graph.degree(authors, "writes", "out"))])
    name = stores.nodes.names[author]
    chain = Chain(
        AkgNode("c1", name, "author", (name,)),
        (
            ChainStep("writes", "out", "author", "paper", 1, 1),
            ChainStep("published_in", "out", "paper", "venue", 1, 1),
        ),
        "venue",
    )
    query = QueryContext(f"Which venues published papers written by {name}?", onnx_encoder)
    anchor = find_anchors(stores, trained.af.lookups.lexicon(), query, [chain.constant], per_constant=3)["c1"]
    assert anchor.seeds[0] == author
    texts = PathTexts(onnx_encoder)
    ctx = build_context(
        chain,
        query.embedding,
        anchor,
        [],
        texts,
        type_names=types,
        edge_names=stores.graph.edge_names,
        node_types=stores.nodes.types,
    )
    start = root(author, 0)
    by_steps = {c.steps: c for c in papers_of.children(start)}
    prefix = by_steps[(Step(edge("writes"), "out", code("paper")),)]
    complete = {c.steps: c for c in papers_of.children(prefix)}[
        (Step(edge("writes"), "out", code("paper")), Step(edge("published_in"), "out", code("venue")))
    ]
    wrong = by_steps[(Step(edge("affiliated_with"), "out", code("institution")),)]
    cases: list[PathState] = [prefix, complete, wrong]
    rows = [describe(ctx, [c], texts, stores.vectors["relations"], rep_pool=128, shortlist=None)[1] for c in cases]
    decisions = [int(trained.models.decide(r)[0]) for r in rows]
    assert decisions == [CONTINUE, STOP, DROP]
    scores = [float(trained.models.score(r)[0]) for r in rows]
    assert scores[0] > 0.5 and scores[1] > 0.5 and scores[2] < 0.5


# --------------------------------------------------------------------------------------------- storage


def test_missing_models_name_the_training_command(trained: Trained, onnx_encoder) -> None:
    grape = GrapeStrategy(trained.stores, trained.af)  # no models injected, none saved in the index
    with pytest.raises(IndexStoreError, match=r"skbqa train-grape --index"):
        grape.retrieve(QueryContext("Which papers cite anything?", onnx_encoder), 10)
    grape.warm(onnx_encoder)  # warming an index without models must not fail the other strategies


def test_weights_round_trip(trained: Trained, tmp_path: Path) -> None:
    models = GrapeModels(trained.models.scorer, trained.models.judge, {"note": "round trip"})
    save_models(tmp_path, models)
    loaded = load_models(tmp_path)
    x = np.random.default_rng(1).normal(size=(50, len(FEATURE_NAMES)))
    assert np.allclose(loaded.judge.proba(x), models.judge.proba(x))
    assert np.allclose(loaded.score(x), models.score(x))
    assert loaded.manifest["note"] == "round trip"
    manifest = tmp_path / "grape" / "manifest.json"
    data = json.loads(manifest.read_text())
    data["features"] = data["features"][:-1]
    manifest.write_text(json.dumps(data))
    with pytest.raises(IndexStoreError, match="other features"):
        load_models(tmp_path)


def test_train_grape_command_saves_models_into_the_index(trained: Trained, tmp_path: Path) -> None:
    from skbqa.cli.grape import add_train_grape_parser, run_train_grape

    parser = argparse.ArgumentParser()
    add_train_grape_parser(parser.add_subparsers(dest="command"))
    index = trained.stores.directory
    args = parser.parse_args(
        ["train-grape", "--index", str(index), "--synth-nodes", "150", "--questions", "30", "--walks", "30"]
    )
    before = sorted(p.name for p in index.iterdir())
    try:
        assert run_train_grape(args) == 0
        assert sorted(p.name for p in index.iterdir()) == sorted([*before, "grape"])  # only grape/ is added
        models = load_models(index)
        assert models.manifest["heldout_pairs"]["pairs_train"] > 0
        assert {"synth_and_ingest", "mining", "fit", "total"} <= set(models.manifest["seconds"])
        assert models.manifest["beam"]["beam"] == BeamConfig().beam == 10
    finally:
        import shutil

        shutil.rmtree(index / "grape", ignore_errors=True)
