"""Expressions for the Cypher parser: OR / XOR / AND / NOT, comparisons (with BETWEEN and IS [NOT] NULL),
arithmetic, property access, literals, lists, maps, function calls and pattern predicates. Nesting and operator
chains are limited to `MAX_DEPTH`: deeper input is a syntax error, and the tree stays safe to walk recursively.
"""

from __future__ import annotations

from skbqa.stages.parse.cypher.cursor import MAX_DEPTH, RESERVED
from skbqa.stages.parse.cypher.lexer import CypherSyntaxError
from skbqa.stages.parse.cypher.patterns import PatternParser
from skbqa.stages.parse.cypher.syntax_tree import (
    Arith,
    BoolOp,
    Chain,
    Cmp,
    Expr,
    Func,
    IsNull,
    LabelTest,
    ListE,
    Lit,
    MapE,
    Not,
    Param,
    PatternE,
    Prop,
    Star,
    Var,
)

_COMPARISONS = {"=", "<>", "<", "<=", ">", ">=", "=~"}


class ExpressionParser(PatternParser):
    """The expression grammar, on top of the pattern grammar (a pattern can be a predicate)."""

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
            if word in RESERVED and not self.op(".", 1):
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
