"""The `af` strategy end to end on the bundled real sample: quality against bm25 in the same process, the
ablation rows, evidence, per-request options and the k beyond the pipeline's k."""

from __future__ import annotations

import json

import pytest

from skbqa.common.errors import InvalidInputError
from skbqa.engine.embedded import EmbeddedEngine
from skbqa.eval.runner import compare, evaluate_strategy
from skbqa.query.context import QueryContext
from skbqa.query.structured import AttributeConstraint, StructuredQuery, Symbol, Triplet
from skbqa.skb.qa import load_qa
from skbqa.strategies.af import AfStrategy
from tests.conftest import SAMPLE_BUNDLE

QUESTION = "What genes participating in methylation and located on chromosome 8 are there?"


def test_af_answers_the_sample_far_better_than_bm25(biomed_sample_engine: EmbeddedEngine) -> None:
    items = load_qa(SAMPLE_BUNDLE / "qa.jsonl")
    reports = [evaluate_strategy(biomed_sample_engine, items, s, depth=20) for s in ("bm25", "af")]
    summary = compare(reports)
    af, bm25 = summary["strategies"]["af"]["metrics"], summary["strategies"]["bm25"]["metrics"]
    assert af["hit@1"] >= 85.0 and af["hit@1"] >= 2 * bm25["hit@1"]
    assert af["mrr"] >= 2 * bm25["mrr"]


def test_grounded_answers_carry_their_triplets_and_constraints(biomed_sample_engine: EmbeddedEngine) -> None:
    result = biomed_sample_engine.ask(QUESTION, strategy="af", k=20)
    rows = [json.loads(line) for line in (SAMPLE_BUNDLE / "qa.jsonl").read_text().splitlines()]
    gold = next(set(row["answers"]) for row in rows if row["question"] == QUESTION)
    top = result.items[0]
    assert top.node_id in gold and top.source == "grounded"
    [triplet] = top.evidence["triplets"]
    assert "gene_participates_in_biological_process" in triplet["pattern"]
    assert [n["name"] for n in triplet["through"]] == ["methylation"]
    assert top.evidence["constraints"] == ["chromosome = 8"]
    assert "fits" in top.why and "methylation" in top.why
    assert result.notes["parsed"]["target_type"] == "gene"
    assert result.notes["scope"]["grounded"] is True
    for stage in ("parse", "symbols", "ground", "rank_grounded", "fill"):
        assert stage in result.timings_ms
    # Every grounded gene really is on chromosome 8 and participates in methylation.
    nodes = biomed_sample_engine.stores.nodes
    for item in result.items:
        if item.source == "grounded":
            position = int(nodes.positions([item.node_id])[0])
            assert str(nodes.attrs[position]["chromosome"]) == "8"


def test_ablation_rows(biomed_sample_engine: EmbeddedEngine) -> None:
    ask = biomed_sample_engine.ask

    vector_only = ask(QUESTION, strategy="af", k=20, options={"steps": "1+7"})
    assert {i.source for i in vector_only.items} == {"vss"} and "scope" not in vector_only.notes
    assert {i.type for i in vector_only.items} == {"gene"}  # step 1's type focuses the vector strand

    graph_only = ask(QUESTION, strategy="af", k=100, options={"steps": "1-5"})
    assert graph_only.items and {i.source for i in graph_only.items} == {"grounded"}
    # The grounded set in discovery order, cut at the pipeline's k (20), never extended by the vector fill.
    assert len(graph_only.items) == min(20, graph_only.notes["scope"]["candidates"])

    ranked = ask(QUESTION, strategy="af", k=20, options={"steps": "1-6"})
    assert {i.source for i in ranked.items} == {"grounded"} and len(ranked.items) <= round(2 / 3 * 20)
    assert all(i.evidence["triplets"] for i in ranked.items)

    hybrid = ask(QUESTION, strategy="af", k=20, options={"steps": "1-7"})
    assert len(hybrid.items) == 20
    sources = [i.source for i in hybrid.items]
    assert sources == sorted(sources, key=lambda s: s != "grounded")  # grounded first, then the vector fill

    no_graph_share = ask(QUESTION, strategy="af", k=20, options={"alpha": 0.0})
    assert {i.source for i in no_graph_share.items} == {"vss"}


def test_local_reranker_keeps_the_set(biomed_sample_engine: EmbeddedEngine) -> None:
    plain = biomed_sample_engine.ask(QUESTION, strategy="af", k=20, options={"reranker": "none"})
    reranked = biomed_sample_engine.ask(QUESTION, strategy="af", k=20, options={"reranker": "local"})
    assert {i.node_id for i in plain.items} == {i.node_id for i in reranked.items}
    assert "rerank" in reranked.timings_ms


def test_longer_lists_continue_after_the_pipeline(biomed_sample_engine: EmbeddedEngine) -> None:
    short = biomed_sample_engine.ask(QUESTION, strategy="af", k=20)
    long = biomed_sample_engine.ask(QUESTION, strategy="af", k=50)
    assert [i.node_id for i in long.items[:20]] == [i.node_id for i in short.items]
    assert len(long.items) == 50 and len({i.node_id for i in long.items}) == 50


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"alpha": 1.5}, "alpha"),
        ({"l_max": -1}, "l_max"),
        ({"steps": "1-9"}, "steps"),
        ({"reranker": "pairwise"}, "not configured"),
        ({"parser": "llm"}, "not configured"),
        ({"colour": "red"}, "unknown af option"),
    ],
)
def test_bad_options_are_refused_with_a_clear_message(
    biomed_sample_engine: EmbeddedEngine, options: dict[str, object], message: str
) -> None:
    with pytest.raises(InvalidInputError, match=message):
        biomed_sample_engine.ask(QUESTION, strategy="af", k=5, options=options)


def test_lenient_mode_and_small_scope_still_answer(biomed_sample_engine: EmbeddedEngine) -> None:
    for options in ({"strict": False}, {"l_max": 1}, {"l_max": 0}):
        result = biomed_sample_engine.ask(QUESTION, strategy="af", k=10, options=options)
        assert len(result.items) == 10


class ScriptedParser:
    """A parser that returns a fixed structured query (what an LLM's Cypher could have said)."""

    name = "scripted"

    def __init__(self, parsed: StructuredQuery) -> None:
        self.parsed = parsed

    def parse(self, query: QueryContext) -> StructuredQuery:
        return self.parsed


def test_constraints_filter_hard_and_unknown_ones_join_the_search_string(
    biomed_sample_engine: EmbeddedEngine,
) -> None:
    parsed = StructuredQuery(
        "y",
        {"y": Symbol("y", "gene"), "c": Symbol("c", "biological_process", ("methylation",))},
        [Triplet("y", "gene_participates_in_biological_process", "c")],
        [
            AttributeConstraint("y", "chromosome", "=", "8"),
            AttributeConstraint("c", "flavour", "=", "histone"),  # no such attribute: a search word instead
        ],
    )
    strategy = AfStrategy(biomed_sample_engine.stores, parser=ScriptedParser(parsed))
    query = QueryContext("genes in methylation on chromosome 8", biomed_sample_engine.encoder)
    candidates = strategy.retrieve(query, 20)
    assert query.notes["constants"]["c"]["search_extra"] == ["flavour histone"]
    assert any("not applied" in w for w in parsed.warnings)
    nodes = biomed_sample_engine.stores.nodes
    grounded = [c for c in candidates if c.source == "grounded"]
    assert grounded and all(str(nodes.attrs[c.position]["chromosome"]) == "8" for c in grounded)


def test_eval_reports_when_the_llm_path_fell_back(biomed_sample_engine: EmbeddedEngine) -> None:
    """With the endpoint down, af[parser=llm] still answers (encoder parser) and the report says so."""
    from skbqa.models.openai_chat import OpenAIChatModel

    dead = OpenAIChatModel("http://127.0.0.1:9/v1", "nobody", timeout=2.0, retries=0)
    engine = EmbeddedEngine(biomed_sample_engine.stores, biomed_sample_engine.encoder, dead)
    items = load_qa(SAMPLE_BUNDLE / "qa.jsonl")[:3]
    report = evaluate_strategy(engine, items, "af[parser=llm]", depth=20)
    assert report.llm["parser_fallbacks"] == 3
    assert report.metrics["hit@1"] > 0  # the fallback parser answered
    assert "llm" in report.to_dict()
    assert not evaluate_strategy(engine, items, "af[parser=encoder]", depth=20).llm
