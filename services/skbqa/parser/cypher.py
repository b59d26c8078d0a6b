"""Parse LLM-written Cypher into a `StructuredQuery` (AF-Retriever step 3) — parsing only, nothing is executed.

LLM output is untrusted: `parse_cypher` never raises. It cuts the query out of the answer (markdown fences, a
JSON wrapper, leading prose, trailing prose after RETURN), reads the MATCH / OPTIONAL MATCH / WHERE / WITH /
RETURN / UNION subset of Cypher, recovers from syntax errors clause by clause (a broken WHERE keeps its intact
AND-conjuncts when it has no OR), and records everything it drops or changes in `warnings` (syntax errors as
``syntax error: line L, column C: ...``). `parse_cypher_or_error` returns the first syntax error instead, for
the LLM repair round. Input is capped (`MAX_INPUT_CHARS`), and so is nesting (`MAX_DEPTH`), so no input can
exhaust the stack or blow up the expansion of OR / alternation (`MAX_ALTERNATIVES`).

Tolerated beyond Cypher (each with a warning): unquoted labels with '/' or '-' (``gene/protein``, as in the
AF-Retriever prompt), a bare variable as a node (``p-[:x]->(f)``), patterns on a new line without MATCH or
',', property maps without braces, typographic quotes and dashes, ``!=``, ``->`` for ``-->``, BETWEEN.

Mapping to the model:
- A name-like key makes a symbol a constant: ``{name: 'x'}`` / ``v.name = 'x'`` / ``v.name IN ['a', 'b']``
  (several names). Name-like keys: ``name``, ``title`` and, with a schema, the label's ``name_attr`` (every
  ``name_attr`` for an unlabelled symbol); case-insensitive. Text operators on a name key (CONTAINS, STARTS
  WITH, ENDS WITH, ``=~``) stay `AttributeConstraint`s; so does every other property.
- ``toLower(v.k) OP 'x'`` / ``toUpper(...)`` give ``case_insensitive=True``; plain CONTAINS is case-sensitive.
  ``=~`` keeps the pattern verbatim, ``case_insensitive`` only when it starts with an inline ``(?i)`` flag;
  a pattern Python's `re` cannot compile is dropped. ``v CONTAINS 'x'`` on a bare variable becomes a text
  constraint. ``date('2015-01-01')`` and ``'2015-01-01'`` both stay the string. NOT, XOR, IS [NOT] NULL,
  parameters, relationship properties and property-to-property comparisons are dropped (relaxing the query).
- OR is never read as AND. The WHERE condition is expanded into a disjunction of conjunctions; with more than
  one, `alternatives` holds one complete query per disjunct (their answers are united) and the top-level query
  keeps only the conditions common to all of them — a relaxation that is safe to use alone. An OR of
  equalities on one property (``v.name = 'a' OR v.name = 'b'``) is folded into IN. An OR whose expansion would
  pass `MAX_ALTERNATIVES` is dropped with a warning. UNION parts become alternatives the same way.
- Edge-type alternation ``-[:a|b]->`` likewise yields one alternative per type (the top-level triplet has
  ``edge=None``); past `MAX_ALTERNATIVES` the edge stays ``None`` (any type) with a warning. In strict mode,
  types that cannot connect the two node types are left out (a single remaining type needs no alternatives).
- Anonymous nodes are named ``_1``, ``_2``, ... (skipping names the query uses). The target is the first
  variable in RETURN (through ``WITH x AS y`` aliases); ORDER BY / SKIP / LIMIT are ignored.
- Variable length: ``*`` → 1..MAX_HOPS (warning), ``*2`` → 2..2, ``*1..2``, ``*..3`` → 1..3, ``*2..`` →
  2..MAX_HOPS (warning); counts above `MAX_HOPS` are capped and 0 is raised to 1, with warnings.
- With a schema, strict mode drops labels (symbol type None) and edge types (triplet dropped) that are not in
  it; lenient mode maps them to the most similar known type (the `similarity` callable, else a built-in
  normalised / difflib match), keeping an edge as ``None`` when nothing is similar. An edge whose endpoint
  types only fit its schema signatures reversed is flipped; one that fits neither way is dropped (strict) or
  kept (lenient), with a warning.
"""

from __future__ import annotations

import difflib
import itertools
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, fields, is_dataclass
from typing import Any, Literal

from skbqa.parser.cypher_lexer import MAX_INPUT_CHARS, CypherSyntaxError, Token, extract_cypher, tokenize
from skbqa.parser.query import AttributeConstraint, Operator, Scalar, StructuredQuery, Symbol, Triplet
from skbqa.skb.schema import Schema

__all__ = [
    "MAX_ALTERNATIVES",
    "MAX_HOPS",
    "MAX_INPUT_CHARS",
    "CypherSyntaxError",
    "closest_type",
    "parse_cypher",
    "parse_cypher_or_error",
]

MAX_HOPS = 3  # cap for unbounded `*` / `*2..` and for larger explicit bounds
MAX_ALTERNATIVES = 16  # cap on the union size from OR, edge-type alternation and UNION
MAX_DEPTH = 40  # nesting / operator-chain limit: deeper input is a syntax error, never a RecursionError
SIMILARITY_THRESHOLD = 0.8  # difflib ratio on normalised names for lenient type mapping

Mode = Literal["strict", "lenient"]
Similarity = Callable[[str, list[str]], str | None]
Value = str | int | float | bool | None


# --- syntax tree --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Lit:
    value: Value


@dataclass(frozen=True)
class Var:
    name: str


@dataclass(frozen=True)
class Prop:
    base: Expr
    key: str


@dataclass(frozen=True)
class Param:
    name: str


@dataclass(frozen=True)
class ListE:
    items: tuple[Expr, ...]


@dataclass(frozen=True)
class MapE:
    items: tuple[tuple[str, Expr], ...]


@dataclass(frozen=True)
class Func:
    name: str
    args: tuple[Expr, ...]


@dataclass(frozen=True)
class Star:
    pass


@dataclass(frozen=True)
class Cmp:
    op: str  # = <> < <= > >= =~ CONTAINS, STARTS WITH, ENDS WITH, IN
    left: Expr
    right: Expr


@dataclass(frozen=True)
class IsNull:
    expr: Expr
    negated: bool


@dataclass(frozen=True)
class Not:
    expr: Expr


@dataclass(frozen=True)
class BoolOp:
    op: str  # AND, OR, XOR
    items: tuple[Expr, ...]


@dataclass(frozen=True)
class LabelTest:
    expr: Expr
    labels: tuple[str, ...]


@dataclass(frozen=True)
class Arith:
    op: str
    left: Expr
    right: Expr


@dataclass(frozen=True)
class NodePat:
    var: str | None
    labels: tuple[str, ...]
    props: tuple[tuple[str, Expr], ...]
    pos: int  # token offset: tells identical anonymous nodes apart


@dataclass(frozen=True)
class RelPat:
    var: str | None
    types: tuple[str, ...]
    direction: Literal["out", "in", "undirected"]
    min_hops: int
    max_hops: int
    pos: int


@dataclass(frozen=True)
class Chain:
    nodes: tuple[NodePat, ...]
    rels: tuple[RelPat, ...]


@dataclass(frozen=True)
class PatternE:
    chain: Chain


Expr = (
    Lit
    | Var
    | Prop
    | Param
    | ListE
    | MapE
    | Func
    | Star
    | Cmp
    | IsNull
    | Not
    | BoolOp
    | LabelTest
    | Arith
    | PatternE
)


@dataclass
class _Part:
    """One single query (a UNION has several)."""

    chains: list[Chain] = field(default_factory=list)
    wheres: list[Expr] = field(default_factory=list)
    returns: list[Expr] | None = None
    return_star: bool = False
    aliases: dict[str, str] = field(default_factory=dict)  # WITH p AS x: x -> p
    value_aliases: set[str] = field(default_factory=set)  # WITH count(a) AS n

    @property
    def empty(self) -> bool:
        return not self.chains and not self.wheres and self.returns is None


# --- parser ---------------------------------------------------------------------------------------------------

_CLAUSES = {"MATCH", "OPTIONAL", "WHERE", "WITH", "RETURN", "UNION"}
_UNSUPPORTED_CLAUSES = {
    "UNWIND",
    "CREATE",
    "MERGE",
    "CALL",
    "DELETE",
    "DETACH",
    "SET",
    "REMOVE",
    "FOREACH",
    "LOAD",
}
_RESERVED = _CLAUSES | _UNSUPPORTED_CLAUSES | {
    "AND", "OR", "XOR", "NOT", "IN", "IS", "CONTAINS", "STARTS", "ENDS", "ORDER", "BY", "SKIP", "LIMIT", "AS",
    "DISTINCT", "CASE", "WHEN", "THEN", "ELSE", "END", "ASC", "DESC",
}  # fmt: skip
_COMPARISONS = {"=", "<>", "<", "<=", ">", ">=", "=~"}


class _Parser:
    def __init__(self, tokens: list[Token], warnings: list[str]) -> None:
        self.toks = tokens
        self.i = 0
        self.end = len(tokens) - 1  # index of EOF; lowered while re-parsing a WHERE conjunct
        self.warnings = warnings
        self.errors: list[CypherSyntaxError] = []
        self.depth = 0
        self.where_ok = False  # a WHERE may follow (the last clause is MATCH or WITH)
        self.where_seen = False  # ... and that clause already has one
        self.in_match = False
        self.inline_wheres: list[Expr] = []
        self.memo: dict[tuple[int, int], tuple[Chain | None, int, list[str]]] = {}

    # token helpers
    def peek(self, k: int = 0) -> Token:
        j = self.i + k
        return self.toks[j] if j < self.end else self.toks[-1]

    def advance(self) -> Token:
        t = self.peek()
        if self.i < self.end:
            self.i += 1
        return t

    def kw(self, word: str, k: int = 0) -> bool:
        t = self.peek(k)
        return t.kind == "IDENT" and isinstance(t.value, str) and t.value.upper() == word

    def op(self, sym: str, k: int = 0) -> bool:
        t = self.peek(k)
        return t.kind == "OP" and t.value == sym

    def error(self, message: str, tok: Token | None = None) -> CypherSyntaxError:
        t = tok or self.peek()
        if t.kind == "ERROR":
            message = t.text
        return CypherSyntaxError(message, t.line, t.col)

    def expected(self, what: str) -> CypherSyntaxError:
        return self.error(f"expected {what} but found {self.peek().describe()}")

    def expect_op(self, sym: str, context: str = "") -> None:
        if not self.op(sym):
            raise self.expected(f"'{sym}'{context}")
        self.advance()

    def warn(self, message: str) -> None:
        if message not in self.warnings:
            self.warnings.append(message)

    def record(self, err: CypherSyntaxError) -> None:
        self.errors.append(err)
        self.warn(f"syntax error: {err}")

    def enter(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise self.error(f"nesting deeper than {MAX_DEPTH} levels")

    def is_clause(self, k: int = 0) -> bool:
        t = self.peek(k)
        if t.kind != "IDENT" or not isinstance(t.value, str):
            return False
        word = t.value.upper()
        if word not in _CLAUSES and word not in _UNSUPPORTED_CLAUSES:
            return False
        j = self.i + k
        prev = self.toks[j - 1] if j > 0 else None
        if prev is not None and prev.kind == "OP" and prev.value in (".", ":"):
            return False
        return not (
            word == "WITH"
            and prev is not None
            and prev.kind == "IDENT"
            and str(prev.value).upper() in ("STARTS", "ENDS")
        )

    def at_boundary(self) -> bool:
        return self.peek().kind == "EOF" or self.op(";") or self.is_clause()

    def skip_to_clause(self, clause_start: int) -> None:
        if self.i <= clause_start:
            self.advance()
        while not self.at_boundary():
            self.advance()

    # statement and clauses
    def parse_statement(self) -> list[_Part]:
        parts = [_Part()]
        returned = False
        while self.peek().kind != "EOF":
            part, start = parts[-1], self.i
            try:
                if self.op(";"):
                    self.advance()
                    if self.peek().kind != "EOF":
                        self.warn("text after ';' was ignored: only the first statement is read")
                    break
                if self.kw("UNION"):
                    self.advance()
                    if self.kw("ALL"):
                        self.advance()
                    parts.append(_Part())
                    self.where_ok, returned = False, False
                    continue
                if returned:
                    if self.peek().newline_before:
                        self.warn("text after the RETURN clause was ignored")
                        break
                    raise self.error(f"unexpected {self.peek().describe()} after the RETURN clause")
                if self.kw("OPTIONAL") and self.kw("MATCH", 1):
                    self.warn("OPTIONAL MATCH read as MATCH")
                    self.advance()
                    self.advance()
                    self.parse_match(part)
                elif self.kw("MATCH"):
                    self.advance()
                    self.parse_match(part)
                elif self.kw("WHERE"):
                    if not self.where_ok:
                        raise self.error("WHERE must follow MATCH or WITH")
                    if self.where_seen:
                        self.warn("a second WHERE was read as AND")
                    self.where_seen = True
                    self.advance()
                    part.wheres.extend(self.parse_where())
                elif self.kw("WITH"):
                    self.advance()
                    self.parse_with(part)
                elif self.kw("RETURN"):
                    self.advance()
                    self.parse_return(part)
                    returned = True
                elif self.is_clause():
                    word = str(self.peek().value).upper()
                    raise self.error(f"unsupported clause {word}: only MATCH, WHERE, WITH and RETURN are read")
                elif part.chains and self.where_ok and self.starts_pattern():
                    self.warn("a pattern without MATCH was read as part of the previous MATCH")
                    self.parse_match(part)
                else:
                    raise self.expected("MATCH or RETURN")
            except CypherSyntaxError as err:
                self.record(err)
                self.skip_to_clause(start)
            finally:
                if self.inline_wheres:
                    part.wheres.extend(self.inline_wheres)
                    self.inline_wheres = []
        for part in parts:
            if part.returns is None:
                eof = self.toks[-1]
                if len(parts) == 1 and part.empty and not self.errors:
                    message = "no Cypher query found (expected MATCH ... RETURN ...)"
                else:
                    message = "the query has no RETURN clause"
                self.record(CypherSyntaxError(message, eof.line, eof.col))
        return parts

    def starts_pattern(self) -> bool:
        if self.op("("):
            return True
        if self.peek().kind == "IDENT" and not self.is_clause():
            return self.op("-", 1) or (self.op("<", 1) and self.op("-", 2))
        return False

    def parse_match(self, part: _Part) -> None:
        self.where_ok, self.where_seen = True, False
        self.in_match = True
        try:
            while True:
                part.chains.append(self.parse_pattern())
                if self.op(","):
                    self.advance()
                    continue
                if self.peek().newline_before and self.starts_pattern():
                    self.warn("patterns on separate lines without ',' were read as one MATCH")
                    continue
                break
        finally:
            self.in_match = False
        if self.kw("WHERE"):
            self.where_seen = True
            self.advance()
            part.wheres.extend(self.parse_where())
        elif not self.at_boundary():
            raise self.expected("',', WHERE or a clause")

    def parse_where(self) -> list[Expr]:
        start = self.i
        try:
            expr = self.parse_expr()
            if not self.at_boundary() and not (self.peek().newline_before and self.starts_pattern()):
                raise self.error(f"unexpected {self.peek().describe()} in the WHERE condition")
            return [expr]
        except CypherSyntaxError as err:
            self.record(err)
            self.i = start
            while not self.at_boundary():
                self.advance()
            return self.recover_conjuncts(start, self.i)

    def recover_conjuncts(self, start: int, stop: int) -> list[Expr]:
        """Re-read a broken WHERE conjunct by conjunct; only safe when it has no OR / XOR / '|'."""
        span = self.toks[start:stop]
        if any((t.kind == "IDENT" and str(t.value).upper() in ("OR", "XOR")) or t.text == "|" for t in span):
            self.warn("the WHERE condition was dropped after a syntax error (it contains OR)")
            return []
        pieces, depth, begin = [], 0, start
        for j in range(start, stop):
            t = self.toks[j]
            if t.kind == "OP" and t.value in ("(", "[", "{"):
                depth += 1
            elif t.kind == "OP" and t.value in (")", "]", "}"):
                depth = max(0, depth - 1)
            elif depth == 0 and t.kind == "IDENT" and str(t.value).upper() == "AND":
                pieces.append((begin, j))
                begin = j + 1
        pieces.append((begin, stop))
        kept: list[Expr] = []
        saved_end = self.end
        for a, b in pieces:
            self.i, self.end, self.depth = a, b, 0
            try:
                expr = self.parse_expr()
                if self.i != b:
                    raise self.error("trailing tokens")
                kept.append(expr)
            except CypherSyntaxError:
                text = " ".join(t.text for t in self.toks[a:b])[:80]
                self.warn(f"unreadable WHERE conjunct dropped: {text}")
        self.end, self.i, self.depth = saved_end, stop, 0
        return kept

    def parse_with(self, part: _Part) -> None:
        items, _ = self.parse_projection()
        for expr, alias in items:
            if alias is None:
                continue
            if isinstance(expr, Var):
                part.aliases[alias] = expr.name
            else:
                part.value_aliases.add(alias)
        self.where_ok, self.where_seen = True, False
        if self.kw("WHERE"):
            self.where_seen = True
            self.advance()
            part.wheres.extend(self.parse_where())

    def parse_return(self, part: _Part) -> None:
        items, star = self.parse_projection()
        self.where_ok = False
        if part.returns is not None:
            self.warn("a second RETURN was ignored")
            return
        part.returns = [expr for expr, _ in items]
        part.return_star = star

    def parse_projection(self) -> tuple[list[tuple[Expr, str | None]], bool]:
        if self.kw("DISTINCT"):
            self.advance()
        items: list[tuple[Expr, str | None]] = []
        star = False
        if self.op("*"):
            self.advance()
            star = True
        if not star or self.op(","):
            if star:
                self.advance()
            while True:
                expr = self.parse_expr()
                alias = None
                if self.kw("AS"):
                    self.advance()
                    alias = self.parse_ident("an alias")
                items.append((expr, alias))
                if not self.op(","):
                    break
                self.advance()
        if self.kw("ORDER") and self.kw("BY", 1):
            self.advance()
            self.advance()
            self.warn("ORDER BY was ignored")
            while True:
                self.parse_expr()
                if any(self.kw(w) for w in ("ASC", "DESC", "ASCENDING", "DESCENDING")):
                    self.advance()
                if not self.op(","):
                    break
                self.advance()
        for word in ("SKIP", "LIMIT"):
            if self.kw(word):
                self.advance()
                self.parse_expr()
        return items, star

    def parse_ident(self, what: str) -> str:
        t = self.peek()
        if t.kind in ("IDENT", "QIDENT") and isinstance(t.value, str):
            self.advance()
            return t.value
        raise self.expected(what)

    # patterns
    def parse_pattern(self) -> Chain:
        if self.peek().kind == "IDENT" and self.op("=", 1):
            self.warn(f"path variable '{self.peek().value}' ignored")
            self.advance()
            self.advance()
        path_function = str(self.peek().value).lower() in ("shortestpath", "allshortestpaths")
        if self.peek().kind == "IDENT" and path_function and self.op("(", 1):
            self.warn(f"{self.peek().value}() read as a plain pattern")
            self.advance()
            self.advance()
            chain = self.parse_chain()
            self.expect_op(")", " closing the path function")
            return chain
        return self.parse_chain()

    def parse_chain(self) -> Chain:
        self.enter()
        try:
            nodes = [self.parse_node()]
            rels: list[RelPat] = []
            while self.op("-") or (self.op("<") and self.op("-", 1)):
                rels.append(self.parse_rel())
                nodes.append(self.parse_node())
            return Chain(tuple(nodes), tuple(rels))
        finally:
            self.depth -= 1

    def parse_node(self) -> NodePat:
        t = self.peek()
        if t.kind == "IDENT" and isinstance(t.value, str) and t.value.upper() not in _RESERVED:
            self.warn(f"node '{t.value}' without parentheses read as ({t.value})")
            self.advance()
            return NodePat(t.value, (), (), self.i - 1)
        if not self.op("("):
            raise self.expected("a node pattern '('")
        pos = self.i
        self.advance()
        var = None
        if self.peek().kind in ("IDENT", "QIDENT"):
            var = str(self.advance().value)
        labels = self.parse_labels() if self.op(":") else ()
        props: tuple[tuple[str, Expr], ...] = ()
        if self.op("{"):
            props = self.parse_map_items()
        elif self.peek().kind == "IDENT" and self.op(":", 1):
            self.warn("node properties without braces read as a property map")
            props = self.parse_map_body(closer=")")
        if self.kw("WHERE"):
            if not self.in_match:
                raise self.error("a WHERE inside a node is only read in MATCH")
            self.advance()
            cond = self.parse_expr()
            self.inline_wheres.append(cond)
        self.expect_op(")", " closing the node")
        return NodePat(var, labels, props, pos)

    def parse_labels(self) -> tuple[str, ...]:
        labels: list[str] = []
        while self.op(":") or (labels and (self.op("|") or self.op("&"))):
            self.advance()
            if self.op(":"):
                self.advance()
            labels.append(self.parse_label())
        return tuple(labels)

    def parse_label(self) -> str:
        t = self.peek()
        if t.kind == "QIDENT" and isinstance(t.value, str):
            self.advance()
            return t.value
        if t.kind != "IDENT":
            raise self.expected("a label or relationship type")
        name = str(self.advance().value)
        # unquoted `gene/protein`, `is_effect/phenotype_of_disease`, `field-of-study` (no spaces)
        while (
            self.peek().kind == "OP"
            and self.peek().value in ("/", "-")
            and not self.peek().space_before
            and self.peek(1).kind in ("IDENT", "NUMBER")
            and not self.peek(1).space_before
        ):
            name += self.advance().text + self.advance().text
        return name

    def parse_map_items(self) -> tuple[tuple[str, Expr], ...]:
        self.expect_op("{")
        return self.parse_map_body(closer="}")

    def parse_map_body(self, closer: str) -> tuple[tuple[str, Expr], ...]:
        items: list[tuple[str, Expr]] = []
        while not self.op(closer):
            t = self.peek()
            if t.kind == "STRING" and isinstance(t.value, str):
                self.warn("quoted property keys read as names")
                key = t.value
                self.advance()
            else:
                key = self.parse_ident("a property key")
            self.expect_op(":", " after the property key")
            items.append((key, self.parse_expr()))
            if self.op(","):
                self.advance()
            elif not self.op(closer):
                raise self.expected(f"',' or '{closer}'")
        if closer == "}":
            self.advance()
        return tuple(items)

    def parse_rel(self) -> RelPat:
        pos = self.i
        left = self.op("<")
        if left:
            self.advance()
        self.expect_op("-")
        var: str | None = None
        types: tuple[str, ...] = ()
        hops = (1, 1)
        if self.op("["):
            self.advance()
            if self.peek().kind in ("IDENT", "QIDENT"):
                var = str(self.advance().value)
            if self.op(":"):
                types = self.parse_labels()
            if self.op("*"):
                hops = self.parse_hops()
            if self.op("{"):
                self.parse_map_items()
                self.warn("relationship properties ignored")
            if self.kw("WHERE"):
                self.advance()
                self.parse_expr()
                self.warn("WHERE inside a relationship ignored")
            self.expect_op("]", " closing the relationship")
            self.expect_op("-", " after ']'")
        elif self.op(">") or (left and self.op("(")):
            self.warn("a one-dash arrow read as '--'")
        else:
            self.expect_op("-")
        right = self.op(">")
        if right:
            self.advance()
        if left and right:
            self.warn("a relationship with arrows on both ends read as undirected")
        direction: Literal["out", "in", "undirected"] = "undirected" if left == right else "in" if left else "out"
        return RelPat(var, types, direction, hops[0], hops[1], pos)

    def parse_hops(self) -> tuple[int, int]:
        self.advance()  # '*'
        lo = self.parse_hop_count()
        if self.op(".."):
            self.advance()
            hi = self.parse_hop_count()
            if hi is None:
                self.warn(f"unbounded variable-length relationship capped at {MAX_HOPS} hops")
                hi = MAX_HOPS
        elif lo is None:
            self.warn(f"unbounded variable-length relationship '*' read as 1..{MAX_HOPS} hops")
            hi = MAX_HOPS
        else:
            hi = lo
        lo = 1 if lo is None else lo
        if lo > hi:
            self.warn(f"hop range {lo}..{hi} reversed")
            lo, hi = hi, lo
        if lo < 1:
            self.warn("zero-length paths are not supported; minimum hops raised to 1")
            lo, hi = 1, max(hi, 1)
        if hi > MAX_HOPS:
            self.warn(f"hop range capped at {MAX_HOPS}")
            hi, lo = MAX_HOPS, min(lo, MAX_HOPS)
        return lo, hi

    def parse_hop_count(self) -> int | None:
        t = self.peek()
        if t.kind != "NUMBER":
            return None
        if not isinstance(t.value, int):
            raise self.error("hop counts must be whole numbers")
        self.advance()
        return t.value

    # expressions
    def parse_expr(self) -> Expr:
        self.enter()
        try:
            return self.parse_bool("OR")
        finally:
            self.depth -= 1

    def parse_bool(self, op: str) -> Expr:
        sub = {"OR": "XOR", "XOR": "AND"}.get(op)
        items = [self.parse_bool(sub) if sub else self.parse_not()]
        while self.kw(op):
            self.advance()
            items.append(self.parse_bool(sub) if sub else self.parse_not())
        return items[0] if len(items) == 1 else BoolOp(op, tuple(items))

    def parse_not(self) -> Expr:
        if self.kw("NOT"):
            self.advance()
            self.enter()
            try:
                return Not(self.parse_not())
            finally:
                self.depth -= 1
        return self.parse_comparison()

    def parse_comparison(self) -> Expr:
        left = self.parse_additive()
        for _ in range(MAX_DEPTH + 1):
            t = self.peek()
            if t.kind == "OP" and t.value in _COMPARISONS:
                self.advance()
                left = Cmp(str(t.value), left, self.parse_additive())
            elif self.kw("CONTAINS") or self.kw("IN"):
                self.advance()
                left = Cmp(str(t.value).upper(), left, self.parse_additive())
            elif (self.kw("STARTS") or self.kw("ENDS")) and self.kw("WITH", 1):
                self.advance()
                self.advance()
                left = Cmp(f"{str(t.value).upper()} WITH", left, self.parse_additive())
            elif self.kw("BETWEEN"):  # not Cypher, but LLMs write it: a >= lo AND a <= hi
                self.advance()
                self.warn("BETWEEN read as >= AND <=")
                low = self.parse_additive()
                if not self.kw("AND"):
                    raise self.expected("AND after BETWEEN")
                self.advance()
                left = BoolOp("AND", (Cmp(">=", left, low), Cmp("<=", left, self.parse_additive())))
            elif self.kw("IS"):
                self.advance()
                negated = self.kw("NOT")
                if negated:
                    self.advance()
                if not self.kw("NULL"):
                    raise self.expected("NULL")
                self.advance()
                left = IsNull(left, negated)
            else:
                return left
        raise self.error(f"more than {MAX_DEPTH} chained operators")

    def parse_additive(self) -> Expr:
        left = self.parse_multiplicative()
        while self.op("+") or self.op("-"):
            self.check_chain(left)
            op = str(self.advance().value)
            left = Arith(op, left, self.parse_multiplicative())
        return left

    def parse_multiplicative(self) -> Expr:
        left = self.parse_unary()
        while self.op("*") or self.op("/") or self.op("%") or self.op("^"):
            self.check_chain(left)
            op = str(self.advance().value)
            left = Arith(op, left, self.parse_unary())
        return left

    def parse_unary(self) -> Expr:
        if self.op("-") or self.op("+"):
            sign = str(self.advance().value)
            self.enter()
            try:
                operand = self.parse_unary()
            finally:
                self.depth -= 1
            if isinstance(operand, Lit) and type(operand.value) in (int, float):
                value = operand.value
                assert isinstance(value, int | float)
                return Lit(-value if sign == "-" else value)
            return Arith(sign, Lit(0), operand)
        return self.parse_postfix()

    def parse_postfix(self) -> Expr:
        expr = self.parse_atom()
        for _ in range(MAX_DEPTH + 1):
            if self.op(".") and self.peek(1).kind in ("IDENT", "QIDENT"):
                self.advance()
                expr = Prop(expr, str(self.advance().value))
            elif self.op("["):
                self.advance()
                index = self.parse_expr()
                self.expect_op("]")
                expr = Arith("[]", expr, index)
            elif self.op(":") and isinstance(expr, Var):
                expr = LabelTest(expr, self.parse_labels())
            else:
                return expr
        raise self.error(f"more than {MAX_DEPTH} chained operators")

    def check_chain(self, left: Expr) -> None:
        """Left-nested operator chains stay shallow (the syntax tree is walked recursively)."""
        depth = 0
        while isinstance(left, Arith) and depth <= MAX_DEPTH:
            left, depth = left.left, depth + 1
        if depth > MAX_DEPTH:
            raise self.error(f"more than {MAX_DEPTH} chained operators")

    def parse_atom(self) -> Expr:
        t = self.peek()
        if t.kind in ("STRING", "NUMBER"):
            self.advance()
            return Lit(t.value)
        if t.kind == "PARAM":
            self.advance()
            return Param(str(t.value))
        if t.kind == "QIDENT":
            self.advance()
            return Var(str(t.value))
        if t.kind == "IDENT":
            name = str(t.value)
            word = name.upper()
            if word in ("TRUE", "FALSE"):
                self.advance()
                return Lit(word == "TRUE")
            if word == "NULL":
                self.advance()
                return Lit(None)
            if self.op("(", 1):
                return self.parse_call()
            if word in _RESERVED and not self.op(".", 1):
                raise self.error(f"unexpected keyword {name}")
            self.advance()
            return Var(name)
        if self.op("("):
            chain = self.try_pattern()
            if chain is not None:
                return PatternE(chain)
            self.advance()
            inner = self.parse_expr()
            self.expect_op(")")
            return inner
        if self.op("["):
            self.advance()
            items: list[Expr] = []
            while not self.op("]"):
                items.append(self.parse_expr())
                if not self.op(","):
                    break
                self.advance()
            self.expect_op("]", " closing the list")
            return ListE(tuple(items))
        if self.op("{"):
            self.enter()
            try:
                return MapE(self.parse_map_items())
            finally:
                self.depth -= 1
        raise self.expected("an expression")

    def parse_call(self) -> Expr:
        name = str(self.advance().value)
        self.advance()  # '('
        if self.kw("DISTINCT"):
            self.advance()
        args: list[Expr] = []
        if self.op("*"):
            self.advance()
            args.append(Star())
        while not self.op(")"):
            args.append(self.parse_expr())
            if not self.op(","):
                break
            self.advance()
        self.expect_op(")", f" closing {name}(")
        return Func(name.lower(), tuple(args))

    def try_pattern(self) -> Chain | None:
        """A pattern with at least one relationship at '(' in an expression, else None (memoised)."""
        key = (self.i, self.end)
        if key not in self.memo:
            start, n_warn, depth, n_inline = self.i, len(self.warnings), self.depth, len(self.inline_wheres)
            result: Chain | None = None
            try:
                parsed = self.parse_chain()
                result = parsed if parsed.rels else None
            except CypherSyntaxError:
                result = None
            added = self.warnings[n_warn:] if result is not None else []
            del self.warnings[n_warn:]
            self.memo[key] = (result, self.i, added)
            self.i, self.depth = start, depth
            del self.inline_wheres[n_inline:]
        chain, stop, added = self.memo[key]
        if chain is not None:
            self.i = stop
            for message in added:
                self.warn(message)
        return chain


# --- normalised conditions ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _PropAtom:
    var: str
    key: str
    op: Operator
    value: Scalar | tuple[Scalar, ...]
    ci: bool


@dataclass(frozen=True)
class _LabelAtom:
    var: str
    labels: tuple[str, ...]


@dataclass(frozen=True)
class _PatternAtom:
    chain: Chain


@dataclass(frozen=True)
class _TextAtom:
    var: str
    text: str


_Atom = _PropAtom | _LabelAtom | _PatternAtom | _TextAtom
_Term = tuple[_Atom, ...]
_FLIP: dict[str, Operator] = {"=": "=", "<>": "<>", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_CASE_FUNCS = {"tolower", "toupper", "lower", "upper"}
_UNWRAP_FUNCS = _CASE_FUNCS | {"trim", "ltrim", "rtrim", "tostring"}  # toLower(v.name) → v.name
_FOLD_FUNCS = _UNWRAP_FUNCS | {"date", "datetime", "localdatetime"}  # date('2015-01-01') → '2015-01-01'
_DROP = "\x00drop"  # a relationship whose only types are unknown (strict): its triplet is dropped
_NOVALUE = object()


class _TooMany(Exception):
    pass


def _walk(obj: Any) -> Iterator[Any]:
    if isinstance(obj, tuple | list):
        for item in obj:
            yield from _walk(item)
    elif is_dataclass(obj) and not isinstance(obj, type):
        yield obj
        for f in fields(obj):
            yield from _walk(getattr(obj, f.name))


def _render(e: Any) -> str:
    match e:
        case Lit(value=v):
            if isinstance(v, str):
                return repr(v)
            return "null" if v is None else str(v).lower() if isinstance(v, bool) else str(v)
        case Var(name=n):
            return n
        case Prop(base=b, key=k):
            return f"{_render(b)}.{k}"
        case Param(name=n):
            return f"${n}"
        case ListE(items=items):
            return "[" + ", ".join(_render(i) for i in items) + "]"
        case MapE(items=items):
            return "{" + ", ".join(f"{k}: {_render(v)}" for k, v in items) + "}"
        case Func(name=n, args=args):
            return f"{n}(" + ", ".join(_render(a) for a in args) + ")"
        case Star():
            return "*"
        case Cmp(op=op, left=left, right=right) | Arith(op=op, left=left, right=right):
            return f"{_render(left)} {op} {_render(right)}"
        case IsNull(expr=x, negated=neg):
            return f"{_render(x)} IS {'NOT ' if neg else ''}NULL"
        case Not(expr=x):
            return f"NOT {_render(x)}"
        case BoolOp(op=op, items=items):
            return "(" + f" {op} ".join(_render(i) for i in items) + ")"
        case LabelTest(expr=x, labels=labels):
            return _render(x) + "".join(f":{lb}" for lb in labels)
        case PatternE(chain=chain):
            return _render(chain)
        case Chain(nodes=nodes, rels=rels):
            out = _render(nodes[0])
            for rel, node in zip(rels, nodes[1:], strict=True):
                out += _render(rel) + _render(node)
            return out
        case NodePat(var=v, labels=labels):
            return "(" + (v or "") + "".join(f":{lb}" for lb in labels) + ")"
        case RelPat(types=types, direction=d):
            body = "[:" + "|".join(types) + "]" if types else ""
            return ("<-" if d == "in" else "-") + body + ("->" if d == "out" else "-")
    return "?"


def _short(e: Any) -> str:
    text = _render(e)
    return text if len(text) <= 80 else text[:77] + "..."


def _normalise_type_name(name: str) -> str:
    name = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name).lower()
    words = []
    for word in re.split(r"[^0-9a-z]+", name):
        if len(word) > 4 and word.endswith("ies"):
            word = word[:-3] + "y"
        elif len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        if word:
            words.append(word)
    return " ".join(words)


def closest_type(name: str, candidates: list[str]) -> str | None:
    """Built-in lenient matching: equal after normalising case, separators, camelCase and plurals (in any word
    order), else the best difflib ratio on the normalised names if at least `SIMILARITY_THRESHOLD`."""
    norm = _normalise_type_name(name)
    normalised = [_normalise_type_name(c) for c in candidates]
    for cand, cn in zip(candidates, normalised, strict=True):
        if cn == norm:
            return cand
    words = sorted(norm.split())
    for cand, cn in zip(candidates, normalised, strict=True):
        if sorted(cn.split()) == words:
            return cand
    best, best_score = None, SIMILARITY_THRESHOLD
    for cand, cn in zip(candidates, normalised, strict=True):
        score = difflib.SequenceMatcher(None, norm, cn).ratio()
        if score >= best_score and (best is None or score > best_score):
            best, best_score = cand, score
    return best


class _Builder:
    def __init__(
        self, schema: Schema | None, mode: str, similarity: Similarity | None, warnings: list[str]
    ) -> None:
        self.schema = schema
        self.mode = mode
        self.similarity = similarity
        self.warnings = warnings
        self.type_cache: dict[tuple[str, str], str | None] = {}
        self.impossible_choice = False  # set when a chosen alternation type cannot connect its nodes (strict)

    def warn(self, message: str) -> None:
        if message not in self.warnings:
            self.warnings.append(message)

    # types against the schema
    def resolve_type(self, kind: Literal["label", "edge type"], name: str) -> str | None:
        """The schema type for a label / edge type, None when it is dropped (strict) or has no match (lenient)."""
        if self.schema is None:
            return name
        known = self.schema.node_type_names if kind == "label" else self.schema.edge_names
        if name in known:
            return name
        cache_key = (kind, name)
        if cache_key in self.type_cache:
            return self.type_cache[cache_key]
        result: str | None = None
        if self.mode == "strict":
            self.warn(f"{kind} '{name}' is not in the schema and was dropped (strict)")
        else:
            if self.similarity is not None:
                try:
                    guess = self.similarity(name, list(known))
                except Exception as exc:
                    self.warn(f"the similarity function failed on {kind} '{name}': {type(exc).__name__}")
                    guess = None
                result = guess if isinstance(guess, str) and guess in known else None
            if result is None:
                result = closest_type(name, known)
            if result is None:
                self.warn(f"{kind} '{name}' is not in the schema and matches no known type; ignored (lenient)")
            else:
                self.warn(f"{kind} '{name}' is not in the schema; mapped to '{result}' (lenient)")
        self.type_cache[cache_key] = result
        return result

    def name_keys(self, type_name: str | None) -> set[str]:
        keys = {"name", "title"}
        if self.schema is not None:
            for t in self.schema.node_types:
                if type_name is None or t.name == type_name:
                    keys.add(t.name_attr.lower())
        return keys

    # statement
    def build(self, parts: list[_Part]) -> StructuredQuery:
        queries = [self.build_part(p) for p in parts]
        if len(queries) == 1:
            query = queries[0]
            query.warnings = self.warnings
            return query
        alternatives: list[StructuredQuery] = []
        for q in queries:
            alternatives.extend(q.alternatives or [q])
        for q in alternatives:
            q.alternatives, q.warnings = [], []
        target = queries[0].target
        types = {q.target_type for q in queries}
        symbols = {target: Symbol(target, types.pop() if len(types) == 1 else None)} if target else {}
        if len(alternatives) > MAX_ALTERNATIVES:
            self.warn(f"UNION of more than {MAX_ALTERNATIVES} alternatives dropped; only the target type is kept")
            alternatives = []
        else:
            self.warn(f"UNION read as {len(alternatives)} alternatives")
        return StructuredQuery(target, symbols, alternatives=alternatives, warnings=self.warnings)

    def build_part(self, part: _Part) -> StructuredQuery:
        self.part = part
        self.node_vars: set[str] = set()
        self.rel_vars: set[str] = set()
        used: set[str] = set()
        for obj in _walk([part.chains, part.wheres, part.returns]):
            if isinstance(obj, NodePat) and obj.var:
                self.node_vars.add(obj.var)
            elif isinstance(obj, RelPat) and obj.var:
                self.rel_vars.add(obj.var)
            elif isinstance(obj, Var):
                used.add(obj.name)
        used |= self.node_vars | self.rel_vars
        self.anon: dict[NodePat, str] = {}
        self.anon_counter = itertools.count(1)
        self.used_names = used
        for obj in _walk([part.chains, part.wheres]):
            if isinstance(obj, NodePat):
                self.node_name(obj)
        self.rel_types: dict[RelPat, tuple[str, ...]] = {}
        for obj in _walk([part.chains, part.wheres]):
            if isinstance(obj, RelPat):
                self.rel_types[obj] = self.resolve_rel(obj)
        target = self.target(part)

        base: list[_Atom] = []
        for chain in part.chains:
            base.extend(self.chain_atoms(chain))
        terms = self.where_terms(part.wheres)
        alternated = [r for c in part.chains for r in c.rels if len(self.rel_types[r]) > 1]
        for obj in _walk(part.wheres):
            if isinstance(obj, RelPat) and len(self.rel_types[obj]) > 1:
                self.warn(f"edge-type alternation {_short(obj)} in WHERE read as any edge type")
        n_choices = 1
        for r in alternated:
            n_choices = min(n_choices * len(self.rel_types[r]), MAX_ALTERNATIVES + 1)
        choices: list[dict[RelPat, str]] = [{}]
        if n_choices * len(terms) > MAX_ALTERNATIVES:
            self.warn(f"edge-type alternation read as any edge type: more than {MAX_ALTERNATIVES} alternatives")
        elif alternated:
            choices = [
                dict(zip(alternated, combo, strict=True))
                for combo in itertools.product(*(self.rel_types[r] for r in alternated))
            ]
        if len(choices) * len(terms) == 1:
            return self.make(part.chains, [*base, *terms[0]], choices[0], target)
        alternatives: list[StructuredQuery] = []
        impossible: list[StructuredQuery] = []
        for choice in choices:
            for term in terms:
                self.impossible_choice = False
                alt = self.make(part.chains, [*base, *term], choice, target)
                (impossible if self.impossible_choice else alternatives).append(alt)
        if impossible and alternatives:
            self.warn(f"{len(impossible)} edge-type alternative(s) dropped: the types cannot connect those nodes")
        else:
            alternatives += impossible
        if len(alternatives) == 1:
            return alternatives[0]
        common = [a for a in terms[0] if all(a in t for t in terms[1:])]
        top = self.make(part.chains, [*base, *common], {}, target)
        top.alternatives = alternatives
        for alt in alternatives:
            alt.warnings = []
        return top

    def node_name(self, node: NodePat) -> str:
        if node.var:
            return node.var
        if node not in self.anon:
            name = f"_{next(self.anon_counter)}"
            while name in self.used_names:
                name = f"_{next(self.anon_counter)}"
            self.anon[node] = name
        return self.anon[node]

    def resolve_var(self, name: str) -> str:
        for _ in range(10):
            if name not in self.part.aliases or name in self.node_vars:
                break
            name = self.part.aliases[name]
        return name

    def resolve_rel(self, rel: RelPat) -> tuple[str, ...]:
        if not rel.types:
            return ()
        resolved: list[str] = []
        for t in rel.types:
            r = self.resolve_type("edge type", t)
            if r is None and self.mode != "strict":
                return ()  # an unmatched alternative means any edge type (lenient)
            if r is not None and r not in resolved:
                resolved.append(r)
        return tuple(resolved) if resolved else (_DROP,)

    def target(self, part: _Part) -> str:
        if part.return_star:
            names = [self.node_name(n) for c in part.chains for n in c.nodes]
            self.warn("RETURN * read as returning the first node of the pattern")
            return names[0] if names else ""
        if not part.returns:
            if part.returns is None:
                self.warn("no RETURN clause: the target is unknown")
            return ""
        variables = [self.resolve_var(v.name) for v in _walk(part.returns) if isinstance(v, Var)]
        if not variables:
            self.warn("RETURN names no variable: the target is unknown")
            return ""
        target = variables[0]
        if any(v != target for v in variables):
            self.warn(f"RETURN has several variables; the first, '{target}', is the target")
        if target in self.rel_vars:
            self.warn(f"the returned variable '{target}' is a relationship")
        if target not in self.node_vars:
            self.warn(f"the returned variable '{target}' is not bound by MATCH")
        return target

    def chain_atoms(self, chain: Chain) -> list[_Atom]:
        atoms: list[_Atom] = []
        for node in chain.nodes:
            name = self.node_name(node)
            for key, value in node.props:
                atom = self.atom(Cmp("=", Prop(Var(name), key), value))
                if atom is not None:
                    atoms.append(atom)
        return atoms

    # WHERE → disjunctive normal form over atoms
    def where_terms(self, wheres: list[Expr]) -> list[_Term]:
        conjuncts: list[Expr] = []
        stack = list(reversed(wheres))
        while stack:
            e = stack.pop()
            if isinstance(e, BoolOp) and e.op == "AND":
                stack.extend(reversed(e.items))
            else:
                conjuncts.append(e)
        terms: list[_Term] = [()]
        for conjunct in conjuncts:
            try:
                d = self.dnf(conjunct)
            except _TooMany:
                d = None
            if d is None or len(terms) * len(d) > MAX_ALTERNATIVES:
                self.warn(f"OR condition dropped (more than {MAX_ALTERNATIVES} alternatives): {_short(conjunct)}")
                continue
            terms = [a + b for a in terms for b in d]
        return _simplify(terms)

    def dnf(self, e: Expr) -> list[_Term]:
        if isinstance(e, BoolOp) and e.op == "AND":
            result: list[_Term] = [()]
            for item in e.items:
                d = self.dnf(item)
                result = [a + b for a in result for b in d]
                if len(result) > MAX_ALTERNATIVES:
                    raise _TooMany
            return result
        if isinstance(e, BoolOp) and e.op == "OR":
            merged = self.merge_equalities(e)
            if merged is not None:
                return [(merged,)]
            out: list[_Term] = []
            for item in e.items:
                out.extend(self.dnf(item))
                if len(out) > MAX_ALTERNATIVES:
                    raise _TooMany
            return out
        if isinstance(e, BoolOp):
            self.warn(f"XOR condition dropped: {_short(e)}")
            return [()]
        if isinstance(e, Not):
            self.warn(f"NOT condition dropped: {_short(e)}")
            return [()]
        atom = self.atom(e)
        return [()] if atom is None else [(atom,)]

    def merge_equalities(self, e: BoolOp) -> _PropAtom | None:
        """`v.k = 'a' OR v.k = 'b' OR v.k IN [...]` → one IN atom."""
        if not all(isinstance(i, Cmp) and i.op in ("=", "IN") for i in e.items):
            return None
        atoms = [self.atom(i, quiet=True) for i in e.items]
        first = atoms[0]
        if not isinstance(first, _PropAtom):
            return None
        values: dict[tuple[type, Scalar], Scalar] = {}  # keyed by type too: 1, 1.0 and true stay apart
        for a in atoms:
            if not isinstance(a, _PropAtom) or (a.var, a.key, a.ci) != (first.var, first.key, first.ci):
                return None
            for v in a.value if isinstance(a.value, tuple) else (a.value,):
                values.setdefault((type(v), v), v)
        return _PropAtom(first.var, first.key, "IN", tuple(values.values()), first.ci)

    def atom(self, e: Expr, quiet: bool = False) -> _Atom | None:
        """One leaf condition as an atom; None = dropped (read as true), with a warning unless quiet."""

        def drop(reason: str) -> None:
            if not quiet:
                self.warn(f"{reason}: {_short(e)}")

        if isinstance(e, Lit) and e.value is True:
            return None
        if isinstance(e, LabelTest) and isinstance(e.expr, Var):
            if self.resolve_var(e.expr.name) in self.rel_vars:
                drop("relationship type test dropped")
                return None
            return _LabelAtom(self.resolve_var(e.expr.name), e.labels)
        if isinstance(e, PatternE):
            return _PatternAtom(e.chain)
        if isinstance(e, Func) and e.name == "exists" and len(e.args) == 1 and isinstance(e.args[0], PatternE):
            return _PatternAtom(e.args[0].chain)
        if isinstance(e, IsNull):
            drop("IS NULL condition dropped")
            return None
        if not isinstance(e, Cmp):
            drop("unsupported condition dropped")
            return None
        op, ref, value = e.op, self.prop_ref(e.left), self.literal(e.right)
        if ref is None or value is _NOVALUE:
            flipped = _FLIP.get(op)
            rev_ref, rev_value = self.prop_ref(e.right), self.literal(e.left)
            if flipped is not None and rev_ref is not None and rev_value is not _NOVALUE:
                op, ref, value = flipped, rev_ref, rev_value
        node_var = self.resolve_var(e.left.name) if ref is None and isinstance(e.left, Var) else None
        text_ops = ("=", "CONTAINS", "STARTS WITH", "ENDS WITH")
        if node_var is not None and node_var not in self.rel_vars and op in text_ops and isinstance(value, str):
            drop("a condition on a whole node read as a text constraint")
            return _TextAtom(node_var, value)
        if ref is None or value is _NOVALUE:
            drop("condition that is not 'property OP value' dropped")
            return None
        var, key, ci = ref
        if var in self.rel_vars:
            drop("relationship property condition dropped")
            return None
        if var in self.part.value_aliases and var not in self.node_vars:
            drop("condition on a computed value dropped")
            return None
        if value is None:
            drop("comparison with null dropped")
            return None
        if op == "IN" and not isinstance(value, tuple):
            op = "="
        if isinstance(value, tuple):
            items = tuple(v for v in value if v is not None)
            if op != "IN" or any(isinstance(v, tuple) for v in items):
                drop("list value not supported; condition dropped")
                return None
            if not items:
                drop("IN with an empty list dropped")
                return None
            value = items
        if op == "=~":
            if not isinstance(value, str):
                drop("=~ needs a string pattern; condition dropped")
                return None
            try:
                re.compile(value)
            except (re.error, OverflowError, RecursionError, ValueError):
                drop("invalid regular expression dropped")
                return None
            ci = ci or bool(re.match(r"\(\?[a-zA-Z]*i[a-zA-Z]*\)", value))
        assert op in _VALID_OPS
        return _PropAtom(var, key, op, value, ci)  # type: ignore[arg-type]

    def prop_ref(self, e: Expr) -> tuple[str, str, bool] | None:
        ci = False
        while isinstance(e, Func) and len(e.args) == 1 and e.name in _UNWRAP_FUNCS:
            ci = ci or e.name in _CASE_FUNCS
            e = e.args[0]
        if isinstance(e, Prop) and isinstance(e.base, Var):
            return self.resolve_var(e.base.name), e.key, ci
        return None

    def literal(self, e: Expr) -> Any:
        """The value of a literal expression (a tuple for a list), or _NOVALUE."""
        if isinstance(e, Lit):
            return e.value
        if isinstance(e, ListE):
            values = [self.literal(i) for i in e.items]
            return _NOVALUE if any(v is _NOVALUE for v in values) else tuple(values)
        if isinstance(e, Func) and e.name in _FOLD_FUNCS and len(e.args) == 1:
            inner = self.literal(e.args[0])
            if isinstance(inner, str):
                if e.name in ("tolower", "lower"):
                    return inner.lower()
                if e.name in ("toupper", "upper"):
                    return inner.upper()
                return inner.strip() if "trim" in e.name else inner
        return _NOVALUE

    # one complete query
    def make(
        self, chains: list[Chain], atoms: list[_Atom], choice: dict[RelPat, str], target: str
    ) -> StructuredQuery:
        all_chains = list(chains) + [a.chain for a in atoms if isinstance(a, _PatternAtom)]
        labels: dict[str, list[str]] = {}
        names: dict[str, list[str]] = {}

        def add(var: str) -> None:
            if var not in labels:
                labels[var], names[var] = [], []

        for chain in all_chains:
            for node in chain.nodes:
                add(self.node_name(node))
                labels[self.node_name(node)].extend(node.labels)
        extra: list[_Atom] = []
        for chain in all_chains[len(chains) :]:
            extra.extend(self.chain_atoms(chain))
        atoms = [*atoms, *extra]
        for atom in atoms:
            if isinstance(atom, _LabelAtom):
                add(atom.var)
                labels[atom.var].extend(atom.labels)
        for atom in atoms:
            if isinstance(atom, _PropAtom | _TextAtom) and atom.var not in labels:
                self.warn(f"variable '{atom.var}' is not bound by MATCH")
                add(atom.var)
        if target and target not in labels and target not in self.rel_vars:
            add(target)

        types: dict[str, str | None] = {}
        for var, written in labels.items():
            distinct = list(dict.fromkeys(written))
            resolved = [r for r in (self.resolve_type("label", lb) for lb in distinct) if r is not None]
            types[var] = resolved[0] if resolved else None
            if len(distinct) > 1:
                self.warn(f"'{var}' has several labels {distinct}; the first known one is used")

        constraints: list[AttributeConstraint] = []
        text: list[str] = []
        for atom in atoms:
            if isinstance(atom, _TextAtom) and atom.text not in text:
                text.append(atom.text)
            if not isinstance(atom, _PropAtom):
                continue
            is_name = atom.key.lower() in self.name_keys(types[atom.var])
            values = atom.value if isinstance(atom.value, tuple) else (atom.value,)
            if is_name and atom.op in ("=", "IN") and not any(isinstance(v, bool) for v in values):
                for v in values:
                    if not str(v).strip():
                        self.warn(f"empty name for '{atom.var}' ignored")
                    elif str(v) not in names[atom.var]:
                        names[atom.var].append(str(v))
                continue
            constraints.append(AttributeConstraint(atom.var, atom.key, atom.op, atom.value, atom.ci))

        triplets: list[Triplet] = []
        for chain in all_chains:
            for i, rel in enumerate(chain.rels):
                a, b = self.node_name(chain.nodes[i]), self.node_name(chain.nodes[i + 1])
                triplet = self.triplet(rel, a, b, choice, types)
                if triplet is not None:
                    triplets.append(triplet)
        symbols = {v: Symbol(v, types[v], tuple(names[v])) for v in labels}
        return StructuredQuery(
            target,
            symbols,
            list(dict.fromkeys(triplets)),
            list(dict.fromkeys(constraints)),
            text,
            warnings=self.warnings,
        )

    def triplet(
        self, rel: RelPat, a: str, b: str, choice: dict[RelPat, str], types: dict[str, str | None]
    ) -> Triplet | None:
        resolved = self.rel_types[rel]
        if resolved == (_DROP,):
            self.warn(f"relationship {_short(rel)} dropped: no edge type in the schema (strict)")
            return None
        edge = choice.get(rel) or (resolved[0] if len(resolved) == 1 else None)
        head, tail = (b, a) if rel.direction == "in" else (a, b)
        direction: Literal["out", "undirected"] = "undirected" if rel.direction == "undirected" else "out"
        if edge is not None and self.schema is not None:
            sigs = self.schema.signatures(edge)

            def fits(h: str | None, t: str | None) -> bool:
                return any((h is None or s == h) and (t is None or d == t) for s, d in sigs)

            th, tt = types.get(head), types.get(tail)
            if fits(th, tt) or (direction == "undirected" and fits(tt, th)):
                pass
            elif fits(tt, th):
                self.warn(
                    f"edge '{edge}' fits the schema only as ({tt or 'any'})->({th or 'any'}); "
                    f"({head})-({tail}) flipped"
                )
                head, tail = tail, head
            elif self.mode == "strict":
                self.impossible_choice = self.impossible_choice or rel in choice
                self.warn(
                    f"edge '{edge}' cannot connect ({th}) and ({tt}) in the schema; triplet dropped (strict)"
                )
                return None
            else:
                self.warn(f"edge '{edge}' cannot connect ({th}) and ({tt}) in the schema; kept (lenient)")
        return Triplet(head, edge, tail, direction, rel.min_hops, rel.max_hops)


_VALID_OPS = {"=", "<>", "<", "<=", ">", ">=", "CONTAINS", "STARTS WITH", "ENDS WITH", "IN", "=~"}


def _simplify(terms: list[_Term]) -> list[_Term]:
    """Deduplicate atoms and terms, then drop every term that contains another (it adds nothing to a union)."""
    unique: list[_Term] = []
    for term in terms:
        t = tuple(dict.fromkeys(term))
        if t not in unique:
            unique.append(t)
    sets = [set(t) for t in unique]
    return [t for i, t in enumerate(unique) if not any(j != i and sets[j] < sets[i] for j in range(len(unique)))]


# --- API --------------------------------------------------------------------------------------------------------


def _parse(
    text: str, schema: Schema | None, mode: str, similarity: Similarity | None
) -> tuple[StructuredQuery, str | None]:
    warnings: list[str] = []
    try:
        if not isinstance(text, str):
            message = f"expected text, got {type(text).__name__}"
            return StructuredQuery("", warnings=[message]), message
        if mode not in ("strict", "lenient"):
            warnings.append(f"unknown mode {mode!r}; strict used")
            mode = "strict"
        source = extract_cypher(text, warnings)
        parser = _Parser(tokenize(source, warnings), warnings)
        parts = parser.parse_statement()
        query = _Builder(schema, mode, similarity, warnings).build(parts)
        return query, (str(parser.errors[0]) if parser.errors else None)
    except Exception as exc:  # the contract: untrusted input never makes the parser raise
        warnings.append(f"internal parser error ({type(exc).__name__}): {exc}")
        return StructuredQuery("", warnings=warnings), "internal parser error"


def parse_cypher(
    text: str,
    schema: Schema | None = None,
    *,
    mode: Mode = "strict",
    similarity: Similarity | None = None,
) -> StructuredQuery:
    """Best-effort parse of LLM Cypher; never raises — problems are listed in the result's `warnings`."""
    return _parse(text, schema, mode, similarity)[0]


def parse_cypher_or_error(
    text: str,
    schema: Schema | None = None,
    *,
    mode: Mode = "strict",
    similarity: Similarity | None = None,
) -> tuple[StructuredQuery | None, str | None]:
    """`(query, None)` for a syntactically clean query, else `(None, first syntax error)` to send back to the LLM.

    Schema problems (unknown labels, dropped conditions) are warnings, not errors. Call `parse_cypher` for the
    best-effort result of a query that stays broken.
    """
    query, error = _parse(text, schema, mode, similarity)
    return (None, error) if error is not None else (query, None)
