"""nGQL text (`skbqa.stores.graph.ngql`) and the NebulaGraph adapter and loader, tested without a server.

Two test doubles stand in for graphd:
- `read_literal` / `tokenize`: a reading of graphd's lexer transcribed from src/parser/scanner.lex (the DQ_STR
  rules: longest match wins, the earlier rule on a tie; raw runs copied with strncpy). It decodes what
  `quote_string` emits, so "graphd reads back exactly the input" is a test, including flex's longest-match trap
  with octal escapes. Anything outside the token set skbqa emits (a comment, a stray quote, a bad backtick name)
  fails to tokenize, so a hostile value that escaped its literal would be caught.
- `FakeGraphd`: executes the statement shapes skbqa emits against an in-memory space with NebulaGraph's
  documented semantics (src(edge) / dst(edge) are the stored endpoints under REVERSELY and BIDIRECT; INSERT EDGE
  overwrites on (src, type, rank, dst); metad knows DDL at once but graphd / storaged only after a delay; rows
  come back in arbitrary order) and answers with real nebula3 `ResultSet` objects, so reply parsing uses the
  real client API (`is_succeeded`, `error_code`, `error_msg`, `column_values`, `ValueWrapper.as_int` ...).
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skbqa.common.errors import BackendUnavailableError, IndexStoreError
from skbqa.stores.graph import nebula_session, ngql, ngql_quoting
from skbqa.stores.graph.nebula import NebulaGraph
from skbqa.stores.graph.nebula_load_plan import convert, edge_rows, infer_kind, plan_layout
from skbqa.stores.graph.nebula_load_steps import ESCAPE_PROBE, POLL_INTERVAL_S
from skbqa.stores.graph.nebula_loader import load_graph_into_nebula, read_index_graph
from skbqa.stores.graph.nebula_settings import parse_addresses, parse_nebula_url
from tests.contract.test_graph_store import BATCHES, NODES, SmallGraph, oracle_pairs, small_graph, stored_attr

nebula3 = pytest.importorskip("nebula3")
from nebula3.common.ttypes import DataSet, NMap, NullType, Row, Value  # noqa: E402
from nebula3.data.ResultSet import ResultSet  # noqa: E402
from nebula3.Exception import IOErrorException  # noqa: E402
from nebula3.graph.ttypes import ExecutionResponse  # noqa: E402

HOSTILE = [
    "",
    "plain",
    'say "hi"',
    "it's",
    "back\\slash",
    "trailing backslash\\",
    "`backticks`",
    "new\nline",
    "cr\rlf\r\n",
    "tab\tff\x0cbs\x08",
    '"; DROP SPACE x; "',
    "'; DROP SPACE x; '",
    "# not a comment",
    "// nor this /* or this */",
    "nul\x00inside",
    "\x00",
    "\x01" + "7",  # a control character followed by a digit: the flex longest-match trap
    "\x1f99\x7f0",
    "\\0017",
    "\\u0041 stays as typed",
    "unicode: é ✓ 日本 𝛼 \u2028 \u0085",
    "$- $^ $$ | ; ,",
]


# --- a reference reading of graphd's lexer ----------------------------------------------------------------------


class LexError(Exception):
    pass


_DQ_RULES: list[tuple[str, re.Pattern[bytes]]] = [  # scanner.lex, DQ_STR state, in file order
    ("end", re.compile(rb'"')),
    ("newline", re.compile(rb"\n")),
    ("raw", re.compile(rb'[^\\\n"]+')),
    ("octal", re.compile(rb"\\[0-7]{1,3}")),
    ("decimal", re.compile(rb"\\[0-9]+")),
    ("unicode", re.compile(rb"\\[uUxX][0-9a-fA-F]{4}")),
    ("named", re.compile(rb"\\[ntrbf]")),
    ("any", re.compile(rb"\\(.|\n)", re.S)),
    ("lone", re.compile(rb"\\")),
]
_NAMED = {b"n": b"\n", b"t": b"\t", b"r": b"\r", b"b": b"\b", b"f": b"\f"}


def read_literal(data: bytes, pos: int, *, octal: bool = True) -> tuple[bytes, int]:
    """The value of the double-quoted literal at data[pos], and the index just after it. `octal=False` reads like
    graphd with --disable_octal_escape_char=true (octal and decimal escapes kept as typed)."""
    assert data[pos : pos + 1] == b'"'
    pos += 1
    out = bytearray()
    while True:
        if pos >= len(data):
            raise LexError("unterminated string")
        best: tuple[str, re.Match[bytes]] | None = None
        for name, pattern in _DQ_RULES:
            match = pattern.match(data, pos)
            if match and (best is None or len(match.group()) > len(best[1].group())):
                best = (name, match)
        assert best is not None
        name, match = best
        text = match.group()
        pos = match.end()
        if name == "end":
            return bytes(out), pos
        if name in ("newline", "lone") or (name == "decimal" and octal):
            raise LexError(f"graphd rejects {text!r} inside a string")
        if name == "raw":
            out += text.split(b"\0")[0].ljust(len(text), b"\0")  # strncpy: a raw NUL zeroes the rest of the run
        elif name in ("octal", "decimal") and not octal:
            out += text
        elif name == "octal":
            value = int(text[1:], 8)
            if value > 0xFF:
                raise LexError("octal escape above 0xFF")
            out.append(value)
        elif name == "unicode":
            out += chr(int(text[2:], 16)).encode()
        elif name == "named":
            out += _NAMED[text[1:]]
        else:
            out += text[1:]


_TOKEN = re.compile(
    rb"(?P<ws>[ \t\r\n]+)|(?P<ident>`[A-Za-z][A-Za-z0-9_]*`)|(?P<word>[A-Za-z_][A-Za-z0-9_]*)"
    rb"|(?P<number>[0-9]+(?:\.[0-9]+)?)|(?P<punct>->|\$-|[(),:;@|.*=+-])"
)
Token = tuple[str, Any]


def tokenize(stmt: str, *, octal: bool = True) -> list[Token]:
    data = stmt.encode("utf-8")
    tokens: list[Token] = []
    pos = 0
    while pos < len(data):
        if data[pos : pos + 1] == b'"':
            value, pos = read_literal(data, pos, octal=octal)
            tokens.append(("string", value.decode("utf-8")))
            continue
        match = _TOKEN.match(data, pos)
        if match is None:
            raise LexError(f"unexpected {data[pos : pos + 20]!r}")
        kind = match.lastgroup
        assert kind is not None
        text = match.group().decode()
        pos = match.end()
        if kind == "ident":
            tokens.append(("ident", text[1:-1]))
        elif kind == "number":
            tokens.append(("number", float(text) if "." in text else int(text)))
        elif kind != "ws":
            tokens.append((kind, text))
    return tokens


def strings_in(stmt: str) -> list[str]:
    return [value for kind, value in tokenize(stmt) if kind == "string"]


# --- ngql: identifiers ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["paper", "written_by", "GO", "A1", "x" * ngql_quoting.MAX_LABEL])
def test_quote_ident_accepts_labels(name: str) -> None:
    assert ngql_quoting.quote_ident(name) == f"`{name}`"
    assert tokenize(ngql_quoting.quote_ident(name)) == [("ident", name)]


@pytest.mark.parametrize(
    "name",
    [
        "",
        "1a",
        "_x",
        "a b",
        "a`b",
        "`",
        "a-b",
        "gene/protein",
        "é",
        "x" * (ngql_quoting.MAX_LABEL + 1),
        '"; DROP SPACE x; "',
    ],
)
def test_quote_ident_refuses_what_no_backtick_name_can_hold(name: str) -> None:
    with pytest.raises(ValueError, match="not a NebulaGraph identifier"):
        ngql_quoting.quote_ident(name)


@pytest.mark.parametrize("name", [*HOSTILE, "gene/protein", "has phenotype", "a`b`c", "1st", "_private", "é" * 80])
def test_safe_label_maps_anything_to_a_valid_deterministic_label(name: str) -> None:
    label = ngql_quoting.safe_label(name)
    assert ngql_quoting.is_label(label) and tokenize(ngql_quoting.quote_ident(label)) == [("ident", label)]
    assert ngql_quoting.safe_label(name) == label


def test_safe_label_keeps_valid_names_and_separates_near_misses() -> None:
    assert ngql_quoting.safe_label("written_by") == "written_by"
    mapped = {ngql_quoting.safe_label(n) for n in ("a-b", "a b", "a/b", "a_b")}
    assert len(mapped) == 4 and "a_b" in mapped
    assert ngql_quoting.safe_label("gene/protein").startswith("gene_protein_")
    assert ngql_quoting.safe_label("paper", force_hash=True) != "paper"


def test_unique_label_avoids_taken_names() -> None:
    taken = {ngql.META_TAG}
    first = ngql_quoting.unique_label(ngql.META_TAG, taken)
    assert first != ngql.META_TAG and ngql_quoting.is_label(first) and first in taken
    assert ngql_quoting.unique_label("paper", taken) == "paper"
    assert ngql_quoting.unique_label("paper", taken) not in ("paper", first)


# --- ngql: string literals --------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", HOSTILE)
def test_quote_string_is_read_back_exactly(value: str) -> None:
    text = ngql_quoting.quote_string(value)
    data = text.encode()
    decoded, end = read_literal(data, 0)
    assert decoded.decode("utf-8") == value
    assert end == len(data)  # the literal ends exactly where the emitted text ends: nothing leaks out
    assert "\n" not in text and "\x00" not in text


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=60))
def test_quote_string_round_trips_any_text(value: str) -> None:
    data = ngql_quoting.quote_string(value).encode()
    decoded, end = read_literal(data, 0)
    assert decoded.decode("utf-8") == value and end == len(data)


def test_octal_escapes_never_run_into_digits() -> None:
    assert ngql_quoting.quote_string("\x017") == '"\\001\\067"'
    assert ngql_quoting.quote_string("\x0178a") == '"\\001\\067\\070a"'
    with pytest.raises(LexError):  # the naive form is what graphd rejects: flex reads \0017 as one bad escape
        read_literal(b'"\\0017"', 0)
    assert ngql_quoting.quote_string("\n7") == '"\\n7"'  # named escapes are safe before digits


def test_quote_string_replaces_lone_surrogates_and_refuses_non_strings() -> None:
    assert read_literal(ngql_quoting.quote_string("a\ud800b").encode(), 0)[0].decode() == "a\ufffdb"
    with pytest.raises(TypeError):
        ngql_quoting.quote_string(b"bytes")  # type: ignore[arg-type]


def test_octal_disabled_graphd_reads_escapes_differently() -> None:
    """The loader's escape probe must be able to tell such a graphd apart."""
    data = ngql_quoting.quote_string(ESCAPE_PROBE).encode()
    assert read_literal(data, 0)[0].decode() == ESCAPE_PROBE
    assert read_literal(data, 0, octal=False)[0].decode() != ESCAPE_PROBE


def test_hostile_values_stay_inside_their_literals() -> None:
    rows = [(i, [i, value, None]) for i, value in enumerate(HOSTILE)]
    (stmt,) = ngql.insert_vertices("paper", ["node_id", "name", "note"], rows)
    tokens = tokenize(stmt)
    assert strings_in(stmt) == HOSTILE
    assert {value for kind, value in tokens if kind == "word"} == {"INSERT", "VERTEX", "VALUES", "NULL"}
    assert [t for t in tokens if t == ("punct", ";")] == []


# --- ngql: numbers and other literals ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (None, "NULL"),
        (True, "true"),
        (np.bool_(False), "false"),
        (0, "0"),
        (-5, "-5"),
        (np.int32(7), "7"),
        (ngql_quoting.INT64_MAX, str(2**63 - 1)),
        (1.5, "1.5"),
        (2.0, "2.0"),
        (1e-5, "0.00001"),
        (-1.5e20, "-150000000000000000000.0"),
        (np.float32(0.25), "0.25"),
        ("x", '"x"'),
    ],
)
def test_literal(value: object, text: str) -> None:
    assert ngql_quoting.literal(value) == text


def test_doubles_are_positional_and_exact() -> None:
    for value in (0.1, 1 / 3, 123456.789e-12, 5e-324, 1.7976931348623157e308, -2.5):
        text = ngql_quoting.format_double(value)
        assert re.fullmatch(r"-?[0-9]+\.[0-9]+", text), text
        assert float(text) == value


@pytest.mark.parametrize("value", [float("nan"), float("inf"), 2**63, -(2**63), object(), b"x", [1], {"a": 1}])
def test_literal_refuses_what_ngql_cannot_say(value: object) -> None:
    with pytest.raises((ValueError, TypeError)):
        ngql_quoting.literal(value)


@pytest.mark.parametrize("value", [0, 5, np.int64(9), np.uint8(3), ngql_quoting.INT64_MAX])
def test_format_vid_accepts_integers(value: object) -> None:
    assert ngql_quoting.format_vid(value) == str(int(value))  # type: ignore[call-overload]


@pytest.mark.parametrize("value", [-1, 2**63, 1.0, np.float64(2), "1", "1; DROP SPACE x", True, None])
def test_format_vid_refuses_everything_else(value: object) -> None:
    with pytest.raises((ValueError, TypeError)):
        ngql_quoting.format_vid(value)


# --- ngql: DDL --------------------------------------------------------------------------------------------------


def test_create_space() -> None:
    assert ngql.create_space("kb", partitions=3, replicas=1) == (
        "CREATE SPACE IF NOT EXISTS `kb`(partition_num = 3, replica_factor = 1, vid_type = INT64)"
    )
    for bad in (0, -1, "10; DROP SPACE x", 2.5):
        with pytest.raises((ValueError, TypeError)):
            ngql.create_space("kb", partitions=bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        ngql.create_space("my space")


def test_create_tag_edge_and_indexes() -> None:
    stmt = ngql.create_tag("paper", [("node_id", "int"), ("name", "string"), ("score", "double"), ("ok", "bool")])
    assert stmt == (
        "CREATE TAG IF NOT EXISTS `paper`(`node_id` int64 NULL, `name` string NULL, `score` double NULL, "
        "`ok` bool NULL)"
    )
    assert ngql.create_edge("cites") == "CREATE EDGE IF NOT EXISTS `cites`()"
    assert ngql.create_tag_index("i1", "paper", [("node_id", None), ("name", 64)]) == (
        "CREATE TAG INDEX IF NOT EXISTS `i1` ON `paper`(`node_id`, `name`(64))"
    )
    assert ngql.create_edge_index("i2", "cites") == "CREATE EDGE INDEX IF NOT EXISTS `i2` ON `cites`()"
    with pytest.raises(ValueError, match="kind"):
        ngql.create_tag("paper", [("x", "list")])
    with pytest.raises(ValueError):
        ngql.create_tag("paper", [("a b", "int")])


# --- ngql: batched writes ---------------------------------------------------------------------------------------


def _vids_of(stmt: str) -> list[int]:
    """The vertex ids of an INSERT VERTEX statement (numbers right before a ':')."""
    tokens = tokenize(stmt)
    return [tokens[i - 1][1] for i, t in enumerate(tokens) if t == ("punct", ":")]


def test_insert_vertices_batches_by_rows() -> None:
    rows = [(i, [i, f"n{i}"]) for i in range(1234)]
    statements = list(ngql.insert_vertices("t", ["node_id", "name"], rows, batch_rows=100))
    assert len(statements) == 13
    assert all(len(_vids_of(s)) <= 100 for s in statements)
    assert [v for s in statements for v in _vids_of(s)] == list(range(1234))
    assert statements[0].startswith('INSERT VERTEX `t`(`node_id`, `name`) VALUES 0:(0, "n0"), 1:(1, "n1")')


def test_insert_vertices_batches_by_bytes() -> None:
    rows = [(i, ["x" * (50 + 37 * (i % 5))]) for i in range(200)] + [(999, ["y" * 5000])]
    statements = list(ngql.insert_vertices("t", ["name"], rows, batch_rows=1000, batch_bytes=2000))
    assert [v for s in statements for v in _vids_of(s)] == [*range(200), 999]
    for stmt in statements:
        assert len(stmt.encode()) <= 2000 or len(_vids_of(stmt)) == 1  # one oversized row goes alone
    assert len(statements[-1].encode()) > 5000 and _vids_of(statements[-1]) == [999]


def test_insert_vertices_checks_row_width_and_batch_size() -> None:
    with pytest.raises(ValueError, match="2 values for 1"):
        list(ngql.insert_vertices("t", ["name"], [(1, ["a", "b"])]))
    with pytest.raises(ValueError):
        ngql.insert_vertices("t", ["name"], [], batch_rows=0)


def test_insert_edges_writes_ranks() -> None:
    statements = list(ngql.insert_edges("cites", [(1, 2, 0), (1, 2, 1), (3, 0, 0)], batch_rows=2))
    assert statements == [
        "INSERT EDGE `cites`() VALUES 1->2@0:(), 1->2@1:()",
        "INSERT EDGE `cites`() VALUES 3->0@0:()",
    ]
    with pytest.raises(ValueError):
        list(ngql.insert_edges("cites", [(1, 2, -1)]))


# --- ngql: reads ------------------------------------------------------------------------------------------------


def test_go_direction_keywords_and_columns() -> None:
    assert ngql.go_neighbours([1, 2], ["a"], "out") == "GO FROM 1, 2 OVER `a` YIELD DISTINCT dst(edge) AS n"
    assert (
        ngql.go_neighbours([1], ["a", "b"], "in")
        == "GO FROM 1 OVER `a`, `b` REVERSELY YIELD DISTINCT src(edge) AS n"
    )
    assert ngql.go_neighbours([1], ["a"], "both") == (
        "GO FROM 1 OVER `a` BIDIRECT YIELD DISTINCT src(edge) AS s, dst(edge) AS n"
    )
    assert (
        ngql.go_pairs([3], ["a"], "out", with_type=False)
        == "GO FROM 3 OVER `a` YIELD src(edge) AS s, dst(edge) AS n"
    )
    assert ngql.go_pairs([3], ["a", "b"], "in", with_type=True) == (
        "GO FROM 3 OVER `a`, `b` REVERSELY YIELD dst(edge) AS s, src(edge) AS n, type(edge) AS t"
    )
    assert ngql.go_degree([4, 5], ["a"], "in") == (
        "GO FROM 4, 5 OVER `a` REVERSELY YIELD dst(edge) AS s | GROUP BY $-.s YIELD $-.s AS s, count(*) AS c"
    )
    for stmt in (ngql.go_degree([4], ["a"], "out"), ngql.go_neighbours([1], ["a"], "both")):
        tokenize(stmt)  # only tokens graphd knows


def test_go_refuses_bad_input() -> None:
    with pytest.raises(ValueError, match="direction"):
        ngql.go_neighbours([1], ["a"], "sideways")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        ngql.go_pairs([1], ["a"], "both", with_type=False)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="at least one vertex"):
        ngql.go_neighbours([], ["a"], "out")
    with pytest.raises(ValueError, match="at least one edge"):
        ngql.go_neighbours([1], [], "out")
    with pytest.raises(ValueError):
        ngql.go_neighbours([1], ["a`; DROP SPACE x; `"], "out")
    with pytest.raises(TypeError):
        ngql.go_neighbours(["1 OR 1"], ["a"], "out")


def test_layout_round_trips_through_its_insert_statement() -> None:
    layout = ngql.SpaceLayout(
        3,
        ('"; DROP SPACE x; "', "cites"),
        ("x_1", "cites"),
        (ngql.TagLayout("gene/protein", "gene_protein_1", (ngql.PropLayout("a\nb`", "a_b_2", "int"),)),),
    )
    stmt = ngql.insert_layout(layout)
    (count, text) = [v for k, v in tokenize(stmt)[-4:] if k in ("number", "string")]
    assert count == 3 and ngql.SpaceLayout.from_json(text) == layout
    assert _vids_of(stmt) == [ngql.META_VID]
    with pytest.raises(ValueError, match="format"):
        ngql.SpaceLayout.from_json('{"format": 99}')


# --- a fake graphd ----------------------------------------------------------------------------------------------

E_SEMANTIC_ERROR = -1009
E_SYNTAX_ERROR = -1004


def to_value(x: Any) -> Value:
    if x is None:
        return Value(nVal=NullType.__NULL__)
    if isinstance(x, bool):
        return Value(bVal=x)
    if isinstance(x, int):
        return Value(iVal=x)
    if isinstance(x, float):
        return Value(fVal=x)
    if isinstance(x, str):
        return Value(sVal=x.encode())
    if isinstance(x, dict):
        return Value(mVal=NMap(kvs={k.encode(): to_value(v) for k, v in x.items()}))
    raise TypeError(type(x))


def result(columns: list[str], rows: list[list[Any]]) -> ResultSet:
    data = DataSet(
        column_names=[c.encode() for c in columns], rows=[Row(values=[to_value(x) for x in r]) for r in rows]
    )
    return ResultSet(ExecutionResponse(error_code=0, latency_in_us=1, data=data), 0)


def failure(code: int, message: str) -> ResultSet:
    return ResultSet(ExecutionResponse(error_code=code, latency_in_us=1, error_msg=message.encode()), 0)


class Refused(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


class Cursor:
    def __init__(self, tokens: list[Token]) -> None:
        self.tokens = tokens
        self.i = 0

    def peek(self) -> Token | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def take(self) -> Token:
        if self.i >= len(self.tokens):
            raise Refused(E_SYNTAX_ERROR, "unexpected end")
        self.i += 1
        return self.tokens[self.i - 1]

    def at(self, kind: str, value: Any = None) -> bool:
        token = self.peek()
        return token is not None and token[0] == kind and (value is None or str(token[1]).upper() == value)

    def expect(self, kind: str, value: Any = None) -> Any:
        if not self.at(kind, value):
            raise Refused(E_SYNTAX_ERROR, f"expected {kind} {value}, got {self.peek()}")
        return self.take()[1]

    def words(self, *words: str) -> None:
        for w in words:
            self.expect("word", w)

    def ident(self) -> str:
        return str(self.expect("ident"))

    def idents(self) -> list[str]:
        names = [self.ident()]
        while self.at("punct", ","):
            self.take()
            names.append(self.ident())
        return names

    def vids(self) -> list[int]:
        vids = [int(self.expect("number"))]
        while self.at("punct", ","):
            self.take()
            vids.append(int(self.expect("number")))
        return vids

    def literal(self) -> Any:
        kind, value = self.take()
        if kind == "punct" and value == "-":
            return -self.expect("number")
        if kind in ("number", "string"):
            return value
        if kind == "word" and value.upper() in ("TRUE", "FALSE"):
            return value.upper() == "TRUE"
        if kind == "word" and value.upper() == "NULL":
            return None
        raise Refused(E_SYNTAX_ERROR, f"not a literal: {value!r}")

    def items(self) -> list[tuple[str, str | None, str]]:
        """YIELD items: func(arg)[.`prop`] AS alias."""
        items = []
        while True:
            func = str(self.expect("word")).lower()
            self.expect("punct", "(")
            self.take()
            self.expect("punct", ")")
            prop = None
            if self.at("punct", "."):
                self.take()
                prop = self.ident()
            self.words("AS")
            items.append((func, prop, str(self.expect("word"))))
            if not self.at("punct", ","):
                return items
            self.take()

    def end(self) -> None:
        if self.peek() is not None:
            raise Refused(E_SYNTAX_ERROR, f"trailing {self.peek()}")


KINDS = {"int64": int, "string": str, "double": float, "bool": bool}


@dataclass
class FakeSpace:
    vid_type: str = "INT64"
    visible_at: int = 0
    tags: dict[str, tuple[dict[str, str], int, int]] = field(default_factory=dict)  # props, meta at, cache at
    edges: dict[str, tuple[int, int]] = field(default_factory=dict)
    indexes: dict[str, int] = field(default_factory=dict)
    vertices: dict[tuple[int, str], dict[str, Any]] = field(default_factory=dict)
    edge_rows: dict[tuple[int, str, int, int], None] = field(default_factory=dict)


class FakeGraphd:
    def __init__(self, *, meta_lag: int = 0, cache_lag: int = 0, octal: bool = True, seed: int = 0) -> None:
        self.spaces: dict[str, FakeSpace] = {}
        self.meta_lag, self.cache_lag, self.octal = meta_lag, cache_lag, octal
        self.tick = 0
        self.log: list[str] = []
        self.faults: deque[Any] = deque()
        self.rng = np.random.default_rng(seed)
        self.connects = 0
        self.closes = 0

    # -- connections
    def connector(self, space: str | None = None) -> Callable[[], FakeConnection]:
        """A SessionPool-like factory when `space` is given (the space must be usable), else a plain session."""

        def connect() -> FakeConnection:
            self.connects += 1
            if self.faults and isinstance(self.faults[0], tuple) and self.faults[0][0] == "connect":
                raise self.faults.popleft()[1]
            if space is not None and not self._usable(space):
                raise RuntimeError(f"Failed to get session, cannot set the session space to {space}")
            return FakeConnection(self, space)

        return connect

    def _usable(self, space: str) -> bool:
        return space in self.spaces and self.tick >= self.spaces[space].visible_at

    # -- execution
    def execute(self, stmt: str, conn: FakeConnection) -> ResultSet:
        self.log.append(stmt)
        self.tick += 1
        if self.faults:
            fault = self.faults.popleft()
            if isinstance(fault, BaseException):
                raise fault
            if isinstance(fault, int):
                return failure(fault, f"injected error {fault}")
            if callable(fault):
                return fault(stmt)
        try:
            tokens = tokenize(stmt, octal=self.octal)
        except LexError as exc:
            return failure(E_SYNTAX_ERROR, f"SyntaxError: {exc}")
        parts: list[list[Token]] = [[]]
        for token in tokens:
            if token == ("punct", ";"):
                parts.append([])
            else:
                parts[-1].append(token)
        out = failure(E_SYNTAX_ERROR, "empty")
        for part in parts:
            try:
                out = self._one(Cursor(part), conn)
            except Refused as exc:
                return failure(exc.code, str(exc))
        return out

    def _space(self, conn: FakeConnection) -> FakeSpace:
        if conn.space is None or not self._usable(conn.space):
            raise Refused(E_SEMANTIC_ERROR, "SemanticError: Space was not chosen.")
        return self.spaces[conn.space]

    def _tag(self, space: FakeSpace, label: str, *, cached: bool = True) -> dict[str, str]:
        if label not in space.tags or self.tick < space.tags[label][2 if cached else 1]:
            raise Refused(E_SEMANTIC_ERROR, f"SemanticError: No schema found for `{label}'")
        return space.tags[label][0]

    def _edge(self, space: FakeSpace, label: str, *, cached: bool = True) -> None:
        if label not in space.edges or self.tick < space.edges[label][1 if cached else 0]:
            raise Refused(E_SEMANTIC_ERROR, f"SemanticError: `{label}': Unknown edge type")

    def _one(self, cur: Cursor, conn: FakeConnection) -> ResultSet:
        if cur.at("word", "YIELD"):
            cur.take()
            value = cur.literal()
            cur.words("AS")
            alias = cur.expect("word")
            cur.end()
            return result([alias], [[value]])
        if cur.at("word", "USE"):
            cur.take()
            name = cur.ident()
            cur.end()
            if not self._usable(name):
                raise Refused(E_EXECUTION_ERROR, f"SpaceNotFound: SpaceName `{name}`")
            conn.space = name
            return result([], [])
        if cur.at("word", "DROP"):
            cur.words("DROP", "SPACE", "IF", "EXISTS")
            self.spaces.pop(cur.ident(), None)
            return result([], [])
        if cur.at("word", "CREATE"):
            return self._create(cur, conn)
        if cur.at("word", "DESCRIBE"):
            return self._describe(cur, conn)
        if cur.at("word", "REBUILD"):
            cur.words("REBUILD", "TAG", "INDEX")
            space = self._space(conn)
            for name in cur.idents():
                if name not in space.indexes:
                    raise Refused(E_SEMANTIC_ERROR, "index not found")
            return result(["New Job Id"], [[42]])
        if cur.at("word", "INSERT"):
            return self._insert(cur, self._space(conn))
        if cur.at("word", "GO"):
            return self._go(cur, self._space(conn))
        if cur.at("word", "FETCH"):
            return self._fetch(cur, self._space(conn))
        raise Refused(E_SYNTAX_ERROR, f"unsupported statement {cur.peek()}")

    def _create(self, cur: Cursor, conn: FakeConnection) -> ResultSet:
        cur.take()
        kind = str(cur.take()[1]).upper()
        if kind == "SPACE":
            cur.words("IF", "NOT", "EXISTS")
            name = cur.ident()
            cur.expect("punct", "(")
            options = {}
            while not cur.at("punct", ")"):
                key = str(cur.expect("word")).lower()
                cur.expect("punct", "=")
                options[key] = cur.take()[1]
                if cur.at("punct", ","):
                    cur.take()
            cur.take()
            cur.end()
            if name not in self.spaces:
                self.spaces[name] = FakeSpace(str(options["vid_type"]), self.tick + self.cache_lag)
            return result([], [])
        space = self._space(conn)
        if kind == "TAG" and cur.at("word", "INDEX"):
            cur.words("INDEX", "IF", "NOT", "EXISTS")
            name = cur.ident()
            cur.words("ON")
            self._tag(space, cur.ident())
            space.indexes.setdefault(name, self.tick + self.meta_lag)
            return result([], [])
        cur.words("IF", "NOT", "EXISTS")
        name = cur.ident()
        cur.expect("punct", "(")
        props: dict[str, str] = {}
        while not cur.at("punct", ")"):
            prop = cur.ident()
            props[prop] = str(cur.expect("word")).lower()
            cur.words("NULL")
            if cur.at("punct", ","):
                cur.take()
        cur.take()
        cur.end()
        if name in space.tags or name in space.edges:
            return result([], [])  # IF NOT EXISTS
        if kind == "TAG":
            space.tags[name] = (props, self.tick + self.meta_lag, self.tick + self.cache_lag)
        else:
            assert not props
            space.edges[name] = (self.tick + self.meta_lag, self.tick + self.cache_lag)
        return result([], [])

    def _describe(self, cur: Cursor, conn: FakeConnection) -> ResultSet:
        cur.take()
        kind = str(cur.take()[1]).upper()
        if kind == "SPACE":
            name = cur.ident()
            if name not in self.spaces:
                raise Refused(E_EXECUTION_ERROR, "SpaceNotFound")
            return result(["ID", "Name", "Vid Type"], [[1, name, self.spaces[name].vid_type]])
        space = self._space(conn)
        if kind == "TAG" and cur.at("word", "INDEX"):
            cur.take()
            name = cur.ident()
            if self.tick < space.indexes.get(name, 1 << 60):
                raise Refused(E_EXECUTION_ERROR, "Index not found")
            return result(["Field", "Type"], [["node_id", "int64"]])
        name = cur.ident()
        if kind == "TAG":
            props = self._tag(space, name, cached=False)
            return result(["Field", "Type"], [[p, t] for p, t in props.items()])
        self._edge(space, name, cached=False)
        return result(["Field", "Type"], [])

    def _insert(self, cur: Cursor, space: FakeSpace) -> ResultSet:
        cur.take()
        if cur.at("word", "VERTEX"):
            cur.take()
            tag = cur.ident()
            declared = self._tag(space, tag)
            cur.expect("punct", "(")
            props = cur.idents()
            cur.expect("punct", ")")
            cur.words("VALUES")
            while True:
                vid = int(cur.expect("number"))
                cur.expect("punct", ":")
                cur.expect("punct", "(")
                values = [cur.literal()]
                while cur.at("punct", ","):
                    cur.take()
                    values.append(cur.literal())
                cur.expect("punct", ")")
                for prop, value in zip(props, values, strict=True):
                    kind = KINDS[declared[prop]]
                    if value is not None and type(value) is not kind:
                        raise Refused(E_SEMANTIC_ERROR, f"wrong type for {prop}: {value!r}")
                space.vertices[(vid, tag)] = dict(zip(props, values, strict=True))
                if not cur.at("punct", ","):
                    break
                cur.take()
            cur.end()
            return result([], [])
        cur.words("EDGE")
        label = cur.ident()
        self._edge(space, label)
        cur.expect("punct", "(")
        cur.expect("punct", ")")
        cur.words("VALUES")
        while True:
            src = int(cur.expect("number"))
            cur.expect("punct", "->")
            dst = int(cur.expect("number"))
            cur.expect("punct", "@")
            rank = int(cur.expect("number"))
            cur.expect("punct", ":")
            cur.expect("punct", "(")
            cur.expect("punct", ")")
            space.edge_rows[(src, label, rank, dst)] = None  # same key: overwritten, as in NebulaGraph
            if not cur.at("punct", ","):
                break
            cur.take()
        cur.end()
        return result([], [])

    def _go(self, cur: Cursor, space: FakeSpace) -> ResultSet:
        cur.words("GO", "FROM")
        vids = cur.vids()
        cur.words("OVER")
        labels = cur.idents()
        for label in labels:
            self._edge(space, label)
        mode = "out"
        if cur.at("word", "REVERSELY") or cur.at("word", "BIDIRECT"):
            mode = str(cur.take()[1]).lower()
        cur.words("YIELD")
        distinct = cur.at("word", "DISTINCT")
        if distinct:
            cur.take()
        items = cur.items()
        group = cur.at("punct", "|")
        if group:
            tail = " ".join(str(t[1]) for t in cur.tokens[cur.i :])
            assert tail == "| GROUP BY $- . s YIELD $- . s AS s , count ( * ) AS c", tail
        else:
            cur.end()
        rows: list[tuple[int, int, str]] = []
        for vid in vids:
            for src, label, _rank, dst in space.edge_rows:
                if label not in labels:
                    continue
                if mode in ("out", "bidirect") and src == vid:
                    rows.append((src, dst, label))
                if mode in ("reversely", "bidirect") and dst == vid:
                    rows.append((src, dst, label))  # the stored endpoints, whatever the direction
        funcs = {"src": lambda r: r[0], "dst": lambda r: r[1], "type": lambda r: r[2]}
        table = [[funcs[func](r) for func, _, _ in items] for r in rows]
        if distinct:
            table = [list(t) for t in dict.fromkeys(tuple(r) for r in table)]
        if group:
            counts: dict[int, int] = {}
            for (s,) in table:
                counts[s] = counts.get(s, 0) + 1
            return result(["s", "c"], [[s, c] for s, c in counts.items()])
        order = self.rng.permutation(len(table))
        return result([alias for _, _, alias in items], [table[i] for i in order])

    def _fetch(self, cur: Cursor, space: FakeSpace) -> ResultSet:
        cur.words("FETCH", "PROP", "ON")
        label = cur.ident()
        vids = cur.vids()
        if cur.at("punct", "->"):  # an edge probe
            cur.take()
            cur.vids()
            self._edge(space, label)
            cur.words("YIELD")
            cur.items()
            return result(["s"], [])
        self._tag(space, label)
        cur.words("YIELD")
        items = cur.items()
        cur.end()
        rows = []
        for vid in vids:
            props = space.vertices.get((vid, label))
            if props is None:
                continue
            row: list[Any] = []
            for func, prop, _ in items:
                if func == "id":
                    row.append(vid)
                elif prop is None:
                    row.append(props)
                else:
                    row.append(props[prop])
            rows.append(row)
        return result([alias for _, _, alias in items], rows)


E_EXECUTION_ERROR = -1005


class FakeConnection:
    def __init__(self, server: FakeGraphd, space: str | None) -> None:
        self.server = server
        self.space = space

    def execute(self, stmt: str) -> ResultSet:
        return self.server.execute(stmt, self)

    def close(self) -> None:
        self.server.closes += 1


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def loaded(small: SmallGraph, **server_options: Any) -> tuple[FakeGraphd, dict[str, Any], FakeClock]:
    server = FakeGraphd(**server_options)
    clock = FakeClock()
    report = load_graph_into_nebula(
        small.nodes,
        small.graph,
        "graphd:9669",
        "kb",
        batch_size=4,
        connect=server.connector(),
        sleep=clock.sleep,
        clock=clock,
    )
    return server, report, clock


def adapter(server: FakeGraphd, **options: Any) -> NebulaGraph:
    options = {"chunk_size": 3, "sleep": lambda s: None, **options}
    return NebulaGraph("graphd:9669", "kb", connect=server.connector("kb"), **options)


@pytest.fixture(scope="module")
def small() -> SmallGraph:
    return small_graph()


# --- the adapter over the fake ----------------------------------------------------------------------------------


@pytest.mark.parametrize("direction", ["out", "in", "both"])
@pytest.mark.parametrize("edge", [None, "written_by", "cites", "related to", "mentions"])
def test_adapter_matches_the_oracle_over_a_fake_load(small: SmallGraph, edge: str | None, direction: str) -> None:
    server, _, _ = loaded(small, meta_lag=2, cache_lag=6)
    graph = adapter(server)
    for batch in BATCHES:
        nodes = np.asarray(batch)
        sources, targets = oracle_pairs(small, batch, edge, direction)
        got = graph.neighbour_pairs(nodes, edge, direction)  # type: ignore[arg-type]
        assert (got[0].tolist(), got[1].tolist()) == (sources, targets)
        assert graph.neighbours(nodes, edge, direction).tolist() == sorted(set(targets))  # type: ignore[arg-type]
        degree = graph.degree(nodes, edge, direction)  # type: ignore[arg-type]
        assert degree.tolist() == [sources.count(v) // batch.count(v) for v in batch]
        np.testing.assert_array_equal(degree, small.graph.degree(nodes, edge, direction))  # type: ignore[arg-type]


def test_adapter_layout_and_node_properties(small: SmallGraph) -> None:
    server, _, _ = loaded(small)
    graph = adapter(server)
    assert graph.num_nodes == len(NODES) and graph.edge_names == small.edge_names
    records = graph.fetch_nodes(np.arange(len(NODES)))
    for position, (type_name, name, attrs) in enumerate(NODES):
        record = records[position]
        assert (record.type_name, record.name, record.node_id) == (type_name, name, 1000 + 7 * position)
        for key, value in attrs.items():
            assert record.attrs[key] == stored_attr(key, value)
    assert graph.fetch_nodes(np.zeros(0, np.int64)) == {}


def test_adapter_chunks_and_dedupes_vids(small: SmallGraph) -> None:
    server, _, _ = loaded(small)
    graph = adapter(server, chunk_size=2)
    graph.layout  # noqa: B018  (read the layout first, so the log holds only the GO statements)
    server.log.clear()
    nodes = np.asarray([4, 0, 2, 2, 1, 5, 0])
    assert (
        graph.neighbours(nodes, "written_by", "both").tolist()
        == small.graph.neighbours(nodes, "written_by", "both").tolist()
    )
    assert len(server.log) == 3  # 5 distinct positions, 2 per statement
    sent = [Cursor(tokenize(s)) for s in server.log]
    vid_lists = []
    for cur in sent:
        cur.words("GO", "FROM")
        vid_lists.append(cur.vids())
    assert all(len(v) <= 2 for v in vid_lists)
    assert sorted(v for vids in vid_lists for v in vids) == [0, 1, 2, 4, 5]


def test_adapter_does_no_io_until_used() -> None:
    server = FakeGraphd()
    graph = NebulaGraph("graphd", "kb", connect=server.connector("kb"))
    assert server.connects == 0 and graph.settings.addresses == (("graphd", 9669),)


def test_adapter_validates_input(small: SmallGraph) -> None:
    server, _, _ = loaded(small)
    graph = adapter(server)
    with pytest.raises(IndexError):
        graph.neighbours(np.asarray([len(NODES)]))
    with pytest.raises(IndexError):
        graph.degree(np.asarray([-1]))
    with pytest.raises(ValueError, match="1-d"):
        graph.neighbours(np.asarray([[0, 1]]))
    with pytest.raises(ValueError):
        NebulaGraph("graphd", "no such space!")
    with pytest.raises(ValueError):
        NebulaGraph("graphd:http", "kb")


def test_space_without_layout_is_an_index_store_error() -> None:
    server = FakeGraphd()
    conn = server.connector()()
    conn.execute(ngql.create_space("kb"))
    conn.execute(ngql.in_space("kb", ngql.create_meta_tag()))
    graph = adapter(server)
    with pytest.raises(IndexStoreError, match="holds no skbqa graph"):
        graph.num_nodes  # noqa: B018


# --- retries and errors -----------------------------------------------------------------------------------------


def _ready_adapter(small: SmallGraph) -> tuple[FakeGraphd, NebulaGraph, list[float]]:
    server, _, _ = loaded(small)
    sleeps: list[float] = []
    graph = adapter(server, sleep=sleeps.append, retries=3, backoff_s=0.2)
    graph.layout  # noqa: B018
    server.connects = 0
    return server, graph, sleeps


def test_retry_then_success_reconnects_after_transport_errors(small: SmallGraph) -> None:
    server, graph, sleeps = _ready_adapter(small)
    server.faults.extend(
        [IOErrorException(IOErrorException.E_CONNECT_BROKEN, "broken pipe"), ConnectionResetError("reset")]
    )
    assert graph.neighbours(np.asarray([2]), "cites").tolist() == [0, 1]
    assert sleeps == [0.2, 0.4]
    assert server.connects == 2 and server.closes >= 2  # each transport error dropped the connection


def test_retryable_error_codes_are_retried_without_reconnecting(small: SmallGraph) -> None:
    server, graph, sleeps = _ready_adapter(small)
    server.faults.extend(
        [nebula_session.E_RPC_FAILURE, nebula_session.E_PARTIAL_SUCCEEDED, nebula_session.E_LEADER_CHANGED]
    )
    assert graph.degree(np.asarray([2]), "cites").tolist() == [2]
    assert sleeps == [0.2, 0.4, 0.8] and server.connects == 0


def test_retries_exhausted_is_backend_unavailable(small: SmallGraph) -> None:
    server, graph, sleeps = _ready_adapter(small)
    server.faults.extend([IOErrorException(IOErrorException.E_TIMEOUT, "timed\nout")] * 4)
    with pytest.raises(BackendUnavailableError) as caught:
        graph.neighbours(np.asarray([2]), "cites")
    message = str(caught.value)
    assert "\n" not in message
    assert message == "NebulaGraph space 'kb' at graphd:9669: GO failed: timed out; gave up after 4 attempts"
    assert len(sleeps) == 3


def test_non_retryable_errors_fail_at_once(small: SmallGraph) -> None:
    server, graph, sleeps = _ready_adapter(small)
    server.faults.append(E_SYNTAX_ERROR)
    with pytest.raises(BackendUnavailableError, match=r"GO failed: injected error -1004 \(error -1004\)$"):
        graph.neighbour_pairs(np.asarray([2]), "cites")
    assert sleeps == []


def test_programming_errors_are_not_disguised(small: SmallGraph) -> None:
    server, graph, _ = _ready_adapter(small)
    server.faults.append(TypeError("a bug"))
    with pytest.raises(TypeError, match="a bug"):
        graph.neighbours(np.asarray([2]), "cites")


def test_unreachable_server() -> None:
    sleeps: list[float] = []

    def refuse() -> Any:
        raise RuntimeError("The services status exception: {('10.0.0.1', 9669): 'BAD'}")

    graph = NebulaGraph("10.0.0.1", "kb", connect=refuse, sleep=sleeps.append, retries=2, backoff_s=1.0)
    with pytest.raises(
        BackendUnavailableError, match=r"not reachable \(The services status exception.*3 attempts"
    ):
        graph.edge_names  # noqa: B018
    assert sleeps == [1.0, 2.0]


def test_missing_client_package_is_reported_without_retrying(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "nebula3.gclient.net.SessionPool", None)  # import fails
    sleeps: list[float] = []
    graph = NebulaGraph("graphd", "kb", sleep=sleeps.append)
    with pytest.raises(BackendUnavailableError, match=r"pip install skbqa\[nebula\]"):
        graph.num_nodes  # noqa: B018
    assert sleeps == []


def _reply_with(columns: list[str], rows: list[list[Any]]) -> Callable[[str], ResultSet]:
    return lambda stmt: result(columns, rows)


def test_unexpected_replies_are_backend_errors(small: SmallGraph) -> None:
    server, graph, _ = _ready_adapter(small)
    server.faults.append(_reply_with(["s", "n"], [[7, 1]]))  # a row from a vertex that was not asked for
    with pytest.raises(BackendUnavailableError, match="not asked for"):
        graph.neighbour_pairs(np.asarray([2]), "cites")
    server.faults.append(_reply_with(["n"], [["zero"]]))  # wrong value type
    with pytest.raises(BackendUnavailableError, match="unexpected reply"):
        graph.neighbours(np.asarray([2]), "cites")
    server.faults.append(_reply_with(["x"], [[1]]))  # missing column
    with pytest.raises(BackendUnavailableError, match="unexpected reply"):
        graph.degree(np.asarray([2]), "cites")
    server.faults.append(_reply_with(["s", "n", "t"], [[2, 0, "no_such_edge"]]))
    with pytest.raises(BackendUnavailableError, match="unexpected reply"):
        graph.neighbour_pairs(np.asarray([2]), None)


def test_error_codes_match_the_client() -> None:
    from nebula3.common.ttypes import ErrorCode

    for name in ("E_DISCONNECTED", "E_FAIL_TO_CONNECT", "E_RPC_FAILURE", "E_LEADER_CHANGED", "E_PARTIAL_RESULT"):
        assert getattr(nebula_session, name) == getattr(ErrorCode, name)
    for name in ("E_SESSION_INVALID", "E_SESSION_TIMEOUT", "E_EXECUTION_ERROR", "E_TOO_MANY_CONNECTIONS"):
        assert getattr(nebula_session, name) == getattr(ErrorCode, name)
    assert nebula_session.E_PARTIAL_SUCCEEDED == ErrorCode.E_PARTIAL_SUCCEEDED
    assert E_SYNTAX_ERROR == ErrorCode.E_SYNTAX_ERROR and E_SEMANTIC_ERROR == ErrorCode.E_SEMANTIC_ERROR
    assert ErrorCode.E_SYNTAX_ERROR not in nebula_session.RETRYABLE_CODES


def test_importing_the_adapter_does_not_import_nebula3() -> None:
    code = (
        "import sys, skbqa.stores.graph.nebula, skbqa.stores.graph.nebula_loader, skbqa.stores.graph.ngql; "
        "g = skbqa.stores.graph.nebula.NebulaGraph('h:1', 'kb'); "
        "assert not any(m == 'nebula3' or m.startswith('nebula3.') for m in sys.modules), 'nebula3 imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# --- settings ---------------------------------------------------------------------------------------------------


def test_parse_addresses() -> None:
    assert parse_addresses("a:1, b") == (("a", 1), ("b", 9669))
    assert parse_addresses(["[::1]:9670", "10.0.0.2:9669"]) == (("::1", 9670), ("10.0.0.2", 9669))
    for bad in ("", "a:0", "a:x", ":9669"):
        with pytest.raises(ValueError):
            parse_addresses(bad)


def test_parse_nebula_url() -> None:
    s = parse_nebula_url("nebula://graphd:9669/kb")
    assert (s.addresses, s.space, s.user, s.password) == ((("graphd", 9669),), "kb", "root", "nebula")
    s = parse_nebula_url("nebula://bob:p%40ss@h1:1,h2:2/kb2")
    assert (s.addresses, s.space, s.user, s.password) == ((("h1", 1), ("h2", 2)), "kb2", "bob", "p@ss")
    assert "p@ss" not in s.where
    for bad in ("http://h/kb", "nebula://h:1", "nebula://h:1/a/b", "nebula://h:1/bad-space"):
        with pytest.raises(ValueError):
            parse_nebula_url(bad)
    graph = NebulaGraph.from_url("nebula://bob:pw@h:7/kb", chunk_size=9)
    assert (graph.settings.user, graph.settings.password, graph.settings.chunk_size) == ("bob", "pw", 9)


def test_nebula_credentials_come_from_the_environment_when_the_url_has_none(monkeypatch) -> None:
    monkeypatch.setenv("SKBQA_NEBULA_USER", "svc")
    monkeypatch.setenv("SKBQA_NEBULA_PASSWORD", "from-a-secret")
    s = parse_nebula_url("nebula://graphd:9669/kb")
    assert (s.user, s.password) == ("svc", "from-a-secret")
    assert "from-a-secret" not in s.where
    s = parse_nebula_url("nebula://bob:pw@graphd:9669/kb")  # the URL's own userinfo still wins
    assert (s.user, s.password) == ("bob", "pw")


# --- the loader -------------------------------------------------------------------------------------------------


def test_plan_layout_names_and_types(small: SmallGraph) -> None:
    layout = plan_layout(small.nodes, small.graph)
    tags = {t.type_name: t for t in layout.tags}
    assert tags["paper"].label == "paper" and ngql_quoting.is_label(tags["gene/protein"].label)
    kinds = {p.key: p.kind for p in tags["paper"].attrs}
    assert kinds == {"year": "int", "score": "double", "open": "bool", "tags": "string", "note": "string"}
    assert {p.key: p.label for p in tags["author"].attrs}["born-year"].startswith("born_year_")
    assert layout.edge_names == tuple(small.edge_names)
    assert layout.edge_labels[0] == "written_by" and layout.edge_labels[2].startswith("related_to_")
    labels = [t.label for t in layout.tags] + list(layout.edge_labels)
    assert len(set(labels)) == len(labels) and ngql.META_TAG not in labels


def test_plan_layout_keeps_reserved_and_clashing_names_apart() -> None:
    from skbqa.skb.schema import Schema
    from skbqa.stores.graph.csr import CsrGraph
    from skbqa.stores.nodes import NodeTable

    schema = Schema.from_dict(
        {
            "name": "clash",
            "description": "",
            "node_types": [{"name": ngql.META_TAG}, {"name": "cites"}],
            "edge_types": [{"name": "cites", "source": "cites", "target": ngql.META_TAG}],
        }
    )
    nodes = NodeTable(schema, np.arange(2), np.asarray([0, 1], np.int16), ["a", "b"], ["", ""], [{"name": 1}, {}])
    graph = CsrGraph.build(2, schema.edge_names, np.asarray([1]), np.asarray([0]), np.zeros(1, np.int16))
    layout = plan_layout(nodes, graph)
    assert layout.tags[0].label != ngql.META_TAG
    assert layout.tags[1].label == "cites" and layout.edge_labels[0] != "cites"
    assert layout.tags[0].attrs[0].label != ngql.NAME_PROP  # an attribute called "name" cannot shadow the name


@pytest.mark.parametrize(
    ("values", "kind"),
    [
        ([1, 2, None], "int"),
        ([1, 2.5], "double"),
        ([True, False], "bool"),
        ([True, 1], "string"),
        (["a", 1], "string"),
        ([2**64], "string"),
        ([float("nan"), 1.5], "double"),
        ([None], "string"),
        ([[1, 2]], "string"),
    ],
)
def test_infer_kind(values: list[Any], kind: str) -> None:
    assert infer_kind(values) == kind


def test_convert() -> None:
    assert convert(3, "double") == 3.0 and isinstance(convert(3, "double"), float)
    assert convert(True, "string") == "true" and convert(2**64, "string") == str(2**64)
    assert convert([1, "a"], "string") == '[1, "a"]'
    assert convert(float("inf"), "double") is None and convert(None, "int") is None


def test_edge_rows_ranks_parallel_edges(small: SmallGraph) -> None:
    src, dst, rank = edge_rows(small.graph, "written_by")
    assert sorted(zip(src.tolist(), dst.tolist(), rank.tolist(), strict=True)) == [
        (0, 4, 0),
        (0, 4, 1),
        (1, 5, 0),
        (2, 4, 0),
        (2, 5, 0),
    ]


def test_load_report_progress_and_order(small: SmallGraph) -> None:
    server = FakeGraphd()
    clock = FakeClock()
    seen: list[tuple[str, int, int]] = []
    report = load_graph_into_nebula(
        small.nodes,
        small.graph,
        ["graphd:9669"],
        "kb",
        batch_size=4,
        connect=server.connector(),
        sleep=clock.sleep,
        clock=clock,
        progress=lambda stage, done, total: seen.append((stage, done, total)),
    )
    assert report["nodes"] == len(NODES) and report["edges"] == small.graph.num_edges == 15
    assert report["edges_per_type"] == {
        "written_by": 5,
        "cites": 4,
        "related to": 4,
        "interacts": 1,
        "mentions": 1,
    }
    assert set(report["seconds"]) == {"schema", "vertices", "edges", "total"}
    assert report["statements"] == len(server.log)
    vertex_progress = [done for stage, done, _ in seen if stage == "vertices"]
    edge_progress = [done for stage, done, _ in seen if stage == "edges"]
    assert vertex_progress == sorted(vertex_progress) and vertex_progress[-1] == len(NODES)
    assert edge_progress[-1] == 15 and all(total == 15 for stage, _, total in seen if stage == "edges")
    space = server.spaces["kb"]
    assert len(space.edge_rows) == 15  # the parallel edge kept apart by its rank
    assert len([k for k in space.vertices if k[1] != ngql.META_TAG]) == len(NODES)
    inserts = [s for s in server.log if "INSERT" in s]
    assert ngql.META_TAG in inserts[-1] and all(ngql.META_TAG not in s for s in inserts[:-1])  # layout last
    assert all(s.startswith("USE `kb`; ") for s in inserts)


def test_load_waits_for_schema_propagation(small: SmallGraph) -> None:
    server, _, clock = loaded(small, meta_lag=25, cache_lag=60)
    log = server.log
    first_insert = next(i for i, s in enumerate(log) if "INSERT" in s)
    describes = [s for s in log[:first_insert] if "DESCRIBE TAG `paper`" in s]
    assert len(describes) >= 2  # polled until metad knew it
    assert any("FETCH PROP ON `paper`" in s for s in log[:first_insert])  # then until graphd's cache knew it
    assert clock.sleeps and set(clock.sleeps) == {POLL_INTERVAL_S}


def test_load_gives_up_when_the_schema_never_arrives(small: SmallGraph) -> None:
    with pytest.raises(BackendUnavailableError, match=r"tag 'paper' not ready after 60 s"):
        loaded(small, meta_lag=10**9)


def test_load_refuses_a_graphd_that_reads_escapes_differently(small: SmallGraph) -> None:
    with pytest.raises(BackendUnavailableError, match="disable_octal_escape_char=false"):
        loaded(small, octal=False)


def test_load_refuses_a_space_with_string_vids(small: SmallGraph) -> None:
    server = FakeGraphd()
    server.spaces["kb"] = FakeSpace(vid_type="FIXED_STRING(32)")
    with pytest.raises(IndexStoreError, match="vid_type FIXED_STRING"):
        load_graph_into_nebula(
            small.nodes, small.graph, "g", "kb", connect=server.connector(), sleep=lambda s: None
        )


def test_load_with_recreate_and_indexes(small: SmallGraph) -> None:
    server = FakeGraphd()
    server.spaces["kb"] = FakeSpace(vid_type="FIXED_STRING(32)")
    report = load_graph_into_nebula(
        small.nodes,
        small.graph,
        "g",
        "kb",
        recreate=True,
        indexes=True,
        connect=server.connector(),
        sleep=lambda s: None,
    )
    assert server.log[1] == "DROP SPACE IF EXISTS `kb`"
    assert len(report["indexes"]) == 4 and any("REBUILD TAG INDEX" in s for s in server.log)
    assert server.spaces["kb"].vid_type == "INT64"


def test_load_retries_writes_until_every_host_has_the_schema(small: SmallGraph) -> None:
    """Another storaged may lag: an INSERT that fails with a schema error is retried, not fatal."""
    server = FakeGraphd()
    clock = FakeClock()
    refusals = iter([True, True])

    original = server.execute

    def flaky(stmt: str, conn: FakeConnection) -> ResultSet:
        if "INSERT VERTEX `paper`" in stmt and next(refusals, False):
            server.log.append(stmt)
            return failure(E_EXECUTION_ERROR, "Storage Error: Tag not found.")
        return original(stmt, conn)

    server.execute = flaky  # type: ignore[method-assign]
    report = load_graph_into_nebula(
        small.nodes, small.graph, "g", "kb", connect=server.connector(), sleep=clock.sleep, clock=clock
    )
    assert report["nodes"] == len(NODES)
    assert sum(1 for s in server.log if "INSERT VERTEX `paper`" in s) == 3
    assert clock.sleeps[-2:] == [0.5, 1.0]  # the write backoff


def test_load_validates_before_connecting(small: SmallGraph) -> None:
    server = FakeGraphd()
    with pytest.raises(ValueError):
        load_graph_into_nebula(small.nodes, small.graph, "g", "bad space", connect=server.connector())
    with pytest.raises(ValueError):
        load_graph_into_nebula(small.nodes, small.graph, "g", "kb", batch_size=0, connect=server.connector())
    assert server.connects == 0


def test_read_index_graph_refuses_a_non_index(tmp_path: Path) -> None:
    with pytest.raises(IndexStoreError, match="not an skbqa index"):
        read_index_graph(tmp_path)


def test_fake_graphd_agrees_with_the_reference_lexer() -> None:
    """The fake refuses what graphd would refuse, so the tests above cannot pass on malformed text."""
    server = FakeGraphd()
    conn = server.connector()()
    assert not conn.execute('YIELD "\\0017" AS p').is_succeeded()
    assert not conn.execute("YIELD 1 AS p # comment").is_succeeded()
    echoed = conn.execute(ngql.yield_string("a\x00b")).column_values("p")[0].as_string()
    assert echoed == "a\x00b"
