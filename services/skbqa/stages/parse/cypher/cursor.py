"""The token-level base of the Cypher parser: the parser's state, looking at and consuming tokens, syntax errors
and warnings, the nesting limit `MAX_DEPTH`, and the keyword sets.

The grammar is layered on top, one module each: `PatternParser` (`skbqa.stages.parse.cypher.patterns`), then
`ExpressionParser` (`skbqa.stages.parse.cypher.expressions`), then `Parser` (`skbqa.stages.parse.cypher.statements`, statements and
clauses with error recovery).
"""

from __future__ import annotations

from skbqa.stages.parse.cypher.lexer import CypherSyntaxError, Token
from skbqa.stages.parse.cypher.syntax_tree import Chain, Expr

MAX_DEPTH = 40  # nesting / operator-chain limit: deeper input is a syntax error, never a RecursionError

CLAUSES = {"MATCH", "OPTIONAL", "WHERE", "WITH", "RETURN", "UNION"}
UNSUPPORTED_CLAUSES = {
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
RESERVED = CLAUSES | UNSUPPORTED_CLAUSES | {
    "AND", "OR", "XOR", "NOT", "IN", "IS", "CONTAINS", "STARTS", "ENDS", "ORDER", "BY", "SKIP", "LIMIT", "AS",
    "DISTINCT", "CASE", "WHEN", "THEN", "ELSE", "END", "ASC", "DESC",
}  # fmt: skip


class TokenCursor:
    """The token position and the state shared by the grammar layers, with the token-level helpers."""

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

    def parse_ident(self, what: str) -> str:
        t = self.peek()
        if t.kind in ("IDENT", "QIDENT") and isinstance(t.value, str):
            self.advance()
            return t.value
        raise self.expected(what)
