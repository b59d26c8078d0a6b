"""Node and relationship patterns for the Cypher parser: ``(v:label {k: v})``, ``<-[r:a|b*1..2]-``, path
variables and ``shortestPath(...)``, with the tolerated forms (a bare variable as a node, unquoted labels with
'/' or '-', property maps without braces, one-dash arrows) and hop ranges capped at `MAX_HOPS`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Literal

from skbqa.stages.parse.cypher.cursor import RESERVED, TokenCursor
from skbqa.stages.parse.cypher.syntax_tree import Chain, Expr, NodePat, RelPat

MAX_HOPS = 3  # cap for unbounded `*` / `*2..` and for larger explicit bounds


class PatternParser(TokenCursor, ABC):
    """The pattern grammar; property values and conditions inside patterns are expressions."""

    @abstractmethod
    def parse_expr(self) -> Expr:
        """One expression (the expression grammar, `ExpressionParser`, is layered on top)."""

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
        if t.kind == "IDENT" and isinstance(t.value, str) and t.value.upper() not in RESERVED:
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
