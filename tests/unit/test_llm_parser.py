"""The LLM parser (AF-Retriever steps 1–3): prompts built from the SKB itself, target-type reply matching, the
single repair round, the fallback, and the whole path through a real HTTP server."""

from __future__ import annotations

from pathlib import Path

import pytest

from skbqa.models.chat import ChatMessage, ChatReply, LlmError
from skbqa.models.openai_chat import OpenAIChatModel
from skbqa.query.context import QueryContext
from skbqa.query.structured import Symbol, Triplet
from skbqa.skb.loaders import load_skb
from skbqa.skb.schema import Schema
from skbqa.stages.parse.cypher.parser import parse_cypher
from skbqa.stages.parse.llm import LlmParser, match_target_type
from skbqa.stages.parse.prompts import SchemaProfile, cypher_prompt, example_cypher, target_type_prompt
from skbqa.stores.nodes import NodeTable
from tests.fakes.openai_server import running_server
from tests.helpers import HashingEncoder, write_bundle

REPO = Path(__file__).resolve().parents[2]
QUESTION = "Which papers did Ada Lovelace write?"
GOOD_CYPHER = 'MATCH (p:paper)-[:written_by]->(a:author {name: "Ada Lovelace"}) RETURN p.title'


@pytest.fixture
def nodes(tiny_bundle: Path) -> NodeTable:
    return NodeTable.from_skb(load_skb(tiny_bundle))


@pytest.fixture
def profile(nodes: NodeTable) -> SchemaProfile:
    return SchemaProfile.from_nodes(nodes)


class ScriptedChat:
    """A `ChatModel` that answers from a list, in order, and records every conversation it was sent."""

    name = "scripted"
    context_window = 8192

    def __init__(self, *replies: str) -> None:
        self.replies = list(replies)
        self.sent: list[list[ChatMessage]] = []

    def chat(
        self,
        messages: list[ChatMessage],
        *,
        max_tokens: int | None = None,
        temperature: float = 0.0,
        timeout: float | None = None,
    ) -> ChatReply:
        self.sent.append(messages)
        if not self.replies:
            raise AssertionError(f"unexpected LLM call #{len(self.sent)}")
        return ChatReply(self.replies.pop(0), prompt_tokens=100, completion_tokens=10)


def ctx(question: str = QUESTION) -> QueryContext:
    return QueryContext(question, HashingEncoder())


# --- prompts ------------------------------------------------------------------------------------------------------


def test_prompts_show_the_skbs_own_labels_names_edges_and_attributes(profile: SchemaProfile) -> None:
    step1 = target_type_prompt(profile, QUESTION)[0].content
    step2 = cypher_prompt(profile, QUESTION, "paper")[0].content
    for text in (step1, step2):
        assert QUESTION in text
        for label in ("paper", "author", "field"):
            assert label in text
        assert '"Ada Lovelace"' in text or '"Alan Turing"' in text
    assert "Return nothing but the type" in step1
    assert "- written_by: (paper)->(author)" in step2
    assert "- cites: (paper)->(paper)" in step2
    assert "year (e.g. 2019)" in step2 and 'country (e.g. "UK")' in step2
    assert "name key: title" in step2
    assert "Target: RETURN one variable with the label paper" in step2
    for foreign in ("disease", "IGF1", "phenotype", "gene"):  # nothing of the paper's PRIME example
        assert foreign not in step2


def test_example_cypher_is_a_real_path_of_the_schema(profile: SchemaProfile, nodes: NodeTable) -> None:
    query = parse_cypher(profile.example, nodes.schema)
    assert query.warnings == []
    assert len(query.triplets) == 2
    edges = {t.edge for t in query.triplets}
    assert edges <= set(nodes.schema.edge_names)
    (constant,) = query.constants
    assert constant.names[0] in nodes.names
    assert query.target_type in nodes.schema.node_type_names


def test_example_cypher_for_the_biomed_sample_and_odd_labels() -> None:
    nodes = NodeTable.from_skb(load_skb(REPO / "data" / "biomed-sample"))
    example = SchemaProfile.from_nodes(nodes).example
    query = parse_cypher(example, nodes.schema)
    assert query.warnings == [] and len(query.triplets) == 2 and len(query.constants) == 1
    assert query.constants[0].names[0] in nodes.names

    schema = Schema.from_dict(
        {
            "name": "odd",
            "description": "",
            "node_types": [{"name": "gene/protein"}, {"name": "field of study", "name_attr": "title"}],
            "edge_types": [{"name": "studied in", "source": "gene/protein", "target": "field of study"}],
        }
    )
    example = example_cypher(schema, {"field of study": ("molecular biology",)})
    assert "`field of study`" in example and "`studied in`" in example
    query = parse_cypher(example, schema)
    assert query.warnings == []
    assert query.triplets == [Triplet("y", "studied in", "c")]
    assert query.symbols["c"] == Symbol("c", "field of study", ("molecular biology",))


def test_target_type_prompt_shrinks_to_its_budget(profile: SchemaProfile) -> None:
    full = target_type_prompt(profile, QUESTION)[0].content
    small = target_type_prompt(profile, QUESTION, budget_tokens=1)[0].content
    assert "(e.g." in full and "(e.g." not in small
    assert all(f"- {t}" in small for t in ("paper", "author", "field"))


def test_profile_is_deterministic(nodes: NodeTable) -> None:
    assert SchemaProfile.from_nodes(nodes) == SchemaProfile.from_nodes(nodes)


def test_cypher_prompt_shrinks_to_its_budget(profile: SchemaProfile) -> None:
    full = cypher_prompt(profile, QUESTION, None)[0].content
    small = cypher_prompt(profile, QUESTION, None, budget_tokens=len(full) // 4 - 20)[0].content
    assert len(small) < len(full)
    assert "Target:" not in full  # no type from step 1: no target restriction
    tiny = cypher_prompt(profile, QUESTION, None, budget_tokens=1)[0].content
    assert (
        "attributes:" not in tiny
        and "e.g. " + '"' not in tiny.split("Available Node Labels")[1].split("Example")[0]
    )
    assert "written_by" in tiny  # the schema itself is never dropped


# --- step 1 reply matching ------------------------------------------------------------------------------------------

TYPES = ["biological_process", "gene/protein", "gene", "effect/phenotype", "disease", "field of study", "body"]


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("disease", "disease"),
        ("Disease.", "disease"),
        ("  **diseases**\n", "disease"),
        ("Biological Process", "biological_process"),
        ("biological-process", "biological_process"),
        ("gene/protein", "gene/protein"),
        ("Gene", "gene"),
        ("field_of_study", "field of study"),
        ("bodies", "body"),
        ("Answer: effect/phenotype", "effect/phenotype"),
        ("<think>maybe a gene or a disease</think>disease", "disease"),
        ("The question asks for diseases that are linked to the gene.", None),  # two types named
        ("The instance must be a biological process, since it is regulated.", "biological_process"),
        ("It asks about gene/protein entities", "gene/protein"),  # 'gene' inside 'gene/protein' does not count
        ("", None),
        ("I cannot answer that.", None),
    ],
)
def test_match_target_type(reply: str, expected: str | None) -> None:
    found, problem = match_target_type(reply, TYPES)
    assert found == expected
    assert (problem is None) == (expected is not None)


# --- the parser with a scripted model ---------------------------------------------------------------------------------


def test_clean_path_two_calls(profile: SchemaProfile) -> None:
    chat = ScriptedChat("paper", f"```cypher\n{GOOD_CYPHER}\n```")
    query = ctx()
    trace = LlmParser(chat, profile).parse_traced(query)
    result = trace.query
    assert len(chat.sent) == 2
    assert "Target: RETURN one variable with the label paper" in chat.sent[1][0].content
    assert result.target_type == "paper" and result.predicted_type == "paper"
    assert result.triplets == [Triplet("p", "written_by", "a")]
    assert result.symbols["a"].names == ("Ada Lovelace",)
    assert result.warnings == []
    assert (trace.calls, trace.prompt_tokens, trace.completion_tokens, trace.repaired) == (2, 200, 20, False)
    assert {"parse.target_type", "parse.cypher"} <= set(query.timings)


def test_repair_round_fixes_a_syntax_error(profile: SchemaProfile) -> None:
    broken = 'MATCH (p:paper)-[:written_by]->(a:author {name: "Ada Lovelace"} RETURN p.title'
    chat = ScriptedChat("paper", broken, GOOD_CYPHER)
    result = LlmParser(chat, profile).parse(ctx())
    assert len(chat.sent) == 3
    repair = chat.sent[2]
    assert repair[:-2] == chat.sent[1]  # the same conversation, continued
    assert repair[-2] == ChatMessage("assistant", broken)
    assert "line 1, column 65: expected ')'" in repair[-1].content  # the parser's error, verbatim
    assert result.triplets == [Triplet("p", "written_by", "a")]
    assert any("one repair round" in w for w in result.warnings)


@pytest.mark.parametrize(
    ("first", "error"),
    [
        ("MATCH (p:paper)-[:written_by]->(a:author)", "no RETURN clause"),
        ("MATCH (p:paper)-[r:written_by]->(a:author) RETURN r", "does not RETURN a node variable"),
        ("MATCH (p)-[:written_by]->(a:author) RETURN y.title", "'y' is not bound by MATCH"),
    ],
)
def test_a_query_without_a_node_target_is_repaired(profile: SchemaProfile, first: str, error: str) -> None:
    chat = ScriptedChat("paper", first, GOOD_CYPHER)
    result = LlmParser(chat, profile).parse(ctx())
    assert len(chat.sent) == 3
    assert error in chat.sent[2][-1].content
    assert result.target == "p"


def test_garbage_twice_falls_back_after_exactly_one_repair(profile: SchemaProfile) -> None:
    chat = ScriptedChat("paper", "Sorry, I do not know Cypher.", "Still no idea!!! ((((")
    query = ctx()
    result = LlmParser(chat, profile).parse(query)
    assert len(chat.sent) == 3  # type, cypher, one repair — never a second repair
    assert result.text_constraints == [QUESTION]
    assert result.target_type == "paper" and result.predicted_type == "paper"
    assert result.triplets == [] and result.constants == []
    assert any("the question is the only constraint" in w for w in result.warnings)
    assert "parse.cypher" in query.timings


def test_broken_repair_with_a_usable_best_effort_parse(profile: SchemaProfile) -> None:
    partly = 'MATCH (p:paper)-[:written_by]->(a:author {name: "Ada Lovelace"}) WHERE p.year > RETURN p.title'
    chat = ScriptedChat("paper", partly, partly)
    result = LlmParser(chat, profile).parse(ctx())
    assert len(chat.sent) == 3
    assert result.triplets == [Triplet("p", "written_by", "a")]
    assert any("best-effort parse is used" in w for w in result.warnings)


def test_type_disagreement_keeps_both(profile: SchemaProfile) -> None:
    cypher = 'MATCH (a:author)<-[:written_by]-(p:paper {title: "Protein folding with attention"}) RETURN a.name'
    chat = ScriptedChat("paper", cypher)
    result = LlmParser(chat, profile).parse(ctx("Who wrote Protein folding with attention?"))
    assert result.target_type == "author"  # the graph strand grounds what the Cypher returns
    assert result.predicted_type == "paper"  # the vector strand filters by step 1
    assert any("disagreement" in w and "'paper'" in w and "'author'" in w for w in result.warnings)


def test_unlabelled_target_takes_the_step1_type(profile: SchemaProfile) -> None:
    chat = ScriptedChat(
        "author", 'MATCH (a)<-[:written_by]-(p:paper {title: "Retrieval over knowledge bases"}) RETURN a'
    )
    result = LlmParser(chat, profile).parse(ctx("Who wrote Retrieval over knowledge bases?"))
    assert result.target_type == "author"
    assert any("has no known label" in w for w in result.warnings)


def test_unusable_type_reply(profile: SchemaProfile) -> None:
    chat = ScriptedChat("a wizard", GOOD_CYPHER)
    result = LlmParser(chat, profile).parse(ctx())
    assert result.predicted_type is None
    assert result.target_type == "paper"
    assert "Target:" not in chat.sent[1][0].content
    assert any("target type (step 1) unusable" in w for w in result.warnings)


def test_lenient_mode_maps_unknown_labels(profile: SchemaProfile) -> None:
    cypher = 'MATCH (p:Papers)-[:WRITTEN_BY]->(a:Author {name: "Ada Lovelace"}) RETURN p'
    strict_chat = ScriptedChat("paper", cypher, cypher)
    strict = LlmParser(strict_chat, profile, mode="strict").parse(ctx())
    lenient_chat = ScriptedChat("paper", cypher)
    lenient = LlmParser(lenient_chat, profile, mode="lenient").parse(ctx())
    # strict drops the unknown label and edge type, leaving a target bound to nothing: repaired, then fallback
    assert len(strict_chat.sent) == 3 and "'p' is not bound" in strict_chat.sent[2][-1].content
    assert strict.triplets == [] and strict.text_constraints == [QUESTION] and strict.target_type == "paper"
    assert len(lenient_chat.sent) == 2
    assert lenient.triplets == [Triplet("p", "written_by", "a")]


def test_llm_errors_propagate(profile: SchemaProfile) -> None:
    class Down(ScriptedChat):
        def chat(self, messages: list[ChatMessage], **_: object) -> ChatReply:  # type: ignore[override]
            raise LlmError("endpoint down")

    with pytest.raises(LlmError):
        LlmParser(Down(), profile).parse(ctx())


# --- end to end over HTTP ---------------------------------------------------------------------------------------------


def test_end_to_end_through_an_openai_compatible_server(tmp_path: Path) -> None:
    bundle = write_bundle(tmp_path / "bundle")
    nodes = NodeTable.from_skb(load_skb(bundle))
    with running_server() as server:
        server.reply("Return nothing but the type", "Ada Lovelace", reply="Papers", usage=(120, 2))
        server.reply(
            "Generate a Cypher query", "Ada Lovelace", reply=f"Here you go:\n{GOOD_CYPHER}", usage=(400, 30)
        )
        chat = OpenAIChatModel(server.url, "fake", timeout=5.0)
        parser = LlmParser.from_nodes(nodes, chat)
        query = ctx()
        result = parser.parse(query)
        prompts = [r.prompt for r in server.received]
    assert len(prompts) == 2
    assert "written_by: (paper)->(author)" in prompts[1]  # the SKB's schema went over the wire
    assert result.target_type == "paper" and result.predicted_type == "paper"
    assert result.triplets == [Triplet("p", "written_by", "a")]
    assert result.symbols["a"] == Symbol("a", "author", ("Ada Lovelace",))
    counters = chat.counters()
    assert (counters["requests"], counters["prompt_tokens"], counters["completion_tokens"]) == (2, 520, 32)
    assert query.timings["parse.target_type"] > 0 and query.timings["parse.cypher"] > 0
