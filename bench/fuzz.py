"""Fuzz campaign for the two question parsers: the Cypher parser for LLM output and the encoder parser (no LLM).

Both read untrusted text and are documented never to raise on it (`skbqa.stages.parse.base`, `skbqa.stages.parse.cypher.parser`):
bad input is dropped and recorded in `StructuredQuery.warnings`. So *any* exception escaping `parse_cypher`,
`parse_cypher_or_error` or `EncoderParser.parse` counts as unhandled. The Cypher parser also has a last-resort
safety net that turns an internal exception into an "internal parser error" warning; those are counted
separately (they are bugs the net hid), and so are results that break the model's invariants (a triplet naming
an unknown symbol, an edge type outside the schema, ...).

Inputs come from structured generators driven by one seeded `random.Random`:
- Cypher: grammar-shaped queries over the schema (random labels, quotes, escapes, unicode, huge literals, deep
  nesting, alternations, unsupported clauses), mutations of valid seed queries, token soup, LLM-answer wrappers
  (fences, JSON, prose, <think>), and random bytes decoded several ways (lone surrogates included);
- questions: templates over the schema's type / edge words and the SKB's node names and attribute values,
  mutations of the bundle's real questions, word soup, unicode torture (bidi overrides, zero-width, NUL, case
  mappings that change length, mixed scripts), and random bytes decoded; at most 4,000 characters (the request
  limit), fed raw and, for 30% of them, through `clean_question` as the pipeline does (what it refuses is
  counted and parsed raw, so every input reaches a parser).

The schema and stores are the bundled real biomedical sample (`data/biomed-sample`, 3,043 nodes), ingested with
the deterministic hashing encoder of `tests/helpers.py` (a few seconds; the parser's logic does not depend on
the model's semantics).

    nice -n 19 .venv/bin/python bench/fuzz.py                       # 1,000,000 inputs, ~30-60 min on a busy box
    .venv/bin/python bench/fuzz.py --inputs 20000 --out /tmp/f.json   # a quick look
    nice -n 19 .venv/bin/python bench/fuzz.py --atheris-runs 200000    # plus a coverage-guided atheris run

Writes bench/results/fuzz.json (checkpointed while running): counts per parser and generator, unhandled
exceptions grouped by type and location with reproducers (`ascii()` of the input), internal errors, invariant
violations, per-input time p50 / p99 / max and the slowest inputs.
"""

from __future__ import annotations

import argparse
import contextlib
import heapq
import importlib.metadata
import json
import logging
import os
import random
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # tests.helpers (the hashing encoder)
DEFAULT_BUNDLE = ROOT / "data" / "biomed-sample"
DEFAULT_OUT = ROOT / "bench" / "results" / "fuzz.json"
MAX_QUESTION_CHARS = 4000  # skbqa.engine.answers.MAX_QUESTION_CHARS: longer questions never reach a parser
EXAMPLES_PER_SIGNATURE = 3
SLOWEST_KEPT = 8

# --- vocabulary -------------------------------------------------------------------------------------------------

UNICODE_SPICE = [
    "\u202e", "\u202d", "\u2066", "\u2067", "\u2068", "\u2069", "\u200e", "\u200f", "\u061c",  # bidi
    "\u200b", "\u200c", "\u200d", "\ufeff", "\u2060",  # zero width
    "\u0301", "\u0308", "\u20dd", "\u0345",  # combining marks
    "\x00", "\x01", "\x07", "\x08", "\t", "\n", "\r", "\x0b", "\x0c", "\x1b", "\x1f", "\x7f", "\x85",  # controls
    "\u2028", "\u2029", "\u00a0", "\u3000", "\u1680",  # separators
    "\ud800", "\udfff", "\udc80",  # lone surrogates
    "\uffff", "\ufffe", "\U0010ffff", "\ue000", "\ufffd",  # non-characters, private use, replacement
    "İ", "ß", "ﬃ", "ŉ", "ǰ", "ΐ", "ẞ", "Σ", "ς", "K", "Å",  # case mappings that change length / normalise
    "ＭＡＴＣＨ", "（", "）", "［", "＝", "＂", "＇", "｀", "²", "Ⅻ", "①", "ﬁ",  # NFKC folds
    "Мatch", "рaper", "gеne",  # Cyrillic homoglyphs
    "αβγ", "Ωμέγα", "مرض", "גן", "基因", "遺伝子", "유전자", "जीन", "ยีน",  # scripts
    "👩\u200d🔬", "🇩🇪", "🧬", "\U0001f600", "𝔤𝔢𝔫𝔢", "𝟘𝟙",  # astral
    "“", "”", "‘", "’", "«", "»", "–", "—", "−", "…", "·",  # typographic
]  # fmt: skip
FUNCTION_WORDS = [
    "which", "what", "who", "that", "the", "a", "an", "of", "are", "is", "in", "on", "with", "and", "or", "not",
    "to", "by", "for", "from", "there", "whose", "related", "mention", "mentions", "described", "participating",
    "located", "associated", "have", "has", "kind", "subtypes", "parents", "part", "as", "name", "find", "list",
    "above", "below", "after", "before", "at", "least", "most", "more", "than", "between", "?", ",", ".", "'",
    '"', "(", ")", "-", "/", ":", ";", "!", "&", "%", "*",
]  # fmt: skip
NUMBERS = ["0", "1", "2", "8", "17", "22", "X", "Y", "2015", "6.5", "-3", "1e9", "3.14", "99999999999999999999"]
CYPHER_KEYWORDS = [
    "MATCH", "OPTIONAL MATCH", "WHERE", "WITH", "RETURN", "UNION", "UNION ALL", "AND", "OR", "XOR", "NOT", "IN",
    "IS NULL", "IS NOT NULL", "CONTAINS", "STARTS WITH", "ENDS WITH", "DISTINCT", "LIMIT 10", "SKIP 2",
    "ORDER BY", "AS", "BETWEEN", "CASE", "WHEN", "THEN", "ELSE", "END", "CREATE", "MERGE", "DELETE",
    "DETACH DELETE", "SET", "REMOVE", "CALL", "UNWIND", "FOREACH", "LOAD CSV FROM", "YIELD", "exists", "count",
    "toLower", "toUpper", "trim", "date", "shortestPath", "allShortestPaths", "apoc.load.json", "db.labels",
]  # fmt: skip
PUNCT = [
    "(", ")", "[", "]", "{", "}", ":", ",", ".", "..", "|", "*", "=", "<>", "!=", "<", ">", "<=", ">=", "=~",
    "-", "->", "<-", "--", "-->", "<--", ";", "`", "'", '"', "```", "$", "\\", "//", "/*", "*/", "\n", "+",
    "/", "%", "^", "&", "!", "?", "@", "#", "~",
]  # fmt: skip
SEED_CYPHER = [
    "MATCH (g:gene)-[:gene_participates_in_biological_process]->(b:biological_process {name: 'methylation'}) "
    "RETURN g",
    "MATCH (d:disease)-[:disease_has_phenotype]->(p:phenotype {name: \"Seizure\"}) WHERE d.name CONTAINS 'x' "
    "RETURN d",
    "MATCH (g:gene {name: 'HAS2'})-[:gene_participates_in_biological_process]->(b) RETURN b",
    "MATCH (a:phenotype)-[:is_a*1..2]->(b:phenotype) WHERE b.name IN ['Seizure', 'Ataxia'] RETURN a",
    "MATCH (g:gene) WHERE g.chromosome = '8' AND (g.symbol = 'A' OR g.symbol = 'B') RETURN DISTINCT g LIMIT 5",
    "MATCH (c:cellular_component)<-[:gene_located_in_cellular_component]-(g:gene) WITH c AS x RETURN x",
    "MATCH (p:phenotype) WHERE toLower(p.name) =~ '(?i).*seiz.*' RETURN p ORDER BY p.name",
    "MATCH (d:disease) WHERE exists((d)-[:disease_has_phenotype]->(:phenotype {name: 'Fever'})) RETURN d",
    "MATCH (a)-[:is_a|part_of]->(b:biological_process {name: 'growth'}) RETURN a UNION "
    "MATCH (a)-[:regulates]->(b) RETURN a",
    "MATCH path = shortestPath((a:gene)-[*..3]-(b:disease)) RETURN a",
    "MATCH (g:gene WHERE g.type = 'protein-coding')-->(m:molecular_function) RETURN m",
    "OPTIONAL MATCH (x:`gene/protein`)-[r:`has phenotype`]-(y) WHERE r.since > 3 RETURN x.name AS n",
    "MATCH (p:paper) WHERE p.year BETWEEN 2000 AND 2010 AND NOT p.x = 1 AND p.y IS NOT NULL RETURN p",
    "```cypher\nMATCH (d:disease {name: 'asthma'}) RETURN d\n```",
    '{"query": "MATCH (g:gene) WHERE g.name STARTS WITH \\"BRCA\\" RETURN g"}',
]


@dataclass
class Vocabulary:
    """Words of one SKB: its schema, a sample of node names, attribute keys / values and real questions."""

    type_names: list[str]
    type_words: list[str]  # "biological processes", "genes", "Diseases", ...
    edge_names: list[str]
    edge_words: list[str]
    names: list[str]
    attr_keys: list[str]
    attr_values: list[str]
    questions: list[str]


def vocabulary(stores: Any, questions: list[str], rng: random.Random) -> Vocabulary:
    schema = stores.nodes.schema
    types = schema.node_type_names
    type_words: list[str] = []
    for t in types:
        spaced = t.replace("_", " ")
        type_words += [spaced, spaced + "s", spaced.title(), spaced.upper(), spaced + "es", t]
    edge_words: list[str] = []
    for e in schema.edge_names:
        edge_words += [e, e.replace("_", " "), *e.split("_")]
    nodes = stores.nodes
    sample = rng.sample(range(len(nodes)), min(600, len(nodes)))
    names = [nodes.names[p] for p in sample]
    keys: set[str] = set()
    values: list[str] = []
    for p in sample:
        for k, v in nodes.attrs[p].items():
            keys.add(str(k))
            values.append(str(v))
    return Vocabulary(
        types, type_words, schema.edge_names, edge_words, names, sorted(keys), values[:600], questions
    )


# --- generators -------------------------------------------------------------------------------------------------


def _spice(rng: random.Random) -> str:
    return rng.choice(UNICODE_SPICE)


def _random_unicode(rng: random.Random, n: int) -> str:
    out = []
    for _ in range(n):
        r = rng.random()
        if r < 0.5:
            out.append(chr(rng.randrange(32, 127)))
        elif r < 0.7:
            out.append(_spice(rng))
        elif r < 0.9:
            out.append(chr(rng.randrange(0x80, 0x3000)))
        else:
            out.append(chr(rng.randrange(0, 0x110000)))
    return "".join(out)


def random_bytes_text(rng: random.Random, max_len: int = 400) -> str:
    """Random bytes decoded as a client or a broken proxy might: UTF-8 with replacement, with surrogateescape
    (lone surrogates), Latin-1, or UTF-16 with surrogatepass."""
    n = rng.choice([0, 1, 2, 8, 32, 100, max_len]) if rng.random() < 0.3 else rng.randrange(0, max_len + 1)
    data = rng.randbytes(n)
    how = rng.randrange(4)
    if how == 0:
        return data.decode("utf-8", "replace")
    if how == 1:
        return data.decode("utf-8", "surrogateescape")
    if how == 2:
        return data.decode("latin-1")
    try:
        return data[: n - n % 2].decode("utf-16-le", "surrogatepass")
    except UnicodeDecodeError:
        return data.decode("utf-8", "replace")


def mutate(rng: random.Random, text: str, pool: list[str], rounds: int | None = None) -> str:
    """Byte-level-ish mutations on characters: insert a token or a character, delete / duplicate / swap a span,
    flip case, truncate, splice with another text of the pool."""
    for _ in range(rounds if rounds is not None else rng.randint(1, 6)):
        n = len(text)
        op = rng.randrange(9)
        i = rng.randrange(n + 1)
        j = min(n, i + rng.randint(1, 12))
        if op == 0:
            text = text[:i] + rng.choice(PUNCT + CYPHER_KEYWORDS) + text[i:]
        elif op == 1:
            text = text[:i] + _spice(rng) + text[i:]
        elif op == 2:
            text = text[:i] + text[j:]
        elif op == 3:
            text = text[:j] + text[i:j] * rng.randint(1, 40) + text[j:]
        elif op == 4 and n > 2:
            k = rng.randrange(n + 1)
            a, b = sorted((i, k))
            text = text[:a] + text[j:] + text[a:b] if b < j else text[:a] + text[b:] + text[a:b]
        elif op == 5:
            text = text[:i] + text[i:j].swapcase() + text[j:]
        elif op == 6:
            text = text[:i]
        elif op == 7:
            other = rng.choice(pool)
            text = text[:i] + other[rng.randrange(len(other) + 1) :]
        else:
            text = text[:i] + chr(rng.randrange(0, 0x110000)) + text[i:]
    return text


class CypherGenerator:
    def __init__(self, vocab: Vocabulary) -> None:
        self.v = vocab
        self.labels = [*vocab.type_names, "Gene", "Genes", "Disease", "BiologicalProcess", "protein", "x", "Node"]
        self.edges = [*vocab.edge_names, "HAS_PHENOTYPE", "participates in", "associated_with", "r", "TREATS"]
        self.keys = [
            "name",
            "title",
            "symbol",
            "chromosome",
            "type",
            "year",
            "id",
            "description",
            *vocab.attr_keys,
        ]
        self.vars = ["a", "b", "g", "d", "p", "x", "_1", "n1", "`odd var`", "match", "RETURN", "r"]

    def kinds(self) -> list[tuple[str, Callable[[random.Random], str], float]]:
        return [
            ("grammar", self.grammar, 0.38),
            ("mutated_seed", self.mutated, 0.22),
            ("token_soup", self.token_soup, 0.12),
            ("llm_wrapped", self.wrapped, 0.12),
            ("huge_or_deep", self.hostile, 0.04),
            ("random_bytes", lambda rng: random_bytes_text(rng, 600), 0.12),
        ]

    # pieces
    def ident(self, rng: random.Random, pool: list[str]) -> str:
        r = rng.random()
        if r < 0.75:
            name = rng.choice(pool)
        elif r < 0.85:
            name = _random_unicode(rng, rng.randint(1, 12))
        else:
            name = rng.choice(pool) + rng.choice(["/", "-", " ", "`", "``", "s", "_2", _spice(rng)]) + "x"
        if any(not (c.isalnum() or c == "_") for c in name) or rng.random() < 0.1:
            return "`" + name.replace("`", "``" if rng.random() < 0.7 else "`") + "`"
        return name

    def string(self, rng: random.Random) -> str:
        r = rng.random()
        if r < 0.5:
            body = rng.choice([*self.v.names, *self.v.attr_values, "", "x", "(?i).*a.*", "(bad", "2015-01-01"])
        elif r < 0.8:
            body = _random_unicode(rng, rng.randint(0, 30))
        elif r < 0.95:
            body = rng.choice(["\\", "\\'", '\\"', "\\u00e9", "\\ud800", "\\U0010FFFF", "\\U00110000", "\\x41"])
            body = body * rng.randint(1, 5) + rng.choice(["", "\\"])
        else:
            body = rng.choice(["a", "é", "\x00", "'"]) * rng.choice([1000, 5000, 30_000])
        quote = rng.choice(["'", '"', "'", '"', "“", "‘", "`"])
        close = {"“": "”", "‘": "’"}.get(quote, quote)
        if rng.random() < 0.05:
            close = ""  # unterminated
        return quote + body + close

    def number(self, rng: random.Random) -> str:
        r = rng.random()
        if r < 0.7:
            return rng.choice([*NUMBERS[:-1], "0.5", "-1.5e3", ".5", "1.", "1e", "1e-400", "1e400", "0x1F"])
        if r < 0.9:
            return str(rng.randrange(10 ** rng.randint(1, 40)))
        return "9" * rng.choice([99, 100, 101, 4300, 5000])

    def literal(self, rng: random.Random, depth: int = 0) -> str:
        r = rng.random()
        if r < 0.45:
            return self.string(rng)
        if r < 0.7:
            return self.number(rng)
        if r < 0.78:
            return rng.choice(["true", "FALSE", "null", "NULL", "$p", "$0", "$`x`"])
        if r < 0.9 and depth < 3:
            items = [self.literal(rng, depth + 1) for _ in range(rng.randint(0, 4))]
            return "[" + ", ".join(items) + rng.choice(["]", "]", ",]", ""])
        if depth < 3:
            fn = rng.choice(["date", "toLower", "toUpper", "trim", "lower", "datetime", "f", "count"])
            return f"{fn}({self.literal(rng, depth + 1)})"
        return "1"

    def props(self, rng: random.Random) -> str:
        items = [f"{self.ident(rng, self.keys)}: {self.literal(rng)}" for _ in range(rng.randint(0, 3))]
        return " {" + ", ".join(items) + rng.choice(["}", "}", "}", ",}", ""])

    def node(self, rng: random.Random) -> str:
        if rng.random() < 0.05:
            return rng.choice(self.vars)  # a bare variable, as LLMs write it
        var = rng.choice(self.vars) if rng.random() < 0.8 else ""
        labels = "".join(":" + self.ident(rng, self.labels) for _ in range(rng.choice([0, 1, 1, 1, 2])))
        props = self.props(rng) if rng.random() < 0.4 else ""
        where = f" WHERE {self.condition(rng, 1)}" if rng.random() < 0.05 else ""
        return f"({var}{labels}{props}{where}" + rng.choice([")", ")", ")", ")", ""])

    def rel(self, rng: random.Random) -> str:
        body = ""
        if rng.random() < 0.85:
            var = rng.choice(self.vars) if rng.random() < 0.2 else ""
            types = rng.choice(["|", "|:", "&"]).join(
                self.ident(rng, self.edges) for _ in range(rng.randint(0, 4))
            )
            hops = rng.choice(["", "", "", "*", "*2", "*1..2", "*..3", "*2..", "*0", "*99", "*3..1", "*..", "*-1"])
            props = self.props(rng) if rng.random() < 0.1 else ""
            body = f"[{var}{':' if types else ''}{types}{hops}{props}]"
        left, right = rng.choice([("-", "->"), ("<-", "-"), ("-", "-"), ("<-", "->"), ("–", "→"), ("-", ">")])
        return f"{left}{body}{right}"

    def chain(self, rng: random.Random) -> str:
        out = self.node(rng)
        for _ in range(rng.choice([0, 1, 1, 2, 3])):
            out += self.rel(rng) + self.node(rng)
        return out

    def operand(self, rng: random.Random) -> str:
        r = rng.random()
        if r < 0.6:
            return f"{rng.choice(self.vars)}.{self.ident(rng, self.keys)}"
        if r < 0.7:
            return f"toLower({rng.choice(self.vars)}.{self.ident(rng, self.keys)})"
        if r < 0.8:
            return rng.choice(self.vars)
        return self.literal(rng)

    def condition(self, rng: random.Random, depth: int = 0) -> str:
        r = rng.random()
        if depth > 4 or r < 0.45:
            op = rng.choice(["=", "<>", "!=", "<", "<=", ">", ">=", "=~", "CONTAINS", "STARTS WITH", "ENDS WITH"])
            op = rng.choice([op, op, "IN", "IS NULL", "IS NOT NULL", "BETWEEN"])
            left = self.operand(rng)
            if op.startswith("IS"):
                return f"{left} {op}"
            if op == "BETWEEN":
                return f"{left} BETWEEN {self.literal(rng)} AND {self.literal(rng)}"
            if op == "IN":
                return f"{left} IN {self.literal(rng)}"
            return f"{left} {op} {self.operand(rng)}" if rng.random() < 0.2 else f"{left} {op} {self.literal(rng)}"
        if r < 0.7:
            joiner = rng.choice([" AND ", " OR ", " XOR ", " and ", " or ", " || ", " && "])
            return joiner.join(self.condition(rng, depth + 1) for _ in range(rng.randint(2, 4)))
        if r < 0.8:
            return "NOT " + self.condition(rng, depth + 1)
        if r < 0.9:
            return "(" + self.condition(rng, depth + 1) + ")"
        if r < 0.95:
            return f"{rng.choice(self.vars)}:{self.ident(rng, self.labels)}"
        return f"exists({self.chain(rng)})" if rng.random() < 0.5 else self.chain(rng)

    def query(self, rng: random.Random) -> str:
        parts = []
        for _ in range(rng.choice([1, 1, 1, 2, 3])):
            clauses = []
            for _ in range(rng.choice([0, 1, 1, 1, 2, 3])):
                kw = rng.choice(["MATCH", "MATCH", "MATCH", "OPTIONAL MATCH", "match", "Match"])
                pats = ", ".join(self.chain(rng) for _ in range(rng.choice([1, 1, 2])))
                where = f" WHERE {self.condition(rng)}" if rng.random() < 0.6 else ""
                clauses.append(f"{kw} {pats}{where}")
            if rng.random() < 0.15:
                clauses.append(f"WITH {rng.choice(self.vars)} AS {rng.choice(self.vars)}")
                if rng.random() < 0.5:
                    clauses.append(f"WHERE {self.condition(rng)}")
            if rng.random() < 0.08:
                clauses.append(rng.choice(CYPHER_KEYWORDS[20:]) + " " + self.chain(rng))
            if rng.random() < 0.92:
                ret = rng.choice(["", "DISTINCT "]) + ", ".join(
                    rng.choice([*self.vars, "*", "p.name", "count(*)", "g.symbol AS s"])
                    for _ in range(rng.choice([1, 1, 2]))
                )
                ret += rng.choice(["", "", " LIMIT 10", " ORDER BY p.name DESC", " SKIP 1 LIMIT 2", ";", "; DROP"])
                clauses.append(f"RETURN {ret}")
            parts.append(rng.choice([" ", "\n", "  \n\t"]).join(clauses))
        return rng.choice([" UNION ", " UNION ALL ", "\nUNION\n"]).join(parts)

    # generators
    def grammar(self, rng: random.Random) -> str:
        text = self.query(rng)
        if rng.random() < 0.3:
            text = mutate(rng, text, SEED_CYPHER, rng.randint(1, 3))
        return text

    def mutated(self, rng: random.Random) -> str:
        return mutate(rng, rng.choice(SEED_CYPHER), SEED_CYPHER)

    def token_soup(self, rng: random.Random) -> str:
        pool = [*CYPHER_KEYWORDS, *PUNCT, *self.vars, *self.labels, *self.edges, *self.keys, *UNICODE_SPICE]
        words = [rng.choice(pool) if rng.random() < 0.9 else self.literal(rng) for _ in range(rng.randint(0, 60))]
        return "".join(w + rng.choice([" ", " ", "", "\n"]) for w in words)

    def wrapped(self, rng: random.Random) -> str:
        q = self.query(rng) if rng.random() < 0.7 else rng.choice(SEED_CYPHER)
        r = rng.randrange(9)
        if r == 0:
            return f"```cypher\n{q}\n```"
        if r == 1:
            return f"Here is the query:\n```{rng.choice(['', 'cypher', 'sql', 'MATCH', 'json'])}\n{q}\n```\nDone."
        if r == 2:
            return json.dumps({rng.choice(["query", "cypher", "answer", "x"]): q}, ensure_ascii=rng.random() < 0.5)
        if r == 3:
            return json.dumps(q)
        if r == 4:
            return f"<think>{_random_unicode(rng, 50)} MATCH (x) RETURN x</think>\n{q}"
        if r == 5:
            return f"```\n{q}\n```\nor\n```cypher\n{self.query(rng)}\n```"
        if r == 6:
            return "Sure! " + q + "\n\nThis query " + _random_unicode(rng, 40)
        if r == 7:
            return "```" * rng.randint(1, 5) + q + "```" * rng.randint(0, 3)
        return "{" * rng.randint(1, 50) + '"query": ' + json.dumps(q) + "}" * rng.randint(0, 50)

    def hostile(self, rng: random.Random) -> str:
        r = rng.randrange(12)
        n = rng.choice([50, 100, 1000, 5000])
        if r == 0:
            return "MATCH (p) WHERE " + "(" * n + "p.a = 1" + ")" * rng.choice([n, 0, n // 2]) + " RETURN p"
        if r == 1:
            return "MATCH (p) WHERE " + "NOT " * n + "p.a = 1 RETURN p"
        if r == 2:
            return "MATCH (p) WHERE " + " OR ".join(f"p.k{i % 7} = {i}" for i in range(min(n, 600))) + " RETURN p"
        if r == 3:
            types = "|".join(rng.choice(self.edges) for _ in range(min(n, 300)))
            return f"MATCH (a)-[:{types}]->(b)-[:{types}]->(c) RETURN a"
        if r == 4:
            return "MATCH " + ", ".join(f"(a{i})-[:is_a]->(b{i})" for i in range(min(n, 900))) + " RETURN a0"
        if r == 5:
            return f"MATCH (p {{name: '{'x' * rng.choice([10_000, 19_990, 25_000])}'}}) RETURN p"
        if r == 6:
            return "MATCH (p) WHERE p.a = " + "9" * rng.choice([100, 101, 5000, 20_000]) + " RETURN p"
        if r == 7:
            return "MATCH (p) WHERE p.a IN " + "[" * n + "1" + "]" * n + " RETURN p"
        if r == 8:
            return "MATCH (p) WHERE p.a = " + " + ".join("1" for _ in range(n)) + " RETURN p"
        if r == 9:
            return "MATCH (p) WHERE p" + ".a" * n + " = 1 RETURN p"
        if r == 10:
            return "MATCH (p) RETURN p " + rng.choice(["x", "/*", "'", "`", "\n"]) * rng.choice([20_001, 40_000])
        return (
            "MATCH (p) WHERE "
            + " AND ".join(
                f"p.a{i} =~ '{rng.choice(['(a*)*b', '(?i)x', '[', '(?P<n>', 'a{1,99999}'])}'" for i in range(40)
            )
            + " RETURN p"
        )


class QuestionGenerator:
    def __init__(self, vocab: Vocabulary) -> None:
        self.v = vocab
        self.pool = [*vocab.type_words, *vocab.edge_words, *FUNCTION_WORDS, *NUMBERS, *vocab.names[:200]]

    def kinds(self) -> list[tuple[str, Callable[[random.Random], str], float]]:
        return [
            ("template", self.template, 0.34),
            ("mutated_question", self.mutated, 0.22),
            ("word_soup", self.word_soup, 0.16),
            ("unicode_torture", self.unicode, 0.14),
            ("random_bytes", lambda rng: random_bytes_text(rng, 400), 0.14),
        ]

    def name(self, rng: random.Random) -> str:
        name = rng.choice(self.v.names)
        r = rng.random()
        if r < 0.15:
            name = name.upper()
        elif r < 0.25:
            name = name.lower()
        elif r < 0.35:
            name = mutate(rng, name, self.v.names, 1)
        elif r < 0.4:
            name = " ".join(name.split()[: max(1, len(name.split()) - 1)])
        return name

    def template(self, rng: random.Random) -> str:
        t = rng.choice(self.v.type_words)
        parts = [rng.choice(["Which", "What", "Name the", "List all", "Find", "which", "", "Are there any"]), t]
        for _ in range(rng.choice([0, 1, 1, 2, 3])):
            r = rng.random()
            if r < 0.45:
                link = rng.choice(
                    [
                        *self.v.edge_words,
                        "that participate in",
                        "associated with",
                        "located in",
                        "that are a kind of",
                        "of which",
                        "that are parents of",
                        "related to",
                        "with the phenotype",
                        "with the mode of inheritance",
                        "whose description mentions",
                        "that have",
                    ]
                )
                parts += [link, self.name(rng)]
                if rng.random() < 0.2:
                    parts.append(rng.choice(["is a subtype", "as a part", "are there", "participates in"]))
            elif r < 0.65:
                key = rng.choice(self.v.attr_keys or ["chromosome"])
                value = rng.choice(self.v.attr_values or NUMBERS)
                parts += [rng.choice(["located on", "with", "having", "whose"]), key, rng.choice(["", "is", "of"])]
                parts.append(value)
            elif r < 0.8:
                parts += [rng.choice(["above", "below", "after", "before", "at least", "more than"])]
                parts.append(rng.choice(NUMBERS))
            elif r < 0.9:
                quote = rng.choice(['"', "'", "“", "«"])
                parts.append(f"that mention {quote}{self.name(rng)}{quote if rng.random() < 0.9 else ''}")
            else:
                parts += [rng.choice(["and", "or", "but not", ","]), rng.choice(self.v.type_words), self.name(rng)]
        parts.append(rng.choice(["?", "", ".", "??", " ?", "!"]))
        text = " ".join(p for p in parts if p)
        if rng.random() < 0.2:
            text = mutate(rng, text, self.v.questions, rng.randint(1, 3))
        if rng.random() < 0.01:
            text = (text + " ") * rng.randint(2, 60)
        return text[:MAX_QUESTION_CHARS]

    def mutated(self, rng: random.Random) -> str:
        return mutate(rng, rng.choice(self.v.questions), [*self.v.questions, *self.v.names])[:MAX_QUESTION_CHARS]

    def word_soup(self, rng: random.Random) -> str:
        words = [rng.choice(self.pool) for _ in range(rng.choice([0, 1, 2, 5, 10, 20, 40, 120]))]
        return " ".join(words)[:MAX_QUESTION_CHARS]

    def unicode(self, rng: random.Random) -> str:
        base = self.template(rng) if rng.random() < 0.7 else self.word_soup(rng)
        r = rng.randrange(6)
        if r == 0:  # spice sprinkled everywhere
            out = []
            for ch in base:
                out.append(ch)
                if rng.random() < 0.15:
                    out.append(_spice(rng))
            text = "".join(out)
        elif r == 1:  # a bidi override around a name, or a whole question
            text = "\u202e" + base + "\u202c" if rng.random() < 0.5 else base.replace(" ", " \u2067", 3)
        elif r == 2:  # characters whose case mapping changes length
            text = "".join(
                rng.choice(["İ", "ß", "ﬃ", "ŉ", "ǰ"]) if c.isalpha() and rng.random() < 0.2 else c for c in base
            )
        elif r == 3:  # homoglyph / fullwidth / NFKC-folding variants
            table = str.maketrans({"a": "а", "e": "е", "o": "о", "p": "р", "A": "Ａ", "?": "？", " ": "\u3000"})
            text = base.translate(table)
        elif r == 4:  # NUL and control characters
            text = base.replace(" ", rng.choice(["\x00", "\x00 ", "\t", "\r\n", "\x0b", "\x1b[31m"]))
        else:
            text = _random_unicode(rng, rng.randint(0, 200))
        return text[:MAX_QUESTION_CHARS]


# --- checks -----------------------------------------------------------------------------------------------------


def cypher_invariants(query: Any, schema: Any) -> list[str]:
    from skbqa.stages.parse.cypher.parser import MAX_ALTERNATIVES, MAX_HOPS

    problems = []
    if len(query.alternatives) > MAX_ALTERNATIVES:
        problems.append("too many alternatives")
    for sub in [query, *query.alternatives]:
        if sub is not query and sub.alternatives:
            problems.append("nested alternatives")
        for t in sub.triplets:
            if t.head not in sub.symbols or t.tail not in sub.symbols:
                problems.append("triplet names an unknown symbol")
            if not 1 <= t.min_hops <= t.max_hops <= MAX_HOPS:
                problems.append("hop range out of bounds")
            if schema is not None and t.edge is not None and not schema.has_edge_type(t.edge):
                problems.append("edge type outside the schema")
        for c in sub.constraints:
            if c.symbol not in sub.symbols:
                problems.append("constraint names an unknown symbol")
            if isinstance(c.value, tuple) != (c.op == "IN") or c.value == ():
                problems.append("constraint value does not fit its operator")
        for s in sub.symbols.values():
            if not all(isinstance(n, str) and n.strip() for n in s.names):
                problems.append("empty constant name")
            if schema is not None and s.type is not None and not schema.has_node_type(s.type):
                problems.append("node type outside the schema")
    return problems


def encoder_invariants(query: Any, schema: Any) -> list[str]:
    problems = []
    if query.target != "y" or "y" not in query.symbols:
        problems.append("target is not the symbol y")
    for t in query.triplets:
        if t.head not in query.symbols or t.tail not in query.symbols:
            problems.append("triplet names an unknown symbol")
        if t.edge is not None and not schema.has_edge_type(t.edge):
            problems.append("edge type outside the schema")
    for c in query.constraints:
        if c.symbol not in query.symbols:
            problems.append("constraint names an unknown symbol")
    for s in query.symbols.values():
        if s.type is not None and not schema.has_node_type(s.type):
            problems.append("node type outside the schema")
        if not all(isinstance(n, str) and n for n in s.names):
            problems.append("empty constant name")
    if not all(isinstance(t, str) for t in query.text_constraints):
        problems.append("non-string text constraint")
    return problems


# --- the campaign -----------------------------------------------------------------------------------------------


@dataclass
class Findings:
    """Per-parser counts, grouped failures with reproducers, timings and the slowest inputs."""

    inputs: int = 0
    by_generator: dict[str, int] = field(default_factory=dict)
    by_skb: dict[str, int] = field(default_factory=dict)
    unhandled: dict[str, dict[str, Any]] = field(default_factory=dict)
    internal_errors: dict[str, dict[str, Any]] = field(default_factory=dict)
    invariant_violations: dict[str, dict[str, Any]] = field(default_factory=dict)
    rejected_by_clean_question: int = 0
    times_ns: list[int] = field(default_factory=list)
    # (ns, seq, generator, input, how to run it again): re-timed at the end, so load spikes show as such
    slowest: list[tuple[int, int, str, str, Callable[[], object]]] = field(default_factory=list)

    def group(self, table: dict[str, dict[str, Any]], signature: str, generator: str, text: str, **extra: Any):
        entry = table.setdefault(signature, {"count": 0, "examples": []})
        entry["count"] += 1
        if len(entry["examples"]) < EXAMPLES_PER_SIGNATURE:
            entry["examples"].append({"generator": generator, "input": ascii(text)[:4000], **extra})

    def timed(self, ns: int, generator: str, text: str, again: Callable[[], object]) -> None:
        self.times_ns.append(ns)
        if len(self.slowest) < SLOWEST_KEPT:
            heapq.heappush(self.slowest, (ns, self.inputs, generator, text, again))
        elif ns > self.slowest[0][0]:
            heapq.heapreplace(self.slowest, (ns, self.inputs, generator, text, again))

    def retime(self) -> None:
        """Run each slowest input three times more; `retimed_ms` is the best of them."""
        self.retimed: dict[int, float] = {}
        for _, seq, _, _, again in self.slowest:
            best = float("inf")
            for _ in range(3):
                started = time.perf_counter_ns()
                with contextlib.suppress(Exception):  # already recorded as unhandled
                    again()
                best = min(best, (time.perf_counter_ns() - started) / 1e6)
            self.retimed[seq] = round(best, 2)

    def summary(self) -> dict[str, Any]:
        import numpy as np

        ms = np.asarray(self.times_ns, np.float64) / 1e6
        timing = (
            {
                "p50": round(float(np.percentile(ms, 50)), 4),
                "p90": round(float(np.percentile(ms, 90)), 4),
                "p99": round(float(np.percentile(ms, 99)), 4),
                "p999": round(float(np.percentile(ms, 99.9)), 4),
                "max": round(float(ms.max()), 3),
                "mean": round(float(ms.mean()), 4),
                "total_s": round(float(ms.sum()) / 1000, 1),
            }
            if ms.size
            else {}
        )
        return {
            "inputs": self.inputs,
            "by_generator": dict(sorted(self.by_generator.items())),
            "by_skb": dict(sorted(self.by_skb.items())),
            "unhandled_exceptions": sum(e["count"] for e in self.unhandled.values()),
            "unhandled": self.unhandled,
            "internal_errors": sum(e["count"] for e in self.internal_errors.values()),
            "internal": self.internal_errors,
            "invariant_violations": sum(e["count"] for e in self.invariant_violations.values()),
            "invariants": self.invariant_violations,
            "rejected_by_clean_question": self.rejected_by_clean_question,
            "time_ms": timing,
            "slowest": [
                {
                    "ms": round(ns / 1e6, 2),
                    "retimed_ms": getattr(self, "retimed", {}).get(seq),
                    "generator": g,
                    "chars": len(text),
                    "input": ascii(text)[:300],
                }
                for ns, seq, g, text, _ in sorted(self.slowest, key=lambda item: item[:2], reverse=True)
            ],
        }


def signature(exc: BaseException) -> str:
    """Exception type and the innermost frame inside skbqa (else the innermost frame)."""
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if "skbqa" in f.filename] or frames
    where = f"{Path(ours[-1].filename).name}:{ours[-1].lineno}" if ours else "?"
    return f"{type(exc).__name__} at {where}"


def short_traceback(exc: BaseException) -> str:
    return "".join(traceback.format_exception(exc)[-6:])[-3000:]


@dataclass
class Skb:
    """One SKB under test: its engine (hashing encoder), encoder parser, schema, vocabulary and generators."""

    name: str
    engine: Any
    parser: Any
    schema: Any
    vocab: Vocabulary
    cypher_kinds: list[tuple[str, Callable[[random.Random], str], float]]
    question_kinds: list[tuple[str, Callable[[random.Random], str], float]]


def load_skb_under_test(name: str, bundle: Path, workdir: Path, encoder: Any, seed: int) -> Skb:
    from skbqa.engine.embedded import EmbeddedEngine
    from skbqa.ingest.builder import ingest

    index = workdir / f"index-{name}"
    ingest(bundle, index, encoder, progress=False)
    engine = EmbeddedEngine.open(index, encoder=encoder)
    qa = bundle / "qa.jsonl"
    questions = [json.loads(line)["question"] for line in qa.read_text().splitlines() if line.strip()]
    vocab = vocabulary(engine.stores, questions or ["Which nodes are there?"], random.Random(seed))
    return Skb(
        name,
        engine,
        engine.strategies["af"].parser,  # type: ignore[attr-defined]
        engine.stores.nodes.schema,
        vocab,
        CypherGenerator(vocab).kinds(),
        QuestionGenerator(vocab).kinds(),
    )


class Harness:
    """Both parsers over one or more SKBs; `run_cypher` / `run_encoder` feed one input and record what happened."""

    def __init__(self, bundles: list[Path], synth_nodes: int, workdir: Path, seed: int) -> None:
        from tests.helpers import HashingEncoder

        self.encoder = HashingEncoder(dim=64)
        self.skbs = [load_skb_under_test(b.name, b, workdir, self.encoder, seed) for b in bundles]
        if synth_nodes:
            from skbqa.synth.generator import generate

            generate(workdir / "synth", nodes=synth_nodes, seed=seed % 1000, questions=40, edges_per_node=6)
            self.skbs.append(load_skb_under_test("synth", workdir / "synth", workdir, self.encoder, seed))
        self.cypher = Findings()
        self.encoder_findings = Findings()

    def similarity(self, rng: random.Random) -> Callable[[str, list[str]], Any] | None:
        """None (the built-in matcher), or a hostile similarity callable (raises, returns junk, returns a type)."""
        r = rng.randrange(6)
        if r < 3:
            return None
        if r == 3:
            return lambda name, known: known[0] if known else None
        if r == 4:

            def broken(name: str, known: list[str]) -> Any:
                raise RuntimeError("similarity backend down")

            return broken
        return lambda name, known: rng.choice([None, 3, "not a type", b"bytes", [name], name])

    def run_cypher(self, rng: random.Random, skb: Skb, generator: str, text: str) -> None:
        from skbqa.stages.parse.cypher.parser import parse_cypher, parse_cypher_or_error

        f = self.cypher
        f.inputs += 1
        f.by_generator[generator] = f.by_generator.get(generator, 0) + 1
        f.by_skb[skb.name] = f.by_skb.get(skb.name, 0) + 1
        schema = skb.schema if rng.random() < 0.8 else None
        mode = rng.choice(["strict", "lenient"])
        similarity = self.similarity(rng) if mode == "lenient" else None
        or_error = rng.random() < 0.3

        def again() -> object:
            return parse_cypher(text, schema, mode=mode, similarity=similarity)  # type: ignore[arg-type]

        started = time.perf_counter_ns()
        try:
            if or_error:
                query, error = parse_cypher_or_error(text, schema, mode=mode, similarity=similarity)  # type: ignore[arg-type]
                if (query is None) == (error is None):
                    raise AssertionError("parse_cypher_or_error returned both or neither")
            else:
                query = parse_cypher(text, schema, mode=mode, similarity=similarity)  # type: ignore[arg-type]
        except Exception as exc:
            f.timed(time.perf_counter_ns() - started, generator, text, again)
            f.group(f.unhandled, signature(exc), generator, text, traceback=short_traceback(exc))
            return
        f.timed(time.perf_counter_ns() - started, generator, text, again)
        if query is None:
            return
        internal = [w for w in query.warnings if w.startswith("internal parser error")]
        if internal:
            f.group(
                f.internal_errors,
                internal[0][:160],
                generator,
                text,
                traceback=_unguarded_traceback(text, schema, mode),
            )
        for problem in cypher_invariants(query, schema):
            f.group(f.invariant_violations, problem, generator, text)

    def run_encoder(self, rng: random.Random, skb: Skb, generator: str, text: str) -> None:
        from skbqa.common.errors import InvalidInputError
        from skbqa.engine.answers import clean_question
        from skbqa.query.context import QueryContext

        f = self.encoder_findings
        if rng.random() < 0.3:
            try:
                text = clean_question(text)
                generator += "+clean"
            except InvalidInputError:
                f.rejected_by_clean_question += 1  # the pipeline would refuse it; the parser gets it raw
        f.inputs += 1
        f.by_generator[generator] = f.by_generator.get(generator, 0) + 1
        f.by_skb[skb.name] = f.by_skb.get(skb.name, 0) + 1

        def again() -> object:
            return skb.parser.parse(QueryContext(text, self.encoder))

        started = time.perf_counter_ns()
        try:
            query = again()
        except Exception as exc:
            f.timed(time.perf_counter_ns() - started, generator, text, again)
            f.group(f.unhandled, signature(exc), generator, text, traceback=short_traceback(exc))
            return
        f.timed(time.perf_counter_ns() - started, generator, text, again)
        for problem in encoder_invariants(query, skb.schema):
            f.group(f.invariant_violations, problem, generator, text)


def _unguarded_traceback(text: str, schema: Any, mode: str) -> str:
    """Re-run the Cypher parser's stages without its safety net, for the traceback of an internal error."""
    from skbqa.stages.parse.cypher.lexer import extract_cypher, tokenize
    from skbqa.stages.parse.cypher.parser import _Builder
    from skbqa.stages.parse.cypher.statements import Parser

    warnings: list[str] = []
    try:
        parser = Parser(tokenize(extract_cypher(text, warnings), warnings), warnings)
        _Builder(schema, mode, None, warnings).build(parser.parse_statement())
    except Exception as exc:
        return short_traceback(exc)
    return "(not reproduced without the similarity callable)"


def pick(rng: random.Random, kinds: list[tuple[str, Callable[[random.Random], str], float]]) -> tuple[str, str]:
    r, acc = rng.random() * sum(w for _, _, w in kinds), 0.0
    for name, make, weight in kinds:
        acc += weight
        if r < acc:
            return name, make(rng)
    name, make, _ = kinds[-1]
    return name, make(rng)


def write_results(out: Path, harness: Harness, args: argparse.Namespace, started: float, done: bool, **extra: Any):
    cypher, encoder = harness.cypher.summary(), harness.encoder_findings.summary()
    result = {
        "complete": done,
        "seed": args.seed,
        "inputs_requested": args.inputs,
        "inputs_total": cypher["inputs"] + encoder["inputs"],
        "unhandled_exceptions_total": cypher["unhandled_exceptions"] + encoder["unhandled_exceptions"],
        "wall_seconds": round(time.perf_counter() - started, 1),
        "skbs": {
            skb.name: {
                "nodes": len(skb.engine.stores.nodes),
                "node_types": len(skb.schema.node_types),
                "edge_names": len(skb.schema.edge_names),
            }
            for skb in harness.skbs
        },
        "encoder": harness.encoder.name,
        "python": sys.version.split()[0],
        "documented_exceptions": {
            "parse_cypher": "none: never raises (problems are warnings)",
            "parse_cypher_or_error": "none: returns (query, None) or (None, first syntax error)",
            "EncoderParser.parse": "none for any question text (only a down backend, e.g. LlmError, may raise)",
        },
        "parsers": {"cypher": cypher, "encoder": encoder},
        **extra,
    }
    if "atheris" in extra:
        runs = sum(int(a.get("runs", 0)) for a in extra["atheris"].values())
        result["inputs_total_with_atheris"] = result["inputs_total"] + runs
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps(result, indent=2, ensure_ascii=True) + "\n")
    os.replace(tmp, out)
    return result


def campaign(args: argparse.Namespace) -> dict[str, Any]:
    logging.disable(logging.WARNING)  # the parsers' own warnings are results, not log noise
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="skbqa-fuzz-") as tmp:
        harness = Harness(args.bundle, args.synth_nodes, Path(tmp), args.seed)
        rng = random.Random(args.seed)
        n_cypher = round(args.inputs * args.cypher_share)
        plan = [True] * n_cypher + [False] * (args.inputs - n_cypher)
        rng.shuffle(plan)
        for i, is_cypher in enumerate(plan, start=1):
            skb = rng.choice(harness.skbs)
            if is_cypher:
                name, text = pick(rng, skb.cypher_kinds)
                harness.run_cypher(rng, skb, name, text)
            else:
                name, text = pick(rng, skb.question_kinds)
                harness.run_encoder(rng, skb, name, text)
            if i % args.checkpoint == 0:
                result = write_results(args.out, harness, args, started, done=False)
                print(
                    f"{i:>9,} inputs  {result['wall_seconds']:>7.0f} s  unhandled "
                    f"{result['unhandled_exceptions_total']}  internal {result['parsers']['cypher']['internal_errors']}",
                    file=sys.stderr,
                    flush=True,
                )
        harness.cypher.retime()
        harness.encoder_findings.retime()
        extra: dict[str, Any] = {}
        if args.atheris_runs:
            extra["atheris"] = {p: run_atheris_child(args, p) for p in ("cypher", "encoder")}
        return write_results(args.out, harness, args, started, done=True, **extra)


# --- atheris (coverage-guided), in a child process so instrumentation precedes the first skbqa import ----------


def run_atheris_child(args: argparse.Namespace, parser: str) -> dict[str, Any]:
    stats = Path(tempfile.gettempdir()) / f"skbqa-fuzz-atheris-{parser}.json"
    log = Path(tempfile.gettempdir()) / f"skbqa-fuzz-atheris-{parser}.log"  # libFuzzer's own output
    command = [
        sys.executable, __file__, "--atheris-child", parser, "--atheris-runs", str(args.atheris_runs),
        "--out", str(stats), "--seed", str(args.seed), "--synth-nodes", str(args.synth_nodes),
        *(f"--bundle={b}" for b in args.bundle),
    ]  # fmt: skip
    started = time.perf_counter()
    with log.open("w") as handle:
        code = subprocess.run(command, stdout=handle, stderr=subprocess.STDOUT, check=False).returncode
    result = json.loads(stats.read_text()) if stats.is_file() else {"error": "no stats written"}
    result["exit_code"] = code
    result["log"] = str(log)
    result["wall_seconds"] = round(time.perf_counter() - started, 1)
    return result


def atheris_child(args: argparse.Namespace) -> None:
    import atheris

    with atheris.instrument_imports(include=["skbqa"]):
        pass
    logging.disable(logging.WARNING)
    workdir = Path(tempfile.mkdtemp(prefix="skbqa-atheris-"))
    harness = Harness(args.bundle, args.synth_nodes, workdir, args.seed)
    corpus = workdir / "corpus"
    corpus.mkdir()
    questions = [q for skb in harness.skbs for q in skb.vocab.questions]
    seeds = SEED_CYPHER if args.atheris_child == "cypher" else questions
    for i, text in enumerate(seeds):
        (corpus / f"seed{i}").write_bytes(text.encode("utf-8", "surrogatepass"))
    rng = random.Random(args.seed)
    runs = [0]
    started = time.perf_counter()

    def flush() -> None:
        findings = harness.cypher if args.atheris_child == "cypher" else harness.encoder_findings
        summary = findings.summary()
        summary["runs"] = runs[0]
        summary["engine"] = f"atheris {importlib.metadata.version('atheris')} (libFuzzer), instrumented: skbqa"
        summary["seconds"] = round(time.perf_counter() - started, 1)
        args.out.write_text(json.dumps(summary, indent=2, ensure_ascii=True) + "\n")

    def target(data: bytes) -> None:
        runs[0] += 1
        text = data.decode("utf-8", "surrogateescape")
        skb = harness.skbs[runs[0] % len(harness.skbs)]
        if args.atheris_child == "cypher":
            harness.run_cypher(rng, skb, "atheris", text)
        else:
            harness.run_encoder(rng, skb, "atheris", text[:MAX_QUESTION_CHARS])
        if runs[0] % 5000 == 0 or runs[0] >= args.atheris_runs:
            flush()  # libFuzzer exits without running Python's atexit handlers

    atheris.Setup(
        [sys.argv[0], f"-runs={args.atheris_runs}", "-max_len=4096", f"-seed={args.seed + 1}", str(corpus)],
        target,
    )
    atheris.Fuzz()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--inputs", type=int, default=1_000_000, help="inputs in total across both parsers")
    p.add_argument("--cypher-share", type=float, default=0.5, help="share of the inputs for the Cypher parser")
    p.add_argument("--seed", type=int, default=20261121)
    p.add_argument(
        "--bundle", type=Path, action="append", help=f"SKB bundle (repeatable; default {DEFAULT_BUNDLE})"
    )
    p.add_argument("--synth-nodes", type=int, default=400, help="also fuzz a synthetic SKB of this size (0: no)")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT)
    p.add_argument("--checkpoint", type=int, default=50_000, help="write the results every N inputs")
    p.add_argument("--atheris-runs", type=int, default=0, help="also run atheris this many times per parser")
    p.add_argument("--atheris-child", choices=["cypher", "encoder"], help=argparse.SUPPRESS)
    args = p.parse_args()
    args.bundle = [b.resolve() for b in (args.bundle or [DEFAULT_BUNDLE])]
    args.out = args.out.resolve()
    if args.atheris_child:
        atheris_child(args)
        return 0
    result = campaign(args)
    for name, parser in result["parsers"].items():
        print(
            f"{name:8} {parser['inputs']:>9,} inputs  unhandled {parser['unhandled_exceptions']}  "
            f"internal {parser['internal_errors']}  invariants {parser['invariant_violations']}  "
            f"p50 {parser['time_ms'].get('p50')} ms  p99 {parser['time_ms'].get('p99')} ms  "
            f"max {parser['time_ms'].get('max')} ms"
        )
    print(f"wrote {args.out}")
    return 1 if result["unhandled_exceptions_total"] else 0


if __name__ == "__main__":
    sys.exit(main())
