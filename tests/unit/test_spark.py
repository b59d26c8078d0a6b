"""SPARK, the one-call planner: the plan parser on good, garbage and hostile replies; the prompt; the executor
and the strategy on the bundled real sample, with plans scripted through a real local OpenAI-compatible server
(one request per question), the BM25 + cosine fallback, and the refusal without an LLM."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from skbqa.common.errors import InvalidInputError
from skbqa.engine.answers import Answer, answer
from skbqa.engine.embedded import EmbeddedEngine
from skbqa.models.openai_chat import OpenAIChatModel
from skbqa.query.context import QueryContext
from skbqa.skb.loaders import load_skb
from skbqa.stages.parse.cypher.parser import parse_cypher
from skbqa.stages.parse.prompts import SchemaProfile
from skbqa.stores.nodes import NodeTable
from skbqa.strategies.af import AfStrategy
from skbqa.strategies.spark.config import SparkConfig
from skbqa.strategies.spark.plan import MAX_SEARCH_K, MAX_STEPS, CombineStep, CypherStep, SearchStep, parse_plan
from skbqa.strategies.spark.prompts import example_plans, spark_prompt
from skbqa.strategies.spark.strategy import NEEDS_LLM, SparkStrategy
from tests.conftest import SAMPLE_BUNDLE
from tests.fakes.openai_server import FakeOpenAIServer, Fault, running_server

GOOD = {
    "target_type": "disease",
    "steps": [
        {
            "id": "g1",
            "cypher": "MATCH (d:disease)-[:disease_has_phenotype]->(p:phenotype {name: 'Seizure'}) RETURN d",
        },
        {"id": "s1", "search": "preeclampsia", "type": "disease", "k": 20, "within": "g1"},
        {"id": "c1", "union": ["s1", "g1"]},
    ],
    "answer": "s1",
}

# --- the plan parser ------------------------------------------------------------------------------------------


def test_a_good_plan_is_read_step_by_step() -> None:
    plan = parse_plan(json.dumps(GOOD))
    assert plan.usable and plan.warnings == [] and plan.answer == "s1" and plan.target_type == "disease"
    g1, s1, c1 = plan.steps
    assert isinstance(g1, CypherStep) and g1.cypher.startswith("MATCH (d:disease)")
    assert s1 == SearchStep("s1", "preeclampsia", "disease", 20, "g1")
    assert c1 == CombineStep("c1", "union", ("s1", "g1"))
    assert plan.to_dict() == GOOD


def test_the_plan_is_found_in_prose_fences_and_after_reasoning() -> None:
    reply = (
        '<think>maybe {"steps": [{"search": "wrong"}]} ... </think>\nHere is my plan:\n```json\n'
        + json.dumps(GOOD, indent=2)
        + "\n```\nIt first finds diseases."
    )
    assert parse_plan(reply).to_dict() == GOOD
    no_fence = "Plan: " + json.dumps(GOOD) + " (hope this helps) {not json"
    assert parse_plan(no_fence).to_dict() == GOOD
    # a stray JSON value before the plan is skipped, not mistaken for it
    assert parse_plan("As in [1] and {} the plan is " + json.dumps(GOOD)).to_dict() == GOOD


def test_common_variants_are_accepted_with_warnings() -> None:
    bare_list = parse_plan('[{"search": "asthma", "type": "disease"}]')
    assert bare_list.usable and bare_list.steps == [SearchStep("step1", "asthma", "disease")]
    wrapped = parse_plan(json.dumps({"plan": GOOD}))
    assert wrapped.to_dict() == GOOD
    tools = parse_plan('{"steps": [{"id": "a", "tool": "semantic_search", "query": "asthma", "k": "5"}]}')
    assert tools.steps == [SearchStep("a", "asthma", None, 5)] and "read 'semantic_search'" in tools.warnings[0]
    trailing = parse_plan('{"steps": [{"search": "asthma",},],}')
    assert trailing.usable and "trailing commas removed from the JSON" in trailing.warnings
    cypher_only = parse_plan("MATCH (d:disease {name: 'asthma'}) RETURN d")
    assert cypher_only.steps == [CypherStep("step1", "MATCH (d:disease {name: 'asthma'}) RETURN d")]
    assert cypher_only.warnings == ["no JSON plan; the reply was read as one Cypher query"]


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        ("I cannot help with that.", "no JSON plan in the reply"),
        ("", "no JSON plan in the reply"),
        (None, "expected text, got NoneType"),
        (42, "expected text, got int"),
        ('{"answer": "x", "notes": [1, 2]}', "the JSON in the reply holds no plan steps"),
        ("[1, 2, 3]", "the JSON in the reply holds no plan steps"),
        ('{"steps": "search everything"}', "'steps' is not a list"),
        ('{"steps": [{"think": "hmm"}, "search", 7]}', "no usable step"),
        ('{"steps": [{"search": ""}, {"cypher": 12}]}', "no usable step"),
    ],
)
def test_garbage_gives_no_plan_and_says_why(reply: object, problem: str) -> None:
    plan = parse_plan(reply)
    assert not plan.usable and plan.steps == [] and plan.problem == problem


def test_hostile_replies_are_bounded_and_never_raise() -> None:
    started = time.perf_counter()
    for reply in ("[" * 100_000, "{" * 300_000, '{"a":' * 50_000, "x" * 2_000_000, "MATCH " * 100_000):
        assert not parse_plan(reply).usable
    assert time.perf_counter() - started < 5.0

    steps = [{"id": f"s{i}", "search": f"term {i}", "k": 5} for i in range(50)]
    assert len(parse_plan(json.dumps({"steps": steps})).steps) == MAX_STEPS

    ks = [10**12, -5, "abc", True, None, 2.9, "NaN"]
    plan = parse_plan(json.dumps({"steps": [{"search": "x", "k": k} for k in ks]}))
    assert [s.k for s in plan.steps if isinstance(s, SearchStep)] == [MAX_SEARCH_K, 1, 20, 20, 20, 2, 20]
    assert parse_plan('{"steps": [{"search": "x", "k": NaN}]}').steps == [SearchStep("step1", "x")]

    refs = parse_plan(
        json.dumps(
            {
                "steps": [
                    {"id": "a", "search": "x", "within": "a"},  # itself
                    {"id": "a", "search": "y", "within": "later"},  # duplicate id, forward reference
                    {"id": "b", "cypher": "MATCH (n) RETURN n", "from": {"n": "a", "bad name": "a", "m": "zz"}},
                    {"id": "c", "intersect": ["zz", "b"]},
                    {"id": "d", "union": ["nothing"]},
                    {"id": "later", "cypher": "MATCH (n) RETURN n " + "x" * 5000},
                ],
                "answer": "d",
            }
        )
    )
    a, a2, b, c = refs.steps
    assert isinstance(a, SearchStep) and a.within is None
    assert isinstance(a2, SearchStep) and a2.id == "step2" and a2.within is None
    assert isinstance(b, CypherStep) and b.bind == (("n", "a"),)
    assert c == CombineStep("c", "intersect", ("b",))
    assert refs.answer == "c"  # "d" was dropped, so the last step answers
    text = "\n".join(refs.warnings)
    for expected in (
        "duplicate id 'a' renamed 'step2'",
        "'later' is not an earlier step",
        "'bad name' is not a variable name",
        "union of no earlier step; dropped",
        "Cypher longer than 4000 characters; dropped",
        "answer 'd' is not a step",
    ):
        assert expected in text


# --- the prompt -------------------------------------------------------------------------------------------------


def test_the_prompt_holds_schema_plan_language_and_question(tiny_bundle: Path) -> None:
    nodes = NodeTable.from_skb(load_skb(tiny_bundle))
    profile = SchemaProfile.from_nodes(nodes)
    question = "Which papers did Ada Lovelace write?"
    [message] = spark_prompt(profile, question)
    text = message.content
    assert message.role == "user" and text.rstrip().endswith("Plan (JSON only):")
    assert f"Question: {question}" in text
    for fragment in ('"search"', '"cypher"', '"within"', '"from"', '"intersect"', '"union"', '"answer"'):
        assert fragment in text
    assert "- written_by: (paper)->(author)" in text and "paper (name key: title" in text
    # the generated example plans are valid in the plan language and in the Cypher subset, for this schema
    examples = example_plans(profile)
    assert len(examples) == 2
    for example in examples:
        assert json.dumps(example) in text
        plan = parse_plan(json.dumps(example))
        assert plan.usable and plan.warnings == [] and plan.to_dict() == example
        for step in plan.steps:
            if isinstance(step, CypherStep):
                assert parse_cypher(step.cypher, nodes.schema).warnings == []
    # over budget, the example names of the labels go first, then their attributes; schema and question stay
    assert "name key: name; e.g. " in text and "attributes: " in text
    small = spark_prompt(profile, question, budget_tokens=10)[0].content
    assert (
        question in small and "- written_by: (paper)->(author)" in small and "- author (name key: name)" in small
    )
    assert "e.g. " not in small.split("Node labels:")[1].split("Example plans:")[0] and "attributes: " not in small


# --- the strategy over the real sample, through a real HTTP server -------------------------------------------

METHYLATION = "What genes participating in methylation and located on chromosome 8 are there?"
PREECLAMPSIA = "Which are the diseases with the mode of inheritance Autosomal dominant inheritance and related to preeclampsia?"
HAS2 = (
    "Which are the biological processes that the gene HAS2 participates in and whose description mentions nephron?"
)


def gold(question: str) -> set[int]:
    rows = [json.loads(line) for line in (SAMPLE_BUNDLE / "qa.jsonl").read_text().splitlines()]
    return next(set(row["answers"]) for row in rows if row["question"] == question)


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with running_server(default_reply="I am not sure.") as fake:
        yield fake


@pytest.fixture
def spark(biomed_sample_engine: EmbeddedEngine, server: FakeOpenAIServer) -> SparkStrategy:
    af = biomed_sample_engine.strategies["af"]
    assert isinstance(af, AfStrategy)
    chat = OpenAIChatModel(server.url, "planner", retries=0, timeout=20)
    return SparkStrategy(biomed_sample_engine.stores, af, chat)


def ask(engine: EmbeddedEngine, spark: SparkStrategy, question: str, k: int = 10, **options: object) -> Answer:
    return answer(
        engine.stores, {"spark": spark}, engine.encoder, question, strategy="spark", k=k, options=options
    )


def positions(engine: EmbeddedEngine, result: Answer, source: str = "spark") -> np.ndarray:
    return engine.stores.nodes.positions([i.node_id for i in result.items if i.source == source])


def test_a_graph_plan_grounds_named_nodes_and_conditions(
    biomed_sample_engine: EmbeddedEngine, spark: SparkStrategy, server: FakeOpenAIServer
) -> None:
    cypher = (
        "MATCH (g:gene)-[:gene_participates_in_biological_process]->(b:biological_process {name: 'methylation'}) "
        "WHERE g.chromosome = '8' RETURN g"
    )
    plan = {"target_type": "gene", "steps": [{"id": "g1", "cypher": cypher}]}
    server.reply(METHYLATION, reply=json.dumps(plan), usage=(1234, 56))
    result = ask(biomed_sample_engine, spark, METHYLATION)

    assert server.count == 1
    sent = server.received[0]
    assert METHYLATION in sent.prompt and "gene_participates_in_biological_process" in sent.prompt
    assert sent.body["max_tokens"] == SparkConfig().max_tokens and len(sent.body["messages"]) == 1
    assert result.notes["llm_usage"] == {"calls": 1, "prompt_tokens": 1234, "completion_tokens": 56}
    notes = result.notes["spark"]
    assert notes["plan"] == {"target_type": "gene", "steps": [{"id": "g1", "cypher": cypher}], "answer": "g1"}
    assert notes["fallback"] is None and notes["warnings"] == []

    assert {i.node_id for i in result.items[:2]} == gold(METHYLATION)
    top = result.items[0]
    assert top.source == "spark" and top.evidence["steps"] == ["g1"] and top.scores["tier"] == 1.0
    assert "gene_participates_in_biological_process" in top.evidence["triplets"][0]["pattern"]
    assert "fits" in top.why and "chromosome = 8" in top.why
    nodes, graph = biomed_sample_engine.stores.nodes, biomed_sample_engine.stores.graph
    [methylation] = [p for p in range(len(nodes)) if nodes.names[p] == "methylation"]
    for item in result.items:
        position = int(nodes.positions([item.node_id])[0])
        if item.source == "spark":  # the condition is a hard filter on every plan answer
            assert str(nodes.attrs[position]["chromosome"]) == "8" and item.type == "gene"
        if item.scores.get("tier") == 1.0:  # reached through the named node itself
            assert methylation in graph.neighbours(
                np.asarray([position]), "gene_participates_in_biological_process"
            )


def test_search_within_a_graph_result_ranks_by_description(
    biomed_sample_engine: EmbeddedEngine, spark: SparkStrategy, server: FakeOpenAIServer
) -> None:
    plan = {
        "target_type": "disease",
        "steps": [
            {
                "id": "g1",
                "cypher": "MATCH (d:disease)-[:disease_has_mode_of_inheritance]->"
                "(m:phenotype {name: 'Autosomal dominant inheritance'}) RETURN d",
            },
            {"id": "s1", "search": "preeclampsia", "type": "disease", "k": 5, "within": "g1"},
        ],
        "answer": "s1",
    }
    server.reply(PREECLAMPSIA, reply=json.dumps(plan))
    result = ask(biomed_sample_engine, spark, PREECLAMPSIA, fill=False)
    assert {i.node_id for i in result.items[:2]} == gold(PREECLAMPSIA)
    assert len(result.items) == 5 and {i.source for i in result.items} == {"spark"}  # k of the step, no fill
    steps = {s["id"]: s for s in result.notes["spark"]["steps"]}
    assert steps["s1"]["nodes"] == 5 and steps["g1"]["nodes"] > 5
    # every answer is in the graph step's set: it really has that mode of inheritance
    nodes, graph = biomed_sample_engine.stores.nodes, biomed_sample_engine.stores.graph
    [dominant] = [p for p in range(len(nodes)) if nodes.names[p] == "Autosomal dominant inheritance"]
    for position in positions(biomed_sample_engine, result):
        assert dominant in graph.neighbours(np.asarray([position]), "disease_has_mode_of_inheritance")


def test_then_expand_binds_a_variable_to_an_earlier_step(
    biomed_sample_engine: EmbeddedEngine, spark: SparkStrategy, server: FakeOpenAIServer
) -> None:
    plan = {
        "target_type": "biological_process",
        "steps": [
            {"id": "s1", "search": "HAS2", "type": "gene", "k": 1},
            {
                "id": "g1",
                "cypher": "MATCH (g:gene)-[:gene_participates_in_biological_process]->(b:biological_process) RETURN b",
                "from": {"g": "s1"},
            },
            {"id": "s2", "search": "nephron", "type": "biological_process", "k": 3, "within": "g1"},
        ],
        "answer": "s2",
    }
    server.reply(HAS2, reply=json.dumps(plan))
    result = ask(biomed_sample_engine, spark, HAS2, fill=False)
    assert result.items[0].node_id in gold(HAS2)
    steps = {s["id"]: s for s in result.notes["spark"]["steps"]}
    [gene_id] = steps["s1"]["first"]
    nodes, graph = biomed_sample_engine.stores.nodes, biomed_sample_engine.stores.graph
    gene = nodes.positions([gene_id])
    assert nodes.names[int(gene[0])] == "hyaluronan synthase 2"
    processes = graph.neighbours(gene, "gene_participates_in_biological_process")
    assert steps["g1"]["nodes"] == processes.size and steps["g1"]["from"] == {"g": 1}
    assert set(positions(biomed_sample_engine, result)) <= set(processes.tolist())
    assert result.items[0].evidence["steps"] == ["g1", "s2"]


def test_intersect_and_union_are_set_operations(
    biomed_sample_engine: EmbeddedEngine, spark: SparkStrategy, server: FakeOpenAIServer
) -> None:
    question = "Which genes are involved in DNA repair and in the cell cycle?"
    plan = {
        "steps": [
            {"id": "a", "search": "DNA repair", "type": "gene", "k": 40},
            {"id": "b", "search": "cell cycle", "type": "gene", "k": 40},
            {"id": "i", "intersect": ["a", "b"]},
            {"id": "u", "union": ["a", "b"]},
        ],
        "answer": "u",
    }
    server.reply(question, reply=json.dumps(plan))
    result = ask(biomed_sample_engine, spark, question, k=100, fill=False)
    steps = {s["id"]: s for s in result.notes["spark"]["steps"]}
    union = set(positions(biomed_sample_engine, result).tolist())
    assert len(union) == steps["u"]["nodes"] == 80 - steps["i"]["nodes"]
    assert {i.type for i in result.items} == {"gene"}
    both = [i for i in result.items if i.evidence["steps"][:2] == ["a", "b"]]
    assert len(both) == steps["i"]["nodes"] and all("i" in i.evidence["steps"] for i in both)


def test_a_plan_that_returns_nothing_falls_back_to_bm25_and_cosine(
    biomed_sample_engine: EmbeddedEngine, spark: SparkStrategy, server: FakeOpenAIServer
) -> None:
    plan = {
        "target_type": "gene",
        "steps": [{"id": "g1", "cypher": "MATCH (g:gene) WHERE g.chromosome = '99' RETURN g"}],
    }
    server.reply(METHYLATION, reply=json.dumps(plan))
    result = ask(biomed_sample_engine, spark, METHYLATION, k=20)
    notes = result.notes["spark"]
    assert notes["fallback"] == "the plan returned no nodes" and notes["fallback_type"] == "gene"
    assert len(result.items) == 20 and {i.source for i in result.items} == {"hybrid"}
    assert {i.type for i in result.items} == {"gene"}  # the plan's target type focuses the fallback
    assert result.items[0].evidence["strand"].startswith("fallback: the plan returned no nodes")
    assert "spark.fallback" in result.timings_ms and server.count == 1


@pytest.mark.parametrize("reply", ["I am not sure.", '{"steps": [{"think": 1}]}', "[" * 10_000])
def test_an_unusable_reply_falls_back_with_a_guessed_type(
    biomed_sample_engine: EmbeddedEngine, spark: SparkStrategy, server: FakeOpenAIServer, reply: str
) -> None:
    server.reply(METHYLATION, reply=reply)
    result = ask(biomed_sample_engine, spark, METHYLATION, k=10)
    notes = result.notes["spark"]
    assert notes["fallback"].startswith("no usable plan: ") and notes["plan"] is None
    assert notes["fallback_type"] == "gene" and {i.type for i in result.items} == {"gene"}
    assert len(result.items) == 10 and server.count == 1


def test_a_failing_llm_falls_back_instead_of_failing_the_request(
    biomed_sample_engine: EmbeddedEngine, spark: SparkStrategy, server: FakeOpenAIServer
) -> None:
    server.fail_next(Fault("status", 503))
    result = ask(biomed_sample_engine, spark, METHYLATION, k=5)
    assert result.notes["spark"]["fallback"].startswith("the LLM failed: ")
    assert "llm_usage" not in result.notes and len(result.items) == 5 and server.count == 1


def test_hostile_steps_are_dropped_and_nothing_is_executed(
    biomed_sample_engine: EmbeddedEngine, spark: SparkStrategy, server: FakeOpenAIServer
) -> None:
    stores = biomed_sample_engine.stores
    before = (len(stores.nodes), stores.graph.num_edges, list(stores.nodes.names[:50]))
    plan = {
        "steps": [
            {"id": "w", "cypher": "MATCH (n) DETACH DELETE n"},
            {"id": "c", "cypher": "CALL apoc.load.json('file:///etc/passwd') YIELD value RETURN value"},
            {"id": "x", "cypher": "MATCH (x:Protein)-[:HAS_FOO]->(y:gene) RETURN x"},
            {"id": "s", "search": "nephron", "type": "Biological Processes", "k": 4},
            {"id": "t", "search": "nephron", "type": "Organ", "k": 4},
        ],
        "answer": "s",
    }
    server.reply(HAS2, reply=json.dumps(plan))
    result = ask(biomed_sample_engine, spark, HAS2, k=4)
    assert (len(stores.nodes), stores.graph.num_edges, list(stores.nodes.names[:50])) == before
    warnings = "\n".join(result.notes["spark"]["warnings"])
    for expected in (
        "step 'w': syntax error: line 1, column 11: unsupported clause DETACH",
        "step 'w': the query returns no node variable",
        "step 'c': syntax error: line 1, column 1: unsupported clause CALL",
        "step 'x': label 'Protein' is not in the schema and was dropped (strict)",
        "step 'x': relationship -[:HAS_FOO]-> dropped: no edge type in the schema (strict)",
        "step 'x': nothing narrows 'x'",
        "step 's': label 'Biological Processes' read as 'biological_process'",
        "step 't': label 'Organ' is not in the schema; dropped",
    ):
        assert expected in warnings
    steps = {s["id"]: s["nodes"] for s in result.notes["spark"]["steps"]}
    assert steps == {"w": 0, "c": 0, "x": 0, "s": 4, "t": 4}
    assert {i.type for i in result.items} == {"biological_process"} and {i.source for i in result.items} == {
        "spark"
    }


def test_every_question_costs_exactly_one_llm_call(
    biomed_sample_engine: EmbeddedEngine, spark: SparkStrategy, server: FakeOpenAIServer
) -> None:
    search = {"steps": [{"search": "nephron", "type": "biological_process"}]}
    server.reply(HAS2, reply=json.dumps(search))
    server.reply(METHYLATION, reply="no plan")
    for question in (HAS2, METHYLATION, PREECLAMPSIA, HAS2):
        ask(biomed_sample_engine, spark, question, k=5)
    assert server.count == 4
    assert [next(q for q in (HAS2, METHYLATION, PREECLAMPSIA) if q in r.prompt) for r in server.received] == [
        HAS2,
        METHYLATION,
        PREECLAMPSIA,
        HAS2,
    ]


def test_deadline_and_options(
    biomed_sample_engine: EmbeddedEngine, spark: SparkStrategy, server: FakeOpenAIServer
) -> None:
    server.reply(HAS2, reply=json.dumps({"steps": [{"search": "nephron", "type": "biological_process", "k": 3}]}))
    late = ask(biomed_sample_engine, spark, HAS2, k=5, deadline_s=0)
    assert any("plan deadline of 0s passed; skipped: step1" in w for w in late.notes["spark"]["warnings"])
    assert late.notes["spark"]["fallback"] == "the plan returned no nodes"

    filled = ask(biomed_sample_engine, spark, HAS2, k=5)
    assert [i.source for i in filled.items] == ["spark"] * 3 + ["hybrid"] * 2
    assert filled.items[3].evidence["strand"].startswith("fill after the plan's 3 answer(s)")
    assert len(ask(biomed_sample_engine, spark, HAS2, k=5, fill=False).items) == 3
    with pytest.raises(InvalidInputError, match="unknown spark option"):
        ask(biomed_sample_engine, spark, HAS2, k=5, alpha=0.5)
    with pytest.raises(InvalidInputError, match="dense_weight must be within"):
        ask(biomed_sample_engine, spark, HAS2, k=5, dense_weight=2)


def test_without_an_llm_the_planner_says_what_to_configure(biomed_sample_engine: EmbeddedEngine) -> None:
    spark = SparkStrategy(biomed_sample_engine.stores)  # builds without an LLM (and without an af to share)
    assert spark.name == "spark" and not spark.available
    with pytest.raises(InvalidInputError) as error:
        spark.retrieve(QueryContext(METHYLATION, biomed_sample_engine.encoder), 5)
    assert str(error.value) == NEEDS_LLM
    assert "--llm" in NEEDS_LLM and "SKBQA_LLM_URL" in NEEDS_LLM and "docs/llm.md" in NEEDS_LLM
