"""The LLM prompts of AF-Retriever steps 1–2 (paper, Appendix A.2), generalised to any SKB schema.

The paper's prompts list bare type names and show one hand-written PRIME example. Here everything shown comes
from the SKB itself, so the same prompts work for biomedicine, papers or products:
- node labels, each with a few example names sampled deterministically from the node table (evenly spaced over
  the type's nodes, so repeated builds give the same prompt and cached replies stay valid), its name key, and
  its most common attribute keys with an example value;
- relationship labels with their (source)->(target) signatures;
- a few-shot Cypher example generated from a real two-hop path of the schema and a real node name (the shape
  of the paper's example), which `parse_cypher` reads back without warnings.
A prompt larger than its token budget drops examples, then attributes, before anything else.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

import numpy as np

from skbqa.models.chat import ChatMessage, estimate_tokens
from skbqa.skb.schema import Schema
from skbqa.stores.nodes import NodeTable

MAX_EXAMPLE_CHARS = 50  # long names (full gene names, paper titles) cost tokens and teach little
ATTRIBUTE_SAMPLE = 64  # nodes per type whose attribute keys are counted
_PLAIN_LABEL = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class TypeProfile:
    name: str
    name_attr: str
    examples: tuple[str, ...]  # real node names of this type
    attributes: tuple[tuple[str, str], ...]  # (key, an example value as Cypher literal), most common first


@dataclass(frozen=True)
class SchemaProfile:
    """What the prompts show about one SKB; built once per index."""

    schema: Schema
    types: tuple[TypeProfile, ...]
    example: str  # the few-shot Cypher

    @classmethod
    def from_nodes(cls, nodes: NodeTable, *, examples: int = 3, attributes: int = 5) -> SchemaProfile:
        types = tuple(_profile(nodes, t.name, t.name_attr, examples, attributes) for t in nodes.schema.node_types)
        return cls(nodes.schema, types, example_cypher(nodes.schema, {t.name: t.examples for t in types}))

    @property
    def type_names(self) -> list[str]:
        return self.schema.node_type_names


def _profile(nodes: NodeTable, type_name: str, name_attr: str, n_examples: int, n_attributes: int) -> TypeProfile:
    positions = np.flatnonzero(nodes.types == nodes.schema.node_code(type_name))
    examples: list[str] = []
    if positions.size and n_examples:
        # oversample evenly spaced candidates, keep the first short distinct names
        picks = positions[
            np.unique(
                np.linspace(0, positions.size - 1, min(positions.size, 8 * n_examples)).round().astype(np.int64)
            )
        ]
        for position in picks:
            name = " ".join(str(nodes.names[int(position)]).split())
            if name and len(name) <= MAX_EXAMPLE_CHARS and name not in examples:
                examples.append(name)
            if len(examples) == n_examples:
                break
    counts: Counter[str] = Counter()
    values: dict[str, str] = {}
    if positions.size and n_attributes:
        sample = positions[
            np.unique(
                np.linspace(0, positions.size - 1, min(positions.size, ATTRIBUTE_SAMPLE)).round().astype(np.int64)
            )
        ]
        for position in sample:
            for key, value in nodes.attrs[int(position)].items():
                if key == name_attr or value is None or value == "":
                    continue
                counts[key] += 1
                values.setdefault(key, literal(value))
    keys = sorted(counts, key=lambda k: (-counts[k], k))[:n_attributes]
    return TypeProfile(type_name, name_attr, tuple(examples), tuple((k, values[k]) for k in keys))


# --- Cypher text ------------------------------------------------------------------------------------------------


def label(name: str) -> str:
    """A label or relationship type as written in Cypher: backticks unless it is a plain identifier."""
    return name if _PLAIN_LABEL.fullmatch(name) else "`" + name.replace("`", "``") + "`"


def literal(value: object, limit: int = 30) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    text = " ".join(str(value).split())
    if len(text) > limit:
        text = text[:limit].rstrip() + "…"
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _constant(names: tuple[str, ...]) -> str:
    """The example name that reads most like a real constant (a root term such as "All" teaches little)."""
    return next((n for n in names if len(n.split()) > 1 and len(n) >= 8), names[0])


def example_cypher(schema: Schema, examples: dict[str, tuple[str, ...]]) -> str:
    """A Cypher example in the shape of the paper's: answer -[e1]- hop -[e2]- named constant, from this schema.

    Prefers a two-hop path over three distinct types whose constant type has a real example name; falls back to
    one hop, then to a single labelled node. Deterministic: the first fitting edges in schema order."""
    sigs = [(e.name, e.source, e.target) for e in schema.edge_types]
    name_attr = {t.name: t.name_attr for t in schema.node_types}

    def named(t: str) -> bool:
        return bool(examples.get(t))

    for distinct in (True, False):
        for e1, y, x in sigs:
            for e2, a, b in sigs:
                if (e2, a, b) == (e1, y, x) or x not in (a, b):
                    continue
                c, outgoing = (b, True) if a == x else (a, False)
                if not named(c) or (distinct and len({y, x, c}) < 3):
                    continue
                step = f"-[:{label(e2)}]->" if outgoing else f"<-[:{label(e2)}]-"
                return (
                    f"MATCH (y:{label(y)})-[:{label(e1)}]->(x:{label(x)})\n"
                    f"MATCH (x){step}(c:{label(c)})\n"
                    f"WHERE c.{name_attr[c]} = {literal(_constant(examples[c]), 200)}\n"
                    f"RETURN y.{name_attr[y]}"
                )
    for e1, y, c in sigs:
        if named(c) and y != c:
            return (
                f"MATCH (y:{label(y)})-[:{label(e1)}]->(c:{label(c)})\n"
                f"WHERE c.{name_attr[c]} = {literal(_constant(examples[c]), 200)}\n"
                f"RETURN y.{name_attr[y]}"
            )
    for t in schema.node_types:
        if named(t.name):
            word = max(examples[t.name][0].split(), key=len)
            return f"MATCH (y:{label(t.name)})\nWHERE y.{t.name_attr} CONTAINS {literal(word)}\nRETURN y.{t.name_attr}"
    first = schema.node_types[0]
    return f"MATCH (y:{label(first.name)})\nRETURN y.{first.name_attr}"


# --- prompts ----------------------------------------------------------------------------------------------------


def _examples(t: TypeProfile, n: int) -> str:
    return ", ".join(literal(e, MAX_EXAMPLE_CHARS) for e in t.examples[:n])


def target_type_prompt(
    profile: SchemaProfile, question: str, *, examples: int = 2, budget_tokens: int | None = None
) -> list[ChatMessage]:
    """DERIVE_TARGET_TYPE (step 1): which node type answers the question (fewer examples if over budget)."""
    text = ""
    for n in range(examples, -1, -1):
        text = _target_type_text(profile, question, n)
        if budget_tokens is None or estimate_tokens(text) <= budget_tokens:
            break
    return [ChatMessage("user", text)]


def _target_type_text(profile: SchemaProfile, question: str, examples: int) -> str:
    lines = []
    for t in profile.types:
        shown = _examples(t, examples)
        lines.append(f"- {t.name}" + (f" (e.g. {shown})" if shown else ""))
    return (
        "Given several instances of these types:\n"
        + "\n".join(lines)
        + f"\nAn instance of which type could correctly answer the query: {question}\n\n"
        "Return nothing but the type of which the instance must be of. The type is one of: "
        + ", ".join(profile.type_names)
        + "."
    )


_RESTRICTIONS = """Generate a Cypher query based on the given query Q. Please follow the restrictions precisely!

- Simple Syntax: Use a very basic and short Cypher syntax.
- Content Accuracy: Omit any information that cannot be exactly captured with one of the given, available node labels, relationship labels or attributes, or available keywords.
- No Quantifications: Avoid using quantifications.
- No Negations: Skip negated facts, avoid using "NOT" or "<>".
- No "OR": Do not use "OR".
- Available Keywords: Restrict yourself to the available keywords: MATCH, WHERE, RETURN, AND, CONTAINS.
- Date Format: Format dates as YYYY-MM-DD.
- Names: Give a named entity by its name key, e.g. WHERE c.name = "its name"."""


def cypher_prompt(
    profile: SchemaProfile, question: str, target_type: str | None, *, budget_tokens: int | None = None
) -> list[ChatMessage]:
    """DERIVE_CYPHER (step 2), at the richest level of detail that fits `budget_tokens`."""
    most = max((len(t.examples) for t in profile.types), default=0)
    levels = [(n, True) for n in range(most, -1, -1)] + [(0, False)]
    text = ""
    for n_examples, with_attributes in levels:
        text = _cypher_text(profile, question, target_type, n_examples, with_attributes)
        if budget_tokens is None or estimate_tokens(text) <= budget_tokens:
            break
    return [ChatMessage("user", text)]


def _cypher_text(
    profile: SchemaProfile, question: str, target_type: str | None, n_examples: int, with_attributes: bool
) -> str:
    restrictions = _RESTRICTIONS
    if target_type is not None:
        restrictions += (
            f"\n- Target: RETURN one variable with the label {label(target_type)}: the query asks for it."
        )
    if any(label(n) != n for n in profile.type_names + profile.schema.edge_names):
        restrictions += "\n- Labels: Write labels that contain spaces or symbols in backticks, e.g. `a label`."
    nodes = []
    for t in profile.types:
        details = [f"name key: {t.name_attr}"]
        if n_examples and t.examples:
            details.append("e.g. " + _examples(t, n_examples))
        if with_attributes and t.attributes:
            details.append("attributes: " + ", ".join(f"{k} (e.g. {v})" for k, v in t.attributes))
        nodes.append(f"  - {t.name} ({'; '.join(details)})")
    edges = []
    for name in profile.schema.edge_names:
        sigs = ", ".join(f"({s})->({d})" for s, d in profile.schema.signatures(name))
        edges.append(f"  - {name}: {sigs}")
    return (
        f"{restrictions}\n\nGiven Information:\n\n- Query Q: {question}\n"
        "- Available Node Labels:\n" + "\n".join(nodes) + "\n"
        "- Available Relationship Labels (source)->(target):\n" + ("\n".join(edges) or "  (none)") + "\n\n"
        f"Example:\n{profile.example}"
    )


def repair_prompt(previous: list[ChatMessage], reply: str, error: str) -> list[ChatMessage]:
    """The repair round: the conversation so far, the unusable reply, and the parser's error."""
    return [
        *previous,
        ChatMessage("assistant", reply),
        ChatMessage(
            "user",
            f"This Cypher query cannot be used: {error}\n"
            "Return only the corrected Cypher query (MATCH ... RETURN ...), following the same restrictions.",
        ),
    ]
