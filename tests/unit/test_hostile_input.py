"""Hostile strings at every door where text from a client, an LLM or a bundle meets code that acts on it.

- Milvus filter expressions are built only from integers: hostile node types / keys are refused before anything
  reaches the client, never interpolated (a recording fake client stands in for pymilvus).
- nGQL: the statement builders tests/unit/test_ngql.py does not exercise (FETCH, probes, DESCRIBE, USE, DROP,
  REBUILD, index prefixes, GO variants) refuse hostile identifiers and ids; a hostile value echoed by
  `yield_string` stays one literal.
- Generated Cypher is parsed, never executed: hostile SPARK plans leave the stores untouched, open no file, make
  no connection, load no database driver, and a backtracking regex cannot stall the executor.
- `clean_question`: control characters, bidi overrides, NUL, mixed scripts, 1 MB input (also of combining marks).
- LLM replies: lone surrogates, deep nesting and huge numbers become clean text or an `LlmError`.
- Bearer tokens: `read_tokens` (empty file, comments, whitespace) and the interceptor's constant-time compare
  against every configured token.
"""

from __future__ import annotations

import builtins
import json
import re
import socket
import sys
import time
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skbqa.common.errors import InvalidInputError
from skbqa.engine.answers import MAX_QUESTION_CHARS, clean_question
from skbqa.engine.embedded import EmbeddedEngine
from skbqa.ingest.builder import ingest
from skbqa.models.chat import LlmError
from skbqa.models.openai_chat import OpenAIChatModel
from skbqa.query.context import QueryContext
from skbqa.serving import security
from skbqa.serving.security import OPEN_PREFIXES, TokenAuthInterceptor, read_tokens
from skbqa.stages.parse.cypher.parser import parse_cypher
from skbqa.stores.graph import ngql, ngql_quoting
from skbqa.stores.vectors.milvus import MilvusIndex
from skbqa.stores.vectors.milvus_catalog import collection_name
from skbqa.strategies.af import AfStrategy
from skbqa.strategies.spark.config import SparkConfig
from skbqa.strategies.spark.executor import PlanExecutor
from skbqa.strategies.spark.plan import parse_plan
from tests.helpers import NODES, HashingEncoder, write_bundle

try:  # the reference reading of graphd's lexer (that module needs nebula3 for its fake graphd)
    from tests.unit.test_ngql import HOSTILE, tokenize
except pytest.skip.Exception:
    HOSTILE, tokenize = [], None  # type: ignore[assignment]
needs_lexer = pytest.mark.skipif(tokenize is None, reason="tests/unit/test_ngql.py needs nebula3")

INJECTIONS = [
    "1 or 1==1",
    "0) or (key > 0",
    "1]",
    "1, 2] or node_type in [3",
    "node_type in [1]",
    "1; drop collection x",
    "",
    " ",
    "nan",
    "1e3",
    "0x10",
    "1.0",
    "key",
]


def converts(value: object) -> bool:
    """Whether int() takes it ("１", "1_000", b"7" do): such values become integers, they are not refused."""
    try:
        int(value)  # type: ignore[call-overload]
    except (ValueError, TypeError, OverflowError):
        return False
    return True


# --- Milvus: filter expressions from integers only --------------------------------------------------------------

_INT_LIST = r"\[-?\d+(?:,-?\d+)*\]"
FILTER_GRAMMAR = re.compile(
    rf"|node_type in {_INT_LIST}|key in {_INT_LIST}|\(node_type in {_INT_LIST}\) and \(key in {_INT_LIST}\)"
)


class _Hits:
    def __init__(self) -> None:
        self.ids: list[int] = []
        self.distances: list[float] = []


class RecordingMilvusClient:
    """Records every call's filter / ids; answers with no rows, as an empty collection would."""

    def __init__(self) -> None:
        self.filters: list[str] = []
        self.ids: list[list[Any]] = []
        self.calls = 0

    def search(self, collection: str, *, data: Any, filter: str, **_: Any) -> list[_Hits]:
        self.calls += 1
        self.filters.append(filter)
        return [_Hits() for _ in range(len(data))]

    def query(self, collection: str, *, filter: str, **_: Any) -> list[dict[str, Any]]:
        self.calls += 1
        self.filters.append(filter)
        return []

    def get(self, collection: str, *, ids: list[Any], **_: Any) -> list[dict[str, Any]]:
        self.calls += 1
        self.ids.append(ids)
        return []

    def insert(self, collection: str, rows: list[dict[str, Any]], **_: Any) -> None:
        self.calls += 1
        self.ids.append([row["key"] for row in rows])


def milvus(
    rescore_max_keys: int = 256, filter_chunk_keys: int = 4_096
) -> tuple[MilvusIndex, RecordingMilvusClient]:
    index = MilvusIndex(
        "http://127.0.0.1:1",
        "skbqa_test",
        4,
        rescore_max_keys=rescore_max_keys,
        filter_chunk_keys=filter_chunk_keys,
    )
    client = RecordingMilvusClient()
    index._client = client  # the adapter's lazily opened connection, replaced by the recorder
    return index, client


def assert_only_integers(client: RecordingMilvusClient) -> None:
    for expression in client.filters:
        assert FILTER_GRAMMAR.fullmatch(expression), expression
    for ids in client.ids:
        assert all(type(i) is int for i in ids), ids


QUERY = np.ones((1, 4), np.float32) / 2


@pytest.mark.parametrize("hostile", [*INJECTIONS, None, 1.5j, b"1 or 1", object(), float("nan"), [1]])
def test_milvus_refuses_hostile_node_types_before_any_call(hostile: object) -> None:
    index, client = milvus()
    assert not converts(hostile)
    with pytest.raises((ValueError, TypeError)):
        index.search(QUERY, 5, node_types=[0, hostile])  # type: ignore[list-item]
    assert client.calls == 0


@pytest.mark.parametrize("hostile", [*INJECTIONS, None, b"1 or 1", object(), 2**70])
@pytest.mark.parametrize("path", ["rescore", "filter"])
def test_milvus_refuses_hostile_keys_before_any_call(hostile: object, path: str) -> None:
    index, client = milvus(rescore_max_keys=256 if path == "rescore" else 0)
    with pytest.raises((ValueError, TypeError, OverflowError)):
        index.search(QUERY, 5, node_types=[1], keys=np.asarray([3, hostile], dtype=object))
    with pytest.raises((ValueError, TypeError, OverflowError)):
        index.vectors_for(np.asarray([hostile], dtype=object))
    with pytest.raises((ValueError, TypeError, OverflowError)):
        index.add(np.asarray([hostile], dtype=object), np.zeros((1, 4), np.float32), np.zeros(1, np.int16))
    assert client.calls == 0


def test_milvus_integer_like_values_are_converted_never_quoted() -> None:
    """Whatever the caller passes — numpy ints, bools, decimal strings — the expression holds int literals."""
    index, client = milvus(rescore_max_keys=0, filter_chunk_keys=3)
    mixed: list[Any] = [np.int16(2), "3", True]  # not what the signature says: what a sloppy caller passes
    index.search(QUERY, 5, node_types=mixed, keys=np.asarray(["7", 8, np.int64(9), "1_0"]))
    index.search(QUERY, 5, node_types=[1])
    index.search(QUERY, 5, keys=np.arange(5))
    index.add(np.asarray(["11", 12]), np.zeros((2, 4), np.float32), np.asarray([1, 2]))
    index.vectors_for(np.asarray([np.uint8(4), "5"]))
    index2, client2 = milvus()
    index2.search(QUERY, 5, node_types=["2"], keys=np.asarray(["1", 2]))  # type: ignore[list-item]  # get(ids)
    assert client.filters[:2] == [
        "(node_type in [1,2,3]) and (key in [7,8,9])",
        "(node_type in [1,2,3]) and (key in [10])",
    ]
    assert "node_type in [1]" in client.filters and "key in [11,12]" in client.filters
    assert client2.ids == [[1, 2]]
    assert_only_integers(client)
    assert_only_integers(client2)


@settings(max_examples=200, deadline=None)
@given(
    types=st.lists(st.one_of(st.integers(-(2**15), 2**15 - 1), st.text(max_size=6)), max_size=5),
    keys=st.lists(st.one_of(st.integers(0, 2**62), st.text(max_size=6)), max_size=6),
)
def test_milvus_expressions_hold_integers_whatever_the_input(types: list[Any], keys: list[Any]) -> None:
    index, client = milvus(rescore_max_keys=0, filter_chunk_keys=2)
    try:
        index.search(QUERY, 3, node_types=types, keys=np.asarray(keys, dtype=object))
    except (ValueError, TypeError, OverflowError):
        assert client.calls == 0  # refused up front, nothing half-sent
    assert_only_integers(client)


@pytest.mark.parametrize("name", ["x; drop", "a b", "1abc", "", "a" * 256, "é", "col`", 'x"'])
def test_milvus_collection_names_are_checked_and_derived_names_are_safe(name: str) -> None:
    with pytest.raises(ValueError, match="collection name"):
        MilvusIndex("http://127.0.0.1:1", name, 4)
    manifest = {"schema_name": name + "; drop", "bundle": {"sha256": name}, "encoder": {"name": name}}
    derived = collection_name(manifest, "name", prefix=name)
    assert re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,254}", derived), derived


# --- nGQL: the builders test_ngql.py leaves out -----------------------------------------------------------------

HOSTILE_IDENTS = ["", "a b", "1a", "a`b", "`", "x; DROP SPACE s", 'a"b', "é", "a\nb", "a" * 129, "a-b", "a/b"]
HOSTILE_VIDS: list[Any] = ["1", "1 OR 1", -1, 2**63, 1.0, True, None, b"1", "1; DROP SPACE s"]


@pytest.mark.parametrize("name", HOSTILE_IDENTS)
def test_every_identifier_builder_refuses_what_no_backtick_name_holds(name: str) -> None:
    builders = [
        lambda: ngql.fetch_vertices(name, [1]),
        lambda: ngql.probe_tag(name),
        lambda: ngql.probe_edge(name),
        lambda: ngql.describe_space(name),
        lambda: ngql.describe_tag(name),
        lambda: ngql.describe_edge(name),
        lambda: ngql.describe_tag_index(name),
        lambda: ngql.drop_space(name),
        lambda: ngql.use_space(name),
        lambda: ngql.in_space(name, "YIELD 1"),
        lambda: ngql.rebuild_tag_indexes(["ok", name]),
        lambda: ngql.create_edge(name),
        lambda: ngql.create_tag_index("i", name, [("p", None)]),
        lambda: ngql.create_tag_index("i", "t", [(name, 10)]),
        lambda: ngql.create_edge_index(name, "e"),
        lambda: list(ngql.insert_edges(name, [(1, 2, 0)])),
        lambda: list(ngql.insert_vertices("t", ["ok", name], [(1, [1, 2])])),
        lambda: ngql.go_pairs([1], ["ok", name], "out", with_type=True),
        lambda: ngql.go_degree([1], [name], "in"),
    ]
    for build in builders:
        with pytest.raises(ValueError, match="not a NebulaGraph identifier"):
            build()


@pytest.mark.parametrize("vid", HOSTILE_VIDS)
def test_every_vertex_position_is_an_int64_or_refused(vid: Any) -> None:
    builders = [
        lambda: ngql.fetch_vertices("t", [0, vid]),
        lambda: list(ngql.insert_edges("e", [(vid, 1, 0)])),
        lambda: list(ngql.insert_edges("e", [(1, vid, 0)])),
        lambda: list(ngql.insert_edges("e", [(1, 2, vid)])),  # the rank
        lambda: ngql.go_pairs([vid], ["e"], "in", with_type=False),
        lambda: ngql.go_degree([1, vid], ["e"], "out"),
    ]
    for build in builders:
        with pytest.raises((ValueError, TypeError)):
            build()


@pytest.mark.parametrize("length", [0, 257, -1, "10); DROP SPACE s; (", 1.5, True])
def test_index_prefix_lengths_must_be_small_integers(length: Any) -> None:
    with pytest.raises((ValueError, TypeError)):
        ngql.create_tag_index("i", "t", [("name", length)])


@needs_lexer
@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=80))
def test_a_hostile_value_echoed_by_yield_string_stays_one_literal(value: str) -> None:
    tokens = tokenize(ngql.yield_string(value))
    assert tokens == [("word", "YIELD"), ("string", value), ("word", "AS"), ("word", ngql.COL_PROBE)]


@needs_lexer
def test_statements_built_from_safe_labels_of_hostile_names_tokenize_cleanly() -> None:
    """A bundle's type / edge / attribute names reach nGQL only through safe_label: any name yields a statement
    holding only the tokens graphd is meant to see."""
    for name in [*HOSTILE, *HOSTILE_IDENTS]:
        label = ngql_quoting.safe_label(name)
        for stmt in (
            ngql.fetch_vertices(label, [1, 2]),
            ngql.probe_edge(label),
            ngql.in_space(label, ngql.describe_tag(label)),
            ngql.create_tag_index(label, label, [(label, 16)]),
            ngql.go_degree([3], [label], "in"),
        ):
            tokens = tokenize(stmt)
            assert ("ident", label) in tokens
            assert all(kind != "string" for kind, _ in tokens)
            assert [t for t in tokens if t == ("punct", ";")] == (
                [("punct", ";")] if stmt.startswith("USE") else []
            )


# --- generated Cypher is parsed, never executed -----------------------------------------------------------------


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> EmbeddedEngine:
    root = tmp_path_factory.mktemp("hostile")
    nodes = [*NODES, {"id": 40, "type": "paper", "name": "Backtracking bait", "attrs": {}, "text": "a" * 27 + "!"}]
    encoder = HashingEncoder()
    ingest(write_bundle(root / "bundle", nodes=nodes), root / "index", encoder, progress=False)
    return EmbeddedEngine.open(root / "index", encoder=encoder)


def store_snapshot(engine: EmbeddedEngine) -> tuple[Any, ...]:
    stores = engine.stores
    arrays = []
    for name, value in sorted(vars(stores.graph).items()):
        items = sorted(value.items()) if isinstance(value, dict) else [(name, value)]
        arrays += [(key, array.tobytes()) for key, array in items if isinstance(array, np.ndarray)]
    assert arrays, "the graph's arrays are part of the snapshot"
    return (
        stores.nodes.ids.tobytes(),
        stores.nodes.types.tobytes(),
        tuple(stores.nodes.names),
        tuple(stores.nodes.texts),
        json.dumps(stores.nodes.attrs, sort_keys=True),
        tuple(arrays),
        {name: len(v) for name, v in stores.vectors.items()},
    )


HOSTILE_PLANS: list[dict[str, Any]] = [
    {"steps": [{"cypher": "MATCH (n) DETACH DELETE n"}]},
    {"steps": [{"cypher": "MATCH (p:paper) SET p.title = 'pwned' RETURN p"}]},
    {"steps": [{"cypher": "CREATE (p:paper {title: 'x'}) RETURN p"}]},
    {"steps": [{"cypher": "MERGE (a:author {name: 'Mallory'})-[:written_by]->(p:paper) RETURN a"}]},
    {"steps": [{"cypher": "MATCH (p:paper) REMOVE p.year RETURN p"}]},
    {"steps": [{"cypher": "LOAD CSV FROM 'file:///etc/passwd' AS row RETURN row"}]},
    {"steps": [{"cypher": "CALL apoc.load.json('file:///etc/shadow') YIELD value RETURN value"}]},
    {"steps": [{"cypher": "CALL db.labels() YIELD label RETURN label"}]},
    {"steps": [{"cypher": "MATCH (p:paper) RETURN p; MATCH (n) DETACH DELETE n"}]},
    {"steps": [{"cypher": "MATCH (p:paper) RETURN p UNION CREATE (x:paper) RETURN x"}]},
    {"steps": [{"cypher": "MATCH (p:paper) FOREACH (x IN [1] | CREATE (:paper)) RETURN p"}]},
    {"steps": [{"cypher": 'MATCH (p:paper {title: "x\' }) DETACH DELETE p //"}) RETURN p'}]},
    {"steps": [{"cypher": "MATCH (p:paper) WHERE p.title = '' OR 1=1 RETURN p"}]},
    {
        "steps": [
            {
                "cypher": "MATCH (p:`paper`) WHERE p.`title` =~ '.*' AND exists { MATCH (n) DETACH DELETE n } RETURN p"
            }
        ]
    },
    {"steps": [{"cypher": "MATCH (p:paper) WITH p CALL { MATCH (n) DELETE n } RETURN p"}]},
    {
        "steps": [
            {"cypher": "USING PERIODIC COMMIT LOAD CSV FROM 'http://127.0.0.1:9/x' AS r CREATE (:x) RETURN r"}
        ]
    },
    {"steps": [{"search": "'; DROP TABLE nodes; --", "type": 'paper"); MATCH (n) DETACH DELETE n //', "k": 5}]},
]


@pytest.fixture
def no_side_channels(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Record every file the code opens and refuse every network connection while the executor runs."""
    opened: list[str] = []
    real_open = builtins.open

    def recording_open(file: Any, *args: Any, **kwargs: Any) -> Any:
        opened.append(str(file))
        return real_open(file, *args, **kwargs)

    def no_connect(self: socket.socket, address: Any) -> None:
        raise AssertionError(f"a network connection was attempted: {address!r}")

    monkeypatch.setattr(builtins, "open", recording_open)
    monkeypatch.setattr(socket.socket, "connect", no_connect)
    yield opened


@pytest.mark.parametrize("plan", HOSTILE_PLANS, ids=lambda p: next(iter(p["steps"][0].values()))[:40])
def test_hostile_plans_are_parsed_never_executed(
    engine: EmbeddedEngine, plan: dict[str, Any], no_side_channels: list[str]
) -> None:
    af = engine.strategies["af"]
    assert isinstance(af, AfStrategy)
    before = store_snapshot(engine)
    drivers = {m for m in sys.modules if m.split(".")[0] in ("kuzu", "neo4j", "nebula3", "pymilvus", "py2neo")}
    parsed = parse_plan(json.dumps(plan))
    execution = PlanExecutor(engine.stores, af).execute(
        QueryContext("which papers?", engine.encoder), parsed, SparkConfig(), 10
    )
    assert store_snapshot(engine) == before
    assert not [f for f in no_side_channels if "passwd" in f or "shadow" in f or f.startswith("http")]
    assert {
        m for m in sys.modules if m.split(".")[0] in ("kuzu", "neo4j", "nebula3", "pymilvus", "py2neo")
    } <= drivers
    for step in parsed.steps:
        outside_strings = re.sub(r"'[^']*'|\"[^\"]*\"", "''", getattr(step, "cypher", ""))
        if re.search(r"\b(DELETE|CREATE|MERGE|SET|REMOVE|LOAD|CALL|FOREACH)\b", outside_strings):
            warnings = "\n".join(execution.results[step.id].warnings)
            assert re.search(r"syntax error|dropped|ignored", warnings), warnings


def test_a_write_clause_inside_a_string_literal_stays_a_name() -> None:
    query = parse_cypher('MATCH (p:paper {title: "x\' }) DETACH DELETE p //"}) RETURN p')
    assert query.symbols["p"].names == ("x' }) DETACH DELETE p //",) and not query.warnings


@pytest.mark.parametrize(
    "pattern",
    [
        "(a|a)*b",
        "((a+))+b",
        "(.*a){30}",
        ".*.*.*.*.*.*b",
        "(a|aa)+b",
        "(?:a|a)*b",
        "\\w+\\w+\\w+\\w+b",
        "(a)\\1*b",
    ],
)
def test_a_backtracking_regex_from_the_llm_cannot_stall_the_executor(
    engine: EmbeddedEngine, pattern: str, no_side_channels: list[str]
) -> None:
    """One node's text is 27 a's: each pattern would take seconds to hours of `re` backtracking on it."""
    af = engine.strategies["af"]
    assert isinstance(af, AfStrategy)
    cypher = f"MATCH (p:paper) WHERE p.text =~ '{pattern}' RETURN p"
    plan = parse_plan(json.dumps({"steps": [{"id": "g", "cypher": cypher}]}))
    started = time.perf_counter()
    execution = PlanExecutor(engine.stores, af).execute(
        QueryContext("which papers?", engine.encoder), plan, SparkConfig(), 10
    )
    assert time.perf_counter() - started < 2.0
    warnings = "\n".join(execution.results["g"].warnings)
    assert "not applied (bad_pattern)" in warnings, warnings


# --- clean_question ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("which\x00papers\x01cite\x7fit\x1b[31m?", "which papers cite it [31m?"),  # NUL and controls → spaces
        ("\u202ewhich papers\u202c cite \u2066it\u2069?", "which papers cite it ?"),  # bidi overrides → spaces
        ("which\u200b pa\u200dpers\ufeff?", "which pa pers ?"),  # zero-width / BOM removed (Cf)
        ("wh\ud800ich\udfff papers", "wh ich papers"),  # lone surrogates (unencodable) → spaces
        ("ＭＡＴＣＨ （p） papers²", "MATCH (p) papers2"),  # NFKC folds fullwidth and superscripts
        ("which Мatch рaper 基因 مرض?", "which Мatch рaper 基因 مرض?"),  # mixed scripts are kept as written
        ("which\u2028papers\u2029\u3000\u00a0cite", "which papers cite"),  # every Unicode space collapses
        ("tag\U000e0041\U000e007f chars", "tag chars"),  # tag characters (Cf) removed
    ],
)
def test_clean_question_neutralises_control_and_format_characters(question: str, expected: str) -> None:
    assert clean_question(question) == expected


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(exclude_categories=()), max_size=300))
def test_clean_question_output_is_printable_encodable_text(question: str) -> None:
    try:
        text = clean_question(question)
    except InvalidInputError:
        return
    assert text and text == text.strip() and "  " not in text and len(text) <= MAX_QUESTION_CHARS
    assert not any(unicodedata.category(c) in ("Cc", "Cf", "Cs") for c in text)
    text.encode("utf-8")  # never raises: no lone surrogates reach an encoder or a log line


@pytest.mark.parametrize(
    "question",
    [
        "x" * (1 << 20),  # 1 MB
        "\x00" * (1 << 20),
        "\u202e" * (1 << 20),
        "a" + "\u0316\u0301" * 64_000,  # combining marks: NFKC orders them in quadratic time (was ~10 s)
        "a" + "\u0301" * (1 << 20),
        "\ufdfa" * 1000,  # NFKC expands each to 18 characters
    ],
    ids=["ascii", "nul", "bidi", "combining-unsorted", "combining-1MB", "nfkc-expansion"],
)
def test_huge_questions_are_refused_fast(question: str) -> None:
    started = time.perf_counter()
    with pytest.raises(InvalidInputError, match="limit is 4000"):
        clean_question(question)
    assert time.perf_counter() - started < 0.5


def test_whitespace_padding_still_shrinks_to_the_limit() -> None:
    assert clean_question(" " * 7_000 + "which papers?") == "which papers?"
    assert clean_question("x" * MAX_QUESTION_CHARS) == "x" * MAX_QUESTION_CHARS
    for question in ("x" * (MAX_QUESTION_CHARS + 1), " " * 9_000 + "x"):
        with pytest.raises(InvalidInputError, match="limit"):
            clean_question(question)


# --- LLM replies ------------------------------------------------------------------------------------------------


def reply(content: Any) -> bytes:
    return json.dumps({"choices": [{"message": {"content": content}}]}).encode()


def test_lone_surrogates_in_an_llm_reply_become_replacement_characters() -> None:
    chat = OpenAIChatModel("http://127.0.0.1:1/v1", "m")
    got = chat._read_reply(reply("MATCH (g {name: 'a\ud800b\udfff'}) RETURN g \U0001f600"), 10)
    assert got.content == "MATCH (g {name: 'a\ufffdb\ufffd'}) RETURN g \U0001f600"
    got.content.encode("utf-8")


@pytest.mark.parametrize(
    "payload",
    [
        b'{"choices": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",  # RecursionError in json
        b'{"choices": [{"message": {"content": "x"}}], "usage": {"prompt_tokens": 1' + b"0" * 5000 + b"}}",
        b"\xff\xfe{}",
        b"",
    ],
    ids=["deep", "huge-number", "not-utf8", "empty"],
)
def test_malformed_llm_replies_are_llm_errors(payload: bytes) -> None:
    chat = OpenAIChatModel("http://127.0.0.1:1/v1", "m")
    with pytest.raises(LlmError, match="not JSON"):
        chat._read_reply(payload, 10)


# --- bearer tokens ----------------------------------------------------------------------------------------------


def test_read_tokens_skips_comments_blank_lines_and_whitespace(tmp_path: Path) -> None:
    path = tmp_path / "tokens"
    path.write_text("# production\n\n  tok-1  \r\n\ttok 2\t\n   # indented comment\nlast", encoding="utf-8")
    assert read_tokens(path) == [b"tok-1", b"tok 2", b"last"]


def test_a_byte_order_mark_is_not_part_of_the_first_token(tmp_path: Path) -> None:
    path = tmp_path / "tokens"
    path.write_bytes(b"\xef\xbb\xbftok-1\r\ntok-2\r\n")  # as Windows editors save it
    assert read_tokens(path) == [b"tok-1", b"tok-2"]


@pytest.mark.parametrize("content", ["", "\n\n", "   \n\t\n", "# only\n#comments\n", "  # indented\n"])
def test_a_token_file_without_tokens_is_refused(tmp_path: Path, content: str) -> None:
    path = tmp_path / "tokens"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(InvalidInputError, match="holds no token"):
        read_tokens(path)


def test_a_missing_token_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="does not exist"):
        read_tokens(tmp_path / "nope")
    with pytest.raises(InvalidInputError, match="does not exist"):
        read_tokens(tmp_path)  # a directory


class CountingCompare:
    def __init__(self) -> None:
        self.calls: list[tuple[bytes, bytes]] = []

    def __call__(self, a: bytes, b: bytes) -> bool:
        self.calls.append((a, b))
        return bool(a == b)


@pytest.fixture
def compare(monkeypatch: pytest.MonkeyPatch) -> CountingCompare:
    counting = CountingCompare()
    monkeypatch.setattr(security.hmac, "compare_digest", counting)
    return counting


TOKENS = [b"first-token", b"second-token", b"third-token"]


@pytest.mark.parametrize("offered", ["first-token", "second-token", "third-token", "wrong", "", "first-toke"])
def test_every_configured_token_is_compared_in_constant_time(compare: CountingCompare, offered: str) -> None:
    interceptor = TokenAuthInterceptor(list(TOKENS))
    allowed = interceptor._allowed((("x-other", "1"), ("authorization", f"Bearer {offered}")))
    assert allowed == (offered.encode() in TOKENS)
    # hmac.compare_digest against every token, even after a match: the time does not tell which one matched
    assert compare.calls == [(offered.encode(), token) for token in TOKENS]


@pytest.mark.parametrize(
    "metadata",
    [
        (),
        (("x-api-key", "first-token"),),
        (("authorization", "first-token"),),  # no scheme
        (("authorization", "Basic Zmlyc3QtdG9rZW4="),),
        (("authorization", "Token first-token"),),
    ],
)
def test_requests_without_a_bearer_token_are_refused_without_comparing(
    compare: CountingCompare, metadata: tuple[tuple[str, str], ...]
) -> None:
    assert not TokenAuthInterceptor(list(TOKENS))._allowed(metadata)
    assert compare.calls == []


def test_bytes_metadata_and_the_first_authorization_header_decide(compare: CountingCompare) -> None:
    interceptor = TokenAuthInterceptor(list(TOKENS))
    assert interceptor._allowed((("authorization", b"Bearer second-token"),))
    assert not interceptor._allowed((("authorization", "Bearer wrong"), ("authorization", "Bearer first-token")))


@pytest.mark.parametrize(
    "headers",
    [
        ("Bearer first-token", "Bearer second-token"),
        ("Bearer first-token", "Bearer first-token"),
        ("Bearer first-token", "Bearer wrong"),
        (b"Bearer first-token", "Bearer first-token"),
    ],
)
def test_more_than_one_authorization_header_is_refused(compare: CountingCompare, headers: tuple[Any, ...]) -> None:
    metadata = tuple(("authorization", value) for value in headers)
    assert not TokenAuthInterceptor(list(TOKENS))._allowed(metadata)


class _Details:
    def __init__(self, method: str, metadata: tuple[tuple[str, str], ...]) -> None:
        self.method = method
        self.invocation_metadata = metadata


def test_only_health_and_reflection_are_open(compare: CountingCompare) -> None:
    interceptor = TokenAuthInterceptor(list(TOKENS))
    served = grpc.unary_unary_rpc_method_handler(lambda request, context: None)
    streamed = grpc.unary_stream_rpc_method_handler(lambda request, context: iter(()))
    for prefix in OPEN_PREFIXES:
        assert interceptor.intercept_service(lambda d: served, _Details(prefix + "Check", ())) is served
    for method in ("/skbqa.v1.Skbqa/Ask", "/skbqa.v1.Stage/Process", "/grpc.healthz/Check", "/x"):
        assert interceptor.intercept_service(lambda d: served, _Details(method, ())) is not served
    denied = interceptor.intercept_service(lambda d: streamed, _Details("/skbqa.v1.Skbqa/AskStream", ()))
    assert denied is not streamed and denied.response_streaming
    good = (("authorization", "Bearer third-token"),)
    admitted = interceptor.intercept_service(lambda d: served, _Details("/skbqa.v1.Skbqa/Ask", good))
    assert admitted is not None and not admitted.response_streaming
    # the servicer is called, with the call's context handing on the token it was admitted with
    seen: list[Any] = []
    checked = grpc.unary_unary_rpc_method_handler(lambda request, context: seen.append(context))
    interceptor.intercept_service(lambda d: checked, _Details("/skbqa.v1.Skbqa/Ask", good)).unary_unary(
        None, "ctx"
    )
    assert seen and security.admitted_token(seen[0]) == b"third-token"
