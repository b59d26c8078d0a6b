"""SAGE: the offline similarity graph (rich-text nodes, entity linking, IVF top-M candidates, percentile pruning,
OR logic, metadata, storage) and the `sage` strategy (seeds + k′ fused-ranked neighbours, the edge policy)."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

from skbqa.common.errors import IndexStoreError, InvalidInputError
from skbqa.engine.answers import Answer, answer
from skbqa.engine.embedded import EmbeddedEngine
from skbqa.ingest.builder import ingest
from skbqa.skb.schema import NodeType, Schema
from skbqa.stages.ranking.fusion import min_max
from skbqa.stores.lexicon import NameLexicon, normalise
from skbqa.stores.nodes import NodeTable
from skbqa.strategies.sage import signals as sig
from skbqa.strategies.sage.ann import IvfIndex, exact_top_m, recall_at_m
from skbqa.strategies.sage.corpus import Vocabulary, tokenize
from skbqa.strategies.sage.entities import link_entities
from skbqa.strategies.sage.graph_build import SageBuildConfig
from skbqa.strategies.sage.rich import rich_text
from skbqa.strategies.sage.store import BITS, SIMILARITY_SIGNALS, SageGraph
from skbqa.strategies.sage.strategy import BM25_WEIGHT, SageStrategy
from tests.helpers import sample_with_sage

DESCRIPTION = 'Find the cellular component described by the phrase "that surround a chromoplast and form the".'
RELATIONAL = (
    "List the biological processes that are subtypes of fatty acid metabolic process and related to hydroperoxide."
)


def _table(rows: list[tuple[str, str, str, dict[str, Any]]]) -> NodeTable:
    """A node table from (type, name, text, attrs) rows."""
    types = sorted({r[0] for r in rows})
    schema = Schema("t", "", [NodeType(t) for t in types], [])
    return NodeTable(
        schema,
        np.arange(len(rows), dtype=np.int64),
        np.asarray([types.index(r[0]) for r in rows], np.int16),
        [r[1] for r in rows],
        [r[2] for r in rows],
        [r[3] for r in rows],
    )


# ------------------------------------------------------------------------------------------ text and entities


def test_corpus_keeps_document_boundaries_and_shares_the_vocabulary() -> None:
    vocabulary = Vocabulary()
    corpus = tokenize(["Golgi apparatus", "", "the golgi"], vocabulary)
    assert corpus.indptr.tolist() == [0, 2, 2, 4]
    assert [vocabulary.words[i] for i in corpus.ids] == ["golgi", "apparatus", "the", "golgi"]
    assert tokenize(["GOLGI"], vocabulary).ids.tolist() == [corpus.ids[0]]


def test_rich_text_counts_content_beyond_name_attributes_and_type_template() -> None:
    genes = [
        (
            "gene",
            f"kinase {i}",
            f"kinase {i} (K{i}). Also known as ALPHA{i}. Human gene at band 1q{i}.",
            {"aliases": f"ALPHA{i}"},
        )
        for i in range(60)
    ]
    terms = [
        ("term", "spindle assembly", "The aggregation of microtubules forming the mitotic spindle apparatus.", {}),
        ("term", "golgi membrane", "Golgi membrane.", {}),  # restates its name: no description
    ]
    nodes = _table(genes + terms)
    rich = rich_text(nodes, min_content_words=3)
    assert not rich.mask[:60].any()  # aliases are attribute values; "also known human band" the gene template
    assert {"also", "known", "human", "band"} <= set(rich.templates["gene"])
    assert rich.mask[60] and not rich.mask[61]
    assert rich.content_words[60] == 5  # aggregation microtubules forming mitotic apparatus ("spindle": the name)


def test_entities_link_names_inside_texts_without_self_mentions_or_rare_and_generic_names() -> None:
    rows = [
        ("term", "spindle", "A microtubule array; the spindle pulls chromosomes apart.", {}),
        ("term", "golgi apparatus", "Stacked membranes that sort proteins near the nucleus.", {}),
        ("term", "nucleus", "The organelle holding DNA, next to the golgi apparatus.", {}),
        ("term", "kinetochore", "Where the spindle attaches near the golgi apparatus; unlike the nucleus.", {}),
        ("term", "aster", "Microtubules of the spindle around the nucleus; only here: kinetochore.", {}),
    ]
    nodes = _table(rows)
    lexicon = NameLexicon.build(nodes)
    entities = link_entities(nodes, lexicon, np.arange(5), max_df_share=1.0)
    linked = {(int(r), entities.keys[c]) for r, c in zip(*entities.matrix.nonzero(), strict=True)}
    # Node 0's own "spindle" is not its entity; "kinetochore" is in one text only, so it bridges nothing.
    assert linked == {
        (3, "spindle"), (4, "spindle"),
        (2, "golgi apparatus"), (3, "golgi apparatus"),
        (1, "nucleus"), (3, "nucleus"), (4, "nucleus"),
    }  # fmt: skip
    for row, key in linked:
        assert f" {key} " in f" {normalise(rows[row][2])} "
    # The shared-entity score is the summed IDF of the shared entities (each cell holds sqrt(IDF)).
    product = (entities.matrix @ entities.matrix.T).toarray()
    idf = dict(zip(entities.keys, np.log(5 / entities.df), strict=True))
    assert product[3, 4] == pytest.approx(idf["spindle"] + idf["nucleus"], rel=1e-5)
    assert product[2, 3] == pytest.approx(idf["golgi apparatus"], rel=1e-5)
    # A cap of 2 texts (40% of 5) drops the entity found in 3 of them.
    capped = link_entities(nodes, lexicon, np.arange(5), max_df_share=0.4)
    assert sorted(capped.keys) == ["golgi apparatus", "spindle"]


# ------------------------------------------------------------------------------------------ candidates and pruning


def _clustered(n: int, dim: int, clusters: int, spread: float, seed: int) -> np.ndarray:
    """Unit vectors drawn around `clusters` random directions (sentence vectors of one type look like this)."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(clusters, dim))
    vectors = centres[rng.integers(0, clusters, n)] + spread * rng.normal(size=(n, dim))
    return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


def test_ivf_with_every_cluster_probed_is_the_exact_top_m() -> None:
    vectors = _clustered(600, 16, 12, 0.6, seed=1)
    index = IvfIndex.train(vectors, 25)
    assert index.centroids.shape == (25, 16) and np.sort(index.order).tolist() == list(range(600))
    # Every row is listed under its nearest centroid.
    labels = np.repeat(np.arange(25), index.sizes)
    assert np.array_equal(labels, (vectors[index.order] @ index.centroids.T).argmax(axis=1))
    queries = np.arange(600)
    found, exact = index.search(queries, 7, nprobe=25), exact_top_m(vectors, queries, 7)
    assert np.array_equal(found.ids, exact.ids) and np.allclose(found.scores, exact.scores)
    assert found.scored == 600 * 600  # all clusters probed: every pair scored, as exact search does
    assert not (found.ids == queries[:, None]).any()
    # Fewer probes score fewer pairs and still return m distinct other rows, best first.
    narrow = index.search(queries, 7, nprobe=3)
    assert narrow.scored < 600 * 600 / 4
    assert (np.diff(narrow.scores, axis=1) <= 0).all() and not (narrow.ids == queries[:, None]).any()
    assert all(len(set(row)) == 7 for row in narrow.ids.tolist())

    # Through the build's entry point: the union of each member's exact 5 best, as (min, max) node pairs.
    members = np.sort(np.random.default_rng(2).choice(600, 400, replace=False))
    top = sig.ann_top_m(vectors, members, 5, nprobe=1000, centroids=None)
    scores = vectors[members] @ vectors[members].T
    np.fill_diagonal(scores, -np.inf)
    expected = {
        (min(int(members[i]), int(members[j])), max(int(members[i]), int(members[j])))
        for i in range(members.size)
        for j in np.argsort(-scores[i])[:5]
    }
    assert {tuple(p) for p in top.pairs.tolist()} == expected  # never a non-member
    assert top.centroids == 20 and top.scored == 400 * 400  # ⌈√400⌉ clusters, all probed


def test_ivf_recall_is_high_on_clustered_data_at_a_few_probes() -> None:
    vectors = _clustered(6000, 32, 40, 0.35, seed=3)
    index = IvfIndex.train(vectors)  # ⌈√6000⌉ = 78 clusters
    queries = np.random.default_rng(4).choice(6000, 500, replace=False)
    truth = exact_top_m(vectors, queries, 20).ids
    recall = {p: recall_at_m(index.search(queries, 20, p).ids, truth) for p in (1, 4)}
    found = index.search(queries, 20, 4)
    assert recall[4] > 0.9 and recall[1] < recall[4]  # more probes, more of the true neighbours
    assert found.scored / (500 * 6000) < 0.15  # ... while scoring a small share of the pairs
    # A partition that ignored similarity (random clusters) would find about nprobe / k of the neighbours.
    scrambled = IvfIndex(index.vectors, index.centroids, np.random.default_rng(5).permutation(6000), index.offsets)
    assert recall_at_m(scrambled.search(queries, 20, 4).ids, truth) < 0.3


def test_default_candidate_search_scores_far_fewer_than_all_pairs() -> None:
    config = SageBuildConfig()
    vectors = _clustered(40_000, 16, 200, 0.5, seed=6)
    top = sig.ann_top_m(vectors, np.arange(40_000), config.neighbours, nprobe=config.nprobe, centroids=None)
    assert top.centroids == 200  # ⌈√40000⌉
    assert top.scored < 0.15 * 40_000**2  # ≈ nprobe / √n = 8% of the pairs, where exact top-M scores them all
    degree = np.bincount(top.pairs.ravel(), minlength=40_000)
    assert degree.min() >= config.neighbours  # every node still found its M neighbours
    for bad in ({"nprobe": 0}, {"centroids": 0}, {"neighbours": 0}):
        with pytest.raises(ValueError):
            dataclasses.replace(config, **bad).validate()


def test_sparse_candidates_are_each_members_exact_top_m_over_shared_entities() -> None:
    matrix = sp.random(40, 30, density=0.08, random_state=2, format="csr", dtype=np.float32)
    everyone = np.arange(40)
    top = sig.sparse_top_m(matrix, everyone, 3)
    dense = (matrix @ matrix.T).toarray()
    assert top.scored == np.count_nonzero(dense)  # only pairs sharing an entity were multiplied
    np.fill_diagonal(dense, 0)
    expected = {
        (min(i, int(j)), max(i, int(j))) for i in range(40) for j in np.argsort(-dense[i])[:3] if dense[i, j] > 0
    }
    assert {tuple(p) for p in top.pairs.tolist()} == expected  # only positive scores: no overlap, no candidate


def test_select_edges_keeps_exactly_the_candidates_above_each_signals_percentile_or_combined() -> None:
    rng = np.random.default_rng(3)
    n = 4000
    scores = rng.random((n, 3)).astype(np.float32)
    scores[:, 2] = np.where(rng.random(n) < 0.97, 0.0, scores[:, 2])  # entity-like: mostly no overlap
    groups = rng.integers(0, 3, n)
    groups[groups == 2] = 1  # group 2 (a type without candidates) gets no pairs
    is_candidate = rng.random(n) < 0.9
    is_structural = rng.random(n) < 0.05
    selection = sig.select_edges(scores, groups, is_candidate, is_structural, 95.0, 3)
    assert np.isnan(selection.thresholds[2]).all()
    votes = np.zeros((n, 3), bool)
    for group in (0, 1):
        mine = is_candidate & (groups == group)
        for s, name in enumerate(SIMILARITY_SIGNALS):
            threshold = np.percentile(scores[mine, s], 95)
            assert selection.thresholds[group, s] == pytest.approx(threshold)
            votes[:, s] |= mine & (scores[:, s] > threshold)
            assert np.array_equal(
                (selection.bits & BITS[name] != 0) & (groups == group), votes[:, s] & (groups == group)
            )
        share = votes[mine, :2].mean(axis=0)
        assert np.all(np.abs(share - 0.05) < 0.005)  # continuous signals: 5% of the candidates each
    assert selection.thresholds[0, 2] == 0.0
    assert np.array_equal(votes[:, 2], is_candidate & (scores[:, 2] > 0))  # a percentile of 0 keeps only overlaps
    assert np.array_equal(selection.kept, votes.any(axis=1) | is_structural)  # OR, plus every structural pair
    assert (votes.sum(axis=1) == 1).sum() > (votes.sum(axis=1) == 3).sum()  # OR keeps single-signal pairs
    assert np.array_equal(selection.bits & BITS["structure"] != 0, is_structural)


# ------------------------------------------------------------------------------------------ the graph of the sample


@pytest.fixture(scope="module")
def sample(biomed_sample_engine: EmbeddedEngine, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The graph of the real sample, saved beside (not inside) the shared index, and a strategy table with sage."""
    directory = tmp_path_factory.mktemp("sage-sample")
    graph, own, strategies = sample_with_sage(biomed_sample_engine, directory)
    return {"graph": graph, "directory": directory, "stores": own, "strategies": strategies}


def _ask(engine: EmbeddedEngine, sample: dict[str, Any], question: str, k: int = 20, **options: Any) -> Answer:
    return answer(
        sample["stores"], sample["strategies"], engine.encoder, question, strategy="sage", k=k, options=options
    )


def test_sample_graph_edges_follow_thresholds_signals_and_types(sample: dict[str, Any]) -> None:
    graph: SageGraph = sample["graph"]
    nodes = sample["stores"].nodes
    meta = graph.meta
    src = np.repeat(np.arange(graph.num_nodes), graph.degree())
    dst = graph.indices.astype(np.int64)
    assert graph.rich[src].all() and graph.rich[dst].all() and (src != dst).all()
    assert (nodes.types[src] == nodes.types[dst]).all()  # neighbourhoods stay within a type
    assert (graph.signals > 0).all()
    for s, name in enumerate(SIMILARITY_SIGNALS):
        limit = np.asarray([meta["thresholds"][nodes.type_name(int(p))][name] for p in src])
        voted = graph.signals & BITS[name] != 0
        assert voted.any()
        assert (graph.scores[voted, s] > limit[voted]).all()  # a signal bit means "above its percentile"
    similarity = graph.signals & ~np.uint8(BITS["structure"]) != 0
    # Per signal ≈ 5% of the candidates; OR of three signals lies between 5% and 15% of them.
    assert 0.05 <= similarity.sum() / 2 / meta["candidate_pairs"] <= 0.15
    # Entity edges name their rarest shared entity.
    entity_edges = graph.signals & BITS["entity"] != 0
    assert (graph.entity[entity_edges] >= 0).all()
    assert meta["edges"]["by_signal"]["entity"] == entity_edges.sum() // 2
    sweep = {(r["percentile"], r["logic"]): r["edges"] for r in meta["table5_sweep"]}
    assert sweep[(95, "OR")] == similarity.sum() // 2 and sweep[(95, "AND")] < sweep[(95, "OR")]
    assert sweep[(80, "OR")] > sweep[(95, "OR")] > sweep[(99, "OR")]
    # The manifest accounts for the candidate search: per type, the pairs each signal scored against n².
    search = meta["candidate_search"]
    rich_types = nodes.types[graph.rich]
    assert set(search["by_type"]) == {nodes.schema.node_types[c].name for c in np.unique(rich_types)}
    for name, row in search["by_type"].items():
        n = int((rich_types == nodes.schema.node_code(name)).sum())
        assert row["nodes"] == n and row["all_pairs"] == n * n and row["centroids"] == int(np.ceil(np.sqrt(n)))
        assert 0 < row["pairs_scored"]["name"] <= n * n and 0 < row["pairs_scored"]["content"] <= n * n
    assert search["total"]["all_pairs"] == sum(r["all_pairs"] for r in search["by_type"].values())
    assert meta["config"]["nprobe"] == SageBuildConfig.nprobe and meta["config"]["centroids"] is None


def test_graph_is_symmetric_and_survives_a_save_load_round_trip(sample: dict[str, Any]) -> None:
    graph: SageGraph = sample["graph"]
    src = np.repeat(np.arange(graph.num_nodes), graph.degree())
    forward = np.lexsort((graph.indices, src))
    backward = np.lexsort((src, graph.indices))
    assert np.array_equal(src[forward], graph.indices[backward]) and np.array_equal(
        graph.indices[forward], src[backward]
    )
    for array in (graph.signals, graph.scores, graph.entity):
        assert np.array_equal(array[forward], array[backward])  # both directions carry the same metadata
    loaded = SageGraph.load(sample["directory"])
    for field in ("indptr", "indices", "signals", "scores", "entity", "rich"):
        assert np.array_equal(getattr(loaded, field), getattr(graph, field))
    assert loaded.meta["thresholds"] == graph.meta["thresholds"]
    seeds = np.flatnonzero(graph.degree() > 0)[:7]
    expansion = loaded.expand(seeds)
    assert {(int(a), int(b)) for a, b in zip(expansion.seeds, expansion.neighbours, strict=True)} == {
        (int(s), int(n)) for s in seeds for n in graph.indices[graph.indptr[s] : graph.indptr[s + 1]]
    }
    stale = {**sample["stores"].manifest, "created_unix": -1}
    with pytest.raises(IndexStoreError, match="another version"):
        loaded.check_built_for(stale, graph.num_nodes)


# ------------------------------------------------------------------------------------------ the strategy


def test_sage_lists_the_seeds_unchanged_then_k_prime_fused_neighbours(
    biomed_sample_engine: EmbeddedEngine, sample: dict[str, Any]
) -> None:
    base = biomed_sample_engine.ask(DESCRIPTION, strategy="hybrid", k=100)
    result = _ask(biomed_sample_engine, sample, DESCRIPTION, k=100, seed="hybrid", seeds=8, k_prime=6)
    ids = [i.node_id for i in result.items]
    assert len(ids) == len(set(ids)) == 100  # no duplicates; the base's ranking fills the depth
    assert ids[:8] == [i.node_id for i in base.items[:8]]  # the seeds, in the base's order
    assert [i.source for i in result.items[8:14]] == ["sage"] * 6 and "sage" not in {
        i.source for i in result.items[14:]
    }
    assert [i for i in ids[14:]] == [i.node_id for i in base.items if i.node_id not in ids[:14]][:86]

    # The six are the top of the seeds' neighbour pool under 0.6 · BM25 + 0.4 · cosine, min-max within the pool.
    stores, graph = sample["stores"], sample["graph"]
    seeds = stores.nodes.positions(ids[:8])
    pool = np.setdiff1d(np.unique(graph.expand(seeds).neighbours), seeds)
    fused = BM25_WEIGHT * min_max(stores.bm25.scores(result.question)[pool]) + (1 - BM25_WEIGHT) * min_max(
        stores.vectors["relations"].vectors_for(pool) @ biomed_sample_engine.encoder.encode([result.question])[0]
    )
    best = pool[np.lexsort((pool, -fused))[:6]]
    assert stores.nodes.positions(ids[8:14]).tolist() == best.tolist()
    scores = [i.score for i in result.items[8:14]]
    assert scores == sorted(scores, reverse=True)

    # Each expansion names a seed it hangs off, through a real edge, with that edge's signals and scores.
    seed_ids = set(ids[:8])
    for item in result.items[8:14]:
        via = item.evidence["via"][0]
        assert via["seed"]["id"] in seed_ids and via["signals"]
        seed, neighbour = stores.nodes.positions([via["seed"]["id"], item.node_id])
        run = slice(graph.indptr[seed], graph.indptr[seed + 1])
        edge = graph.indptr[seed] + int(np.flatnonzero(graph.indices[run] == neighbour)[0])
        assert via["scores"]["content"] == pytest.approx(float(graph.scores[edge, 1]), abs=1e-4)
    assert result.notes["sage"] == {
        "seed": "hybrid", "policy": "edge", "seeds": 8, "expanded": True,
        "seeds_in_graph": int(graph.rich[seeds].sum()), "neighbours": int(pool.size), "added": 6,
    }  # fmt: skip


def test_default_budget_is_ten_seeds_and_ten_expansions_within_k(
    biomed_sample_engine: EmbeddedEngine, sample: dict[str, Any]
) -> None:
    result = _ask(biomed_sample_engine, sample, DESCRIPTION, seed="af")
    assert len(result.items) == 20
    assert [i.source == "sage" for i in result.items] == [False] * 10 + [True] * 10
    short = _ask(biomed_sample_engine, sample, DESCRIPTION, k=12, seed="af")
    assert [i.source == "sage" for i in short.items] == [False] * 10 + [True] * 2  # k′ shrinks to fit k


def test_edge_policy_skips_expansion_only_when_the_parse_has_explicit_edges(
    biomed_sample_engine: EmbeddedEngine, sample: dict[str, Any]
) -> None:
    af = biomed_sample_engine.ask(RELATIONAL, strategy="af", k=20)
    assert af.notes["parsed"]["triplets"]  # relational: the structured query has edges
    edge = _ask(biomed_sample_engine, sample, RELATIONAL, seed="af", policy="edge")
    assert [i.node_id for i in edge.items] == [i.node_id for i in af.items]
    assert edge.notes["sage"]["expanded"] is False
    always = _ask(biomed_sample_engine, sample, RELATIONAL, seed="af", policy="always")
    assert [i.node_id for i in always.items[:10]] == [i.node_id for i in af.items[:10]]
    assert "sage" in {i.source for i in always.items}

    described = _ask(biomed_sample_engine, sample, DESCRIPTION, seed="af", policy="edge")
    assert described.notes["parsed"]["triplets"] == []  # a description question: nothing to preserve
    assert described.notes["sage"]["expanded"] is True and "sage" in {i.source for i in described.items}
    hybrid = _ask(biomed_sample_engine, sample, RELATIONAL, seed="hybrid", policy="edge")
    assert hybrid.notes["sage"]["expanded"] is True  # no parse behind hybrid seeds: always expand


def test_options_are_validated_and_the_rest_reach_the_base(
    biomed_sample_engine: EmbeddedEngine, sample: dict[str, Any]
) -> None:
    for options in ({"seed": "sage"}, {"seed": "nope"}, {"policy": "never"}, {"seeds": 0}, {"k_prime": -1}):
        with pytest.raises(InvalidInputError):
            _ask(biomed_sample_engine, sample, DESCRIPTION, **options)
    with pytest.raises(InvalidInputError, match="unknown af option"):
        _ask(biomed_sample_engine, sample, DESCRIPTION, seed="af", bogus=1)
    steps = _ask(biomed_sample_engine, sample, RELATIONAL, seed="af", policy="always", steps="1+7")
    assert "scope" not in steps.notes  # af ran its 1+7 row: no grounding


def test_missing_graph_names_the_command_and_cli_builds_it(
    tiny_bundle: Path, tmp_path: Path, hashing_encoder, capsys
) -> None:
    from skbqa.cli.sage import add_build_sage_parser, run_build_sage

    index = tmp_path / "index"
    ingest(tiny_bundle, index, hashing_encoder, progress=False)
    engine = EmbeddedEngine.open(index, encoder=hashing_encoder)
    sage = SageStrategy(engine.stores, engine.strategies)
    engine.strategies["sage"] = sage
    engine.warm()  # a missing graph does not break the other strategies
    with pytest.raises(IndexStoreError, match=f"skbqa build-sage --index {index}"):
        engine.ask("retrieval over knowledge bases", strategy="sage", options={"seed": "hybrid"})

    parser = argparse.ArgumentParser()
    add_build_sage_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(
        ["build-sage", "--index", str(index), "--min-content-words", "3", "--nprobe", "1", "--centroids", "2"]
    )
    assert run_build_sage(args) == 0
    assert "graph nodes" in capsys.readouterr().out
    graph = SageGraph.load(index)
    assert {graph.meta["config"][k] for k in ("nprobe", "centroids")} == {1, 2}
    papers = graph.meta["candidate_search"]["by_type"]["paper"]
    assert papers["centroids"] == 2 and papers["pairs_scored"]["name"] < papers["all_pairs"]  # 1 of 2 probed
    assert graph.rich.tolist() == [True] * 3 + [False] * 4  # papers; authors and fields have 2-word glosses
    # The papers cite each other: structural edges survive even where no similarity signal votes.
    assert graph.num_edges >= 2 and (graph.signals & BITS["structure"] != 0).any()
    result = engine.ask(
        "retrieval over knowledge bases", strategy="sage", k=7, options={"seed": "hybrid", "seeds": 1}
    )
    assert result.items[0].name == "Retrieval over knowledge bases"
    # Its one neighbour is the paper it cites (a KG edge between two graph nodes); then the hybrid ranking.
    assert [(i.source, i.name) for i in result.items[1:2]] == [("sage", "Graph neural networks for molecules")]
    assert "structure" in result.items[1].evidence["via"][0]["signals"]
    assert {i.source for i in result.items[2:]} == {"hybrid"} and len(result.items) == 7
