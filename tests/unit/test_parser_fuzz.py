"""Fuzzing the two question parsers with hypothesis: the Cypher parser (LLM output) and the encoder parser.

Both read untrusted text and are documented never to raise on it: what they cannot use is dropped and listed in
`warnings`. This complements tests/unit/test_cypher_parser.py (grammar-shaped queries, token soup, printable
text) and tests/unit/test_encoder_parser_fuzz.py (biomedical words, the real ONNX encoder): here the input is
hostile in other ways — every code point including lone surrogates, bidi overrides, zero-width and NUL
characters, digits `int()` refuses, huge literals, LLM answers wrapped in fences or JSON, random bytes decoded,
a broken similarity callable — on a small index with the hashing encoder, so each test runs in seconds.
bench/fuzz.py runs the same idea for a million inputs.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from skbqa.common.errors import InvalidInputError
from skbqa.engine.answers import MAX_QUESTION_CHARS, clean_question
from skbqa.engine.embedded import EmbeddedEngine
from skbqa.ingest.builder import ingest
from skbqa.query.context import QueryContext
from skbqa.query.structured import StructuredQuery
from skbqa.skb.schema import Schema
from skbqa.stages.parse.cypher.parser import MAX_ALTERNATIVES, MAX_HOPS, parse_cypher, parse_cypher_or_error
from tests.helpers import SCHEMA, HashingEncoder, write_bundle

TINY_SCHEMA = Schema.from_dict(SCHEMA)
FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FUZZ_WITH_FIXTURE = settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

SPICE = [
    "\u202e", "\u2066", "\u2069", "\u200f", "\u200b", "\u200d", "\ufeff", "\u0301", "\u20dd", "\x00", "\x01",
    "\x1b", "\x7f", "\x85", "\u2028", "\u3000", "\ud800", "\udfff", "\uffff", "\U0010ffff", "\ue000", "İ", "ß",
    "ﬃ", "ŉ", "Σ", "ＭＡＴＣＨ", "（", "＝", "²", "①", "⁵", "٣", "Ⅻ", "Мatch", "рaper", "基因", "مرض",
    "👩\u200d🔬", "𝔤𝔢𝔫𝔢", "“", "”", "‘", "’", "–", "—", "−", "…",
]  # fmt: skip
CYPHER_WORDS = [
    "MATCH", "OPTIONAL", "WHERE", "WITH", "RETURN", "UNION", "AND", "OR", "NOT", "IN", "IS", "NULL", "CONTAINS",
    "STARTS WITH", "=~", "CREATE", "DETACH DELETE", "CALL", "LOAD CSV FROM", "(", ")", "[", "]", "{", "}", ":",
    ",", ".", "|", "*", "*1..2", "=", "<>", "-", "->", "<-", "`", "'", '"', "```", "$p", "//", "/*", ";", "\n",
    "p", "a", "paper", "author", "field", "written_by", "has_field", "cites", "title", "name", "year", "country",
]  # fmt: skip
QUESTION_WORDS = [
    "which", "what", "papers", "paper", "authors", "author", "fields", "field", "written", "by", "cite", "cites",
    "that", "the", "of", "in", "after", "before", "above", "at", "least", "published", "year", "country", "UK",
    "Ada", "Lovelace", "Alan", "Turing", "chemistry", "information", "retrieval", "molecules", "2019", "2021",
    "6.5", "?", ",", '"', "'", "(", ")", "mention", "related", "to", "and", "or", "not",
]  # fmt: skip
SEEDS = [
    "MATCH (p:paper)-[:written_by]->(a:author {name: 'Ada Lovelace'}) RETURN p",
    "MATCH (p:paper) WHERE p.year >= 2020 AND p.title CONTAINS 'graph' RETURN p",
    "MATCH (p:paper)-[:has_field]->(f:field) WHERE f.name IN ['chemistry', \"x\"] OR p.year = 1 RETURN p",
    "MATCH (q:paper)<-[:cites*1..2]-(p:paper {title: 'Retrieval over knowledge bases'}) RETURN q",
    "MATCH (a:author) WHERE toLower(a.country) =~ '(?i)u.*' RETURN DISTINCT a LIMIT 5",
]

every_char = st.characters(exclude_categories=())  # surrogates included
spice = st.sampled_from(SPICE)
hostile_text = st.lists(st.one_of(st.text(every_char, max_size=8), spice), max_size=40).map("".join)


@st.composite
def decoded_bytes(draw: st.DrawFn) -> str:
    """Random bytes decoded the ways a client or a broken proxy might (lone surrogates included)."""
    data = draw(st.binary(max_size=300))
    how = draw(st.sampled_from(["replace", "surrogateescape", "latin-1", "utf-16"]))
    if how == "latin-1":
        return data.decode("latin-1")
    if how == "utf-16":
        return data[: len(data) - len(data) % 2].decode("utf-16-le", "surrogatepass")
    return data.decode("utf-8", how)


@st.composite
def huge_literal(draw: st.DrawFn) -> str:
    return draw(
        st.sampled_from(
            [
                "9" * 101,
                "9" * 5000,
                "1e400",
                "-1e-400",
                "'" + "x" * 25_000 + "'",
                "'" + "\\u" * 300 + "'",
                "'\\ud800\\U00110000\\'",
                "[" * 60 + "1" + "]" * 60,
                "date('" + "9" * 4400 + "')",
            ]
        )
    )


@st.composite
def spliced(draw: st.DrawFn, seeds: list[str], words: list[str], extra: st.SearchStrategy[str]) -> str:
    """A seed with words, spice characters and hostile literals inserted, deleted and repeated."""
    text = draw(st.sampled_from(seeds))
    for _ in range(draw(st.integers(1, 6))):
        i = draw(st.integers(0, len(text)))
        j = min(len(text), i + draw(st.integers(0, 15)))
        op = draw(st.integers(0, 4))
        if op == 0:
            text = text[:i] + draw(st.sampled_from(words)) + " " + text[i:]
        elif op == 1:
            text = text[:i] + draw(spice) + text[i:]
        elif op == 2:
            text = text[:i] + text[j:]
        elif op == 3:
            text = text[:j] + text[i:j] * draw(st.integers(2, 30)) + text[j:]
        else:
            text = text[:i] + draw(extra) + text[i:]
    return text


@st.composite
def llm_answer(draw: st.DrawFn) -> str:
    """A query wrapped as LLMs answer: fences, JSON, prose, reasoning, several blocks, unbalanced braces."""
    query = draw(st.one_of(spliced(SEEDS, CYPHER_WORDS, huge_literal()), st.sampled_from(SEEDS)))
    wrap = draw(st.integers(0, 6))
    if wrap == 0:
        return f"```cypher\n{query}\n```"
    if wrap == 1:
        return json.dumps(
            {draw(st.sampled_from(["query", "cypher", "x"])): query}, ensure_ascii=draw(st.booleans())
        )
    if wrap == 2:
        return f"<think>{draw(hostile_text)}</think>\nSure! {query}\nThis query {draw(hostile_text)}"
    if wrap == 3:
        return f"```\n{query}\n```\nor\n```cypher\n{draw(st.sampled_from(SEEDS))}\n```"
    if wrap == 4:
        return "{" * draw(st.integers(1, 3000)) + json.dumps(query)
    if wrap == 5:
        return json.dumps(query)
    return "```" * draw(st.integers(1, 4)) + query


cypher_inputs = st.one_of(
    hostile_text,
    decoded_bytes(),
    spliced(SEEDS, CYPHER_WORDS, huge_literal()),
    llm_answer(),
    st.lists(st.one_of(st.sampled_from(CYPHER_WORDS), spice, huge_literal()), max_size=40).map(" ".join),
)


def similarity_callables() -> st.SearchStrategy[Any]:
    def broken(name: str, known: list[str]) -> str | None:
        raise RuntimeError("similarity backend down")

    return st.sampled_from(
        [
            None,
            broken,
            lambda name, known: 42,
            lambda name, known: "not a type",
            lambda name, known: [name],
            lambda name, known: known[-1] if known else None,
        ]
    )


def check_cypher(query: StructuredQuery | None, schema: Schema | None) -> None:
    """The model's invariants; the safety net's "internal parser error" counts as a failure."""
    if query is None:
        return
    assert isinstance(query, StructuredQuery)
    assert not any(w.startswith("internal parser error") for w in query.warnings), query.warnings
    assert len(query.alternatives) <= MAX_ALTERNATIVES
    for sub in [query, *query.alternatives]:
        assert sub is query or sub.alternatives == []
        for t in sub.triplets:
            assert t.head in sub.symbols and t.tail in sub.symbols
            assert 1 <= t.min_hops <= t.max_hops <= MAX_HOPS
            assert schema is None or t.edge is None or schema.has_edge_type(t.edge)
        for c in sub.constraints:
            assert c.symbol in sub.symbols
            assert isinstance(c.value, tuple) == (c.op == "IN")
        for s in sub.symbols.values():
            assert all(isinstance(n, str) and n.strip() for n in s.names)
            assert schema is None or s.type is None or schema.has_node_type(s.type)


# --- the Cypher parser ------------------------------------------------------------------------------------------


@FUZZ
@given(
    text=cypher_inputs,
    schema=st.sampled_from([None, TINY_SCHEMA]),
    mode=st.sampled_from(["strict", "lenient"]),
    similarity=similarity_callables(),
)
@example(
    text="MATCH (p {name: '\ud800'}) WHERE p.x = '\udfff' RETURN p",
    schema=TINY_SCHEMA,
    mode="strict",
    similarity=None,
)
@example(
    text="MATCH (p:paper) WHERE p.year > " + "9" * 5000 + " RETURN p", schema=None, mode="strict", similarity=None
)
@example(text="{" * 100_000 + '"query": "MATCH (p) RETURN p"}', schema=None, mode="strict", similarity=None)
def test_cypher_parser_never_raises_on_hostile_text(
    text: str, schema: Schema | None, mode: str, similarity: Any
) -> None:
    query = parse_cypher(text, schema, mode=mode, similarity=similarity)  # type: ignore[arg-type]
    check_cypher(query, schema)
    clean, error = parse_cypher_or_error(text, schema, mode=mode, similarity=similarity)  # type: ignore[arg-type]
    assert (clean is None) != (error is None)
    assert error is None or (isinstance(error, str) and error)
    check_cypher(clean, schema)


@pytest.mark.parametrize("value", [None, 42, b"MATCH (p) RETURN p", ["MATCH (p) RETURN p"], {"query": "x"}])
def test_cypher_parser_refuses_non_text_without_raising(value: object) -> None:
    query = parse_cypher(value)  # type: ignore[arg-type]
    assert query.target == "" and query.warnings == [f"expected text, got {type(value).__name__}"]
    assert parse_cypher_or_error(value)[0] is None  # type: ignore[arg-type]


def test_cypher_parser_handles_every_code_point_in_every_slot() -> None:
    """Each spice character inside a label, a key, a string, a variable and between tokens."""
    for ch in SPICE:
        for text in (
            f"MATCH (p:pa{ch}per) RETURN p",
            f"MATCH (p:paper {{ti{ch}tle: 'x'}}) RETURN p",
            f"MATCH (p:paper {{title: 'x{ch}y'}}) RETURN p",
            f"MATCH (p{ch}) RETURN p{ch}",
            f"MATCH{ch}(p){ch}-[:cites]->{ch}(q){ch}RETURN{ch}q",
            f"MATCH (p) WHERE p.title =~ '{ch}.*' RETURN p",
        ):
            for mode in ("strict", "lenient"):
                check_cypher(parse_cypher(text, TINY_SCHEMA, mode=mode), TINY_SCHEMA)  # type: ignore[arg-type]


# --- the encoder parser -----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedEngine]:
    root = tmp_path_factory.mktemp("parser-fuzz")
    encoder = HashingEncoder()
    ingest(write_bundle(root / "bundle"), root / "index", encoder, progress=False)
    yield EmbeddedEngine.open(root / "index", encoder=encoder)


def encoder_parse(engine: EmbeddedEngine, question: str) -> StructuredQuery:
    parser = engine.strategies["af"].parser  # type: ignore[attr-defined]
    return parser.parse(QueryContext(question, engine.encoder))  # type: ignore[no-any-return]


def check_encoder(query: StructuredQuery, schema: Schema) -> None:
    assert query.target == "y" and "y" in query.symbols
    for t in query.triplets:
        assert t.head in query.symbols and t.tail in query.symbols
        assert t.edge is None or schema.has_edge_type(t.edge)
    for c in query.constraints:
        assert c.symbol in query.symbols
    for s in query.symbols.values():
        assert s.type is None or schema.has_node_type(s.type)
        assert all(isinstance(n, str) and n for n in s.names)
    assert all(isinstance(t, str) for t in query.text_constraints)


questions = st.one_of(
    hostile_text,
    decoded_bytes(),
    st.lists(st.one_of(st.sampled_from(QUESTION_WORDS), spice), min_size=1, max_size=40).map(" ".join),
    spliced(
        [
            "Which papers did Ada Lovelace write?",
            "Which papers cite Graph neural networks for molecules after 2020?",
        ],
        QUESTION_WORDS,
        st.sampled_from(["after ①", "above ²", "after " + "9" * 5000, "at least ⁵", "after ٣", "after 6.²"]),
    ),
)


@FUZZ_WITH_FIXTURE
@given(question=questions, cleaned=st.booleans())
@example(question="Which papers were published after ①?", cleaned=False)
@example(question="Which papers were published after 2.⁵?", cleaned=False)
@example(question="Which papers were published after " + "9" * 5000 + "?", cleaned=False)
def test_encoder_parser_never_raises_on_hostile_text(
    tiny_engine: EmbeddedEngine, question: str, cleaned: bool
) -> None:
    if cleaned:  # as the pipeline calls it
        try:
            question = clean_question(question)
        except InvalidInputError:
            return
    check_encoder(encoder_parse(tiny_engine, question[: 2 * MAX_QUESTION_CHARS]), tiny_engine.stores.nodes.schema)


@pytest.mark.parametrize(
    ("question", "value"),
    [
        ("Which papers were published after ①?", None),  # isdigit() but int() refuses: was a ValueError
        ("Which papers were published after ²⁰¹⁹?", None),
        ("Which papers were published after " + "9" * 5000 + "?", None),  # over int()'s 4,300 digits
        ("Which papers were published after ٢٠٢٠?", 2020),  # Arabic-Indic decimal digits are numbers
        ("Which papers were published after 2020?", 2020),
    ],
)
def test_numbers_the_attribute_spotter_cannot_read_are_left_alone(
    tiny_engine: EmbeddedEngine, question: str, value: int | None
) -> None:
    parsed = encoder_parse(tiny_engine, question)
    found = [(c.attribute, c.op, c.value) for c in parsed.constraints]
    assert found == ([] if value is None else [("year", ">", value)])
