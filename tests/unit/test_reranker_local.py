from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from skbqa.common.errors import InvalidInputError
from skbqa.ingest.builder import ingest
from skbqa.query.context import Candidate, QueryContext
from skbqa.query.structured import StructuredQuery, Triplet
from skbqa.stages.rerank.local import LocalReranker, LocalWeights, bm25_over, combine, normalise
from skbqa.stores.index import IndexStores, open_index
from tests.helpers import HashingEncoder

ONLY_GRAPH = LocalWeights(graph=1, lexical=0, dense=0, prior=0)
ONLY_LEXICAL = LocalWeights(graph=0, lexical=1, dense=0, prior=0)
ONLY_DENSE = LocalWeights(graph=0, lexical=0, dense=1, prior=0)
ONLY_PRIOR = LocalWeights(graph=0, lexical=0, dense=0, prior=1)
PAPERS = (10, 11, 12)


@pytest.fixture
def stores(tiny_bundle: Path, tmp_path: Path) -> IndexStores:
    ingest(tiny_bundle, tmp_path / "index", HashingEncoder(), progress=False)
    return open_index(tmp_path / "index")


def query(text: str = "which paper?") -> QueryContext:
    return QueryContext(text, HashingEncoder())


def cands(
    stores: IndexStores,
    node_ids: tuple[int, ...],
    scores: dict[int, dict[str, float]] | None = None,
    evidence: dict[int, dict[str, object]] | None = None,
) -> list[Candidate]:
    """Candidates in the given (prior) order, with per-node-id component scores and evidence."""
    return [
        Candidate(
            int(stores.nodes.positions([node_id])[0]),
            1.0 - rank / 10,
            "t",
            dict((scores or {}).get(node_id, {})),
            dict((evidence or {}).get(node_id, {})),
        )
        for rank, node_id in enumerate(node_ids)
    ]


def ids(stores: IndexStores, ranked: list[Candidate]) -> list[int]:
    return [int(stores.nodes.ids[c.position]) for c in ranked]


def test_prior_only_weights_reproduce_the_input_order(stores: IndexStores) -> None:
    given = cands(stores, (12, 10, 20, 11, 31))
    outcome = LocalReranker(stores, weights=ONLY_PRIOR).rerank(query("protein"), None, given)
    assert ids(stores, outcome.candidates) == [12, 10, 20, 11, 31]
    assert all("local" in c.scores for c in outcome.candidates)
    assert all("local" not in c.scores for c in given)  # the input candidates are not modified


def test_graph_signal_ranks_by_grounding_and_matched_triplets(stores: IndexStores) -> None:
    parsed = StructuredQuery(
        target="p", triplets=[Triplet("p", "written_by", "a"), Triplet("p", "has_field", "f")]
    )
    grounded = {10: {"grounded": 1.0}, 12: {"grounded": 1.0}, 20: {"grounded": 1.0}}
    given = cands(stores, (11, 12, 10, 20), grounded, {10: {"triplets": [0, 1]}, 12: {"triplets": [0]}})
    outcome = LocalReranker(stores, weights=ONLY_GRAPH).rerank(query(), parsed, given)
    assert ids(stores, outcome.candidates) == [10, 12, 20, 11]
    assert (
        outcome.candidates[0].scores["local_graph"] == 1.0 and outcome.candidates[-1].scores["local_graph"] == 0.0
    )


@pytest.mark.parametrize("source", ["candidates", "index"])
def test_lexical_signal_prefers_text_constraints_over_the_question(stores: IndexStores, source: str) -> None:
    reranker = LocalReranker(stores, weights=ONLY_LEXICAL, lexical_source=source)  # type: ignore[arg-type]
    given = cands(stores, PAPERS)
    parsed = StructuredQuery(target="p", text_constraints=["protein structure"])
    question = query("papers about message passing over molecules")
    assert ids(stores, reranker.rerank(question, parsed, given).candidates)[0] == 12
    # Without text constraints the whole question is matched.
    assert ids(stores, reranker.rerank(question, StructuredQuery(target="p"), given).candidates)[0] == 10
    assert ids(stores, reranker.rerank(question, None, given).candidates)[0] == 10


def test_dense_signal_uses_given_scores_only_when_every_candidate_has_one(stores: IndexStores) -> None:
    reranker = LocalReranker(stores, weights=ONLY_DENSE)
    given = cands(stores, PAPERS, {10: {"dense": 0.1}, 11: {"dense": 0.2}, 12: {"dense": 0.9}})
    assert ids(stores, reranker.rerank(query(), None, given).candidates) == [12, 11, 10]
    # One candidate lacks a dense score: all are scored from the stored document vectors instead.
    mixed = cands(stores, PAPERS, {10: {"dense": 0.1}, 12: {"dense": 0.9}})
    q = query("attention protein structure")
    vectors = stores.vectors["document"].vectors_for(np.array([c.position for c in mixed], np.int64))
    expected = normalise(vectors.astype(np.float64) @ q.embedding)
    np.testing.assert_allclose(reranker.components(q, None, mixed)["dense"], expected, atol=1e-6)
    assert ids(stores, reranker.rerank(q, None, mixed).candidates)[0] == 12


def test_components_are_normalised_and_combine_mixes_them_by_weight(stores: IndexStores) -> None:
    given = cands(stores, (10, 11, 12, 20), {11: {"grounded": 1.0}})
    reranker = LocalReranker(stores)
    parts = reranker.components(query("knowledge bases retrieval"), None, given)
    assert set(parts) == {"graph", "lexical", "dense", "prior"}
    for values in parts.values():
        assert values.shape == (4,) and values.min() >= 0 and values.max() <= 1
    np.testing.assert_allclose(combine(parts, ONLY_PRIOR), [1, 2 / 3, 1 / 3, 0])
    np.testing.assert_allclose(combine(parts, ONLY_GRAPH), [0, 1, 0, 0])


def test_normalise_and_candidate_bm25() -> None:
    np.testing.assert_allclose(normalise(np.array([2.0, 4.0, 3.0])), [0, 1, 0.5])
    assert not normalise(np.array([5.0, 5.0])).any()  # a constant signal cannot order anything
    docs = [["protein", "graph"], ["graph"], ["graph", "graph"]]
    scores = bm25_over(["protein", "graph"], docs)
    assert scores[0] > scores[2] > 0 and scores[0] > scores[1]  # the rare term outweighs the common one
    assert not bm25_over([], docs).any() and bm25_over(["x"], []).size == 0


def test_local_reranker_never_adds_or_drops_a_candidate(stores: IndexStores) -> None:
    everyone = tuple(int(i) for i in stores.nodes.ids)
    for seed in range(20):
        rnd = random.Random(seed)
        chosen = tuple(rnd.sample(everyone, rnd.randint(0, len(everyone))))
        grounded = {i: {"grounded": 1.0} for i in chosen if rnd.random() < 0.5}
        given = cands(stores, chosen, grounded, {i: {"triplets": [0]} for i in chosen if rnd.random() < 0.3})
        ranked = LocalReranker(stores).rerank(query("attention graphs"), None, given).candidates
        assert sorted(c.position for c in ranked) == sorted(c.position for c in given)


def test_invalid_configuration_is_refused(stores: IndexStores) -> None:
    with pytest.raises(InvalidInputError):
        LocalWeights(graph=-1)
    with pytest.raises(InvalidInputError):
        LocalWeights(graph=0, lexical=0, dense=0, prior=0)
    with pytest.raises(InvalidInputError, match="embedding set"):
        LocalReranker(stores, embedding_set="nope")
    with pytest.raises(InvalidInputError, match="lexical_source"):
        LocalReranker(stores, lexical_source="web")  # type: ignore[arg-type]
