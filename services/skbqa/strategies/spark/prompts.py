"""SPARK's one prompt: the schema, the plan language and the question (paper Figure 3 and Appendix H).

Appendix H's prompts describe a hand-written Neo4j schema per dataset and ask for ONE Cypher query; SPARK asks
for a plan that interleaves semantic search with Cypher (Figure 3). Everything schema-specific comes from the
SKB through `parser.prompts.SchemaProfile` (labels with their name key, example names and common attributes,
relationship signatures, a Cypher example built from a real path), so the same prompt serves any schema. The
two example plans are generated from the schema too, and `parse_plan` reads them back without warnings (a test
checks it). A prompt over its token budget drops example names, then attributes; the schema always stays.
"""

from __future__ import annotations

import json
from typing import Any

from skbqa.models.chat import ChatMessage, estimate_tokens
from skbqa.stages.parse.cypher.parser import parse_cypher
from skbqa.stages.parse.prompts import MAX_EXAMPLE_CHARS, SchemaProfile, TypeProfile, label, literal
from skbqa.strategies.spark.plan import DEFAULT_SEARCH_K, MAX_SEARCH_K, MAX_STEPS

_INTRO = """You retrieve the nodes of a knowledge graph that answer a question. Plan the retrieval with two tools, \
then reply with the plan as ONE JSON object and nothing else.
1) Understand the question: which entities, relationships, attributes and descriptions are involved?
2) Plan: graph queries for relationships between typed nodes and exact conditions; semantic search for \
descriptions, topics and names you cannot match exactly.
3) Write the plan."""

_TOOLS = f"""Tools (one step each; "id" names a step so that later steps can use its nodes):
- Semantic search over node texts: {{"id": "s1", "search": "<words describing the nodes>", "type": "<node label>", \
"k": {DEFAULT_SEARCH_K}}}
  Optional "within": "<earlier step id>" searches only among that step's nodes.
- Graph query in Cypher: {{"id": "g1", "cypher": "MATCH ... RETURN <one node variable>"}}
  Use only MATCH, WHERE and RETURN with AND, OR, =, <, >, CONTAINS, STARTS WITH and IN. Give a named node by its \
name key, e.g. (c:label {{name: "its name"}}).
  Optional "from": {{"<variable>": "<earlier step id>"}} starts that variable at the earlier step's nodes \
(expand from them).
- Combine earlier steps: {{"id": "c1", "intersect": ["s1", "g1"]}} or {{"id": "c1", "union": ["s1", "g1"]}}.

Plan: {{"target_type": "<node label of the answers>", "steps": [...], "answer": "<id of the step whose nodes answer \
the question>"}}
Rules: at most {MAX_STEPS} steps; a step may use only steps before it; "k" from 1 to {MAX_SEARCH_K}; write node \
labels and relationship types exactly as listed below."""


def _one_line(cypher: str) -> str:
    return " ".join(cypher.split())


def example_plans(profile: SchemaProfile) -> list[dict[str, Any]]:
    """Two plans for this schema: a graph query naming a node, and a search followed by an expansion from it."""
    schema = profile.schema
    first = schema.node_type_names[0]
    target = parse_cypher(profile.example, schema).target_type or first
    plans: list[dict[str, Any]] = [
        {"target_type": target, "steps": [{"id": "g1", "cypher": _one_line(profile.example)}], "answer": "g1"}
    ]
    examples = {t.name: t.examples for t in profile.types}
    signatures = [(e.name, e.source, e.target) for e in schema.edge_types]
    # prefer an edge between two different types whose far end has a real example name
    ranked = sorted(signatures, key=lambda s: (s[1] == s[2], not examples.get(s[2])))
    if ranked:
        edge, source, far = ranked[0]
        name = next(iter(examples.get(far, ())), far)
        name_attr = {t.name: t.name_attr for t in schema.node_types}
        cypher = f"MATCH (y:{label(source)})-[:{label(edge)}]->(x:{label(far)}) RETURN y.{name_attr[source]}"
        plans.append(
            {
                "target_type": source,
                "steps": [
                    {"id": "s1", "search": name, "type": far, "k": 5},
                    {"id": "g1", "cypher": cypher, "from": {"x": "s1"}},
                ],
                "answer": "g1",
            }
        )
    return plans


def _node_line(t: TypeProfile, n_examples: int, with_attributes: bool) -> str:
    details = [f"name key: {t.name_attr}"]
    if n_examples and t.examples:
        details.append("e.g. " + ", ".join(literal(e, MAX_EXAMPLE_CHARS) for e in t.examples[:n_examples]))
    if with_attributes and t.attributes:
        details.append("attributes: " + ", ".join(f"{k} (e.g. {v})" for k, v in t.attributes))
    return f"  - {t.name} ({'; '.join(details)})"


def _text(profile: SchemaProfile, question: str, n_examples: int, with_attributes: bool) -> str:
    schema = profile.schema
    tools = _TOOLS
    if any(label(n) != n for n in profile.type_names + schema.edge_names):
        tools += "\nIn Cypher, write labels that contain spaces or symbols in backticks, e.g. `a label`."
    nodes = "\n".join(_node_line(t, n_examples, with_attributes) for t in profile.types)
    edges = "\n".join(
        f"  - {name}: " + ", ".join(f"({s})->({d})" for s, d in schema.signatures(name))
        for name in schema.edge_names
    )
    examples = "\n".join(json.dumps(plan, ensure_ascii=False) for plan in example_plans(profile))
    return (
        f"{_INTRO}\n\n{tools}\n\n"
        f"Node labels:\n{nodes}\n"
        f"Relationship labels (source)->(target):\n{edges or '  (none)'}\n\n"
        f"Example plans:\n{examples}\n\n"
        f"Question: {question}\n"
        "Plan (JSON only):"
    )


def spark_prompt(profile: SchemaProfile, question: str, *, budget_tokens: int | None = None) -> list[ChatMessage]:
    """The planning prompt at the richest level of detail that fits `budget_tokens` (prompt tokens, estimated)."""
    most = max((len(t.examples) for t in profile.types), default=0)
    levels = [(n, True) for n in range(most, -1, -1)] + [(0, False)]
    text = ""
    for n_examples, with_attributes in levels:
        text = _text(profile, question, n_examples, with_attributes)
        if budget_tokens is None or estimate_tokens(text) <= budget_tokens:
            break
    return [ChatMessage("user", text)]
