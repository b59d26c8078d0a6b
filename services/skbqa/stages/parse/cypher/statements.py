"""The statement level of the Cypher parser, and the parser as a whole (`Parser`).

Reads MATCH / OPTIONAL MATCH / WHERE / WITH / RETURN / UNION into one `Part` per single query and recovers from
syntax errors clause by clause (a broken WHERE keeps its intact AND-conjuncts when it has no OR); syntax errors
are collected in `errors` and recorded as warnings, never raised. Tolerated: patterns on a new line without
MATCH or ',' (read into the previous MATCH), text after RETURN or after ';' (ignored, with a warning).
"""

from __future__ import annotations

from skbqa.stages.parse.cypher.cursor import CLAUSES, UNSUPPORTED_CLAUSES
from skbqa.stages.parse.cypher.expressions import ExpressionParser
from skbqa.stages.parse.cypher.lexer import CypherSyntaxError
from skbqa.stages.parse.cypher.syntax_tree import Expr, Part, Var


class Parser(ExpressionParser):
    """The recursive-descent parser: `parse_statement` reads the tokens into parts."""

    def is_clause(self, k: int = 0) -> bool:
        t = self.peek(k)
        if t.kind != "IDENT" or not isinstance(t.value, str):
            return False
        word = t.value.upper()
        if word not in CLAUSES and word not in UNSUPPORTED_CLAUSES:
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
    def parse_statement(self) -> list[Part]:
        parts = [Part()]
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
                    parts.append(Part())
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

    def parse_match(self, part: Part) -> None:
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

    def parse_with(self, part: Part) -> None:
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

    def parse_return(self, part: Part) -> None:
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
