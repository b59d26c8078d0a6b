"""WHERE normalisation for the builder in `skbqa.stages.parse.cypher.parser`.

Each leaf condition (and each entry of a node's property map) becomes an atom: a property comparison, a label
test, a pattern predicate or text on a whole node; what cannot be read is dropped with a warning (relaxing the
query). The WHERE condition becomes a disjunction of conjunctions of atoms, at most `MAX_ALTERNATIVES` of them;
an OR of equalities on one property is folded into IN.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from skbqa.query.structured import Operator, Scalar
from skbqa.stages.parse.cypher.schema import SchemaResolver
from skbqa.stages.parse.cypher.syntax_tree import (
    BoolOp,
    Chain,
    Cmp,
    Expr,
    Func,
    IsNull,
    LabelTest,
    ListE,
    Lit,
    Not,
    Part,
    PatternE,
    Prop,
    Var,
    short,
)

MAX_ALTERNATIVES = 16  # cap on the union size from OR, edge-type alternation and UNION


@dataclass(frozen=True)
class PropAtom:
    var: str
    key: str
    op: Operator
    value: Scalar | tuple[Scalar, ...]
    ci: bool


@dataclass(frozen=True)
class LabelAtom:
    var: str
    labels: tuple[str, ...]


@dataclass(frozen=True)
class PatternAtom:
    chain: Chain


@dataclass(frozen=True)
class TextAtom:
    var: str
    text: str


Atom = PropAtom | LabelAtom | PatternAtom | TextAtom
Term = tuple[Atom, ...]
_FLIP: dict[str, Operator] = {"=": "=", "<>": "<>", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_CASE_FUNCS = {"tolower", "toupper", "lower", "upper"}
_UNWRAP_FUNCS = _CASE_FUNCS | {"trim", "ltrim", "rtrim", "tostring"}  # toLower(v.name) → v.name
_FOLD_FUNCS = _UNWRAP_FUNCS | {"date", "datetime", "localdatetime"}  # date('2015-01-01') → '2015-01-01'
_VALID_OPS = {"=", "<>", "<", "<=", ">", ">=", "CONTAINS", "STARTS WITH", "ENDS WITH", "IN", "=~"}
_NOVALUE = object()


class _TooMany(Exception):
    pass


def _simplify(terms: list[Term]) -> list[Term]:
    """Deduplicate atoms and terms, then drop every term that contains another (it adds nothing to a union)."""
    unique: list[Term] = []
    for term in terms:
        t = tuple(dict.fromkeys(term))
        if t not in unique:
            unique.append(t)
    sets = [set(t) for t in unique]
    return [t for i, t in enumerate(unique) if not any(j != i and sets[j] < sets[i] for j in range(len(unique)))]


class WhereNormaliser(SchemaResolver):
    """Conditions of one part as atoms, with its variables resolved through WITH aliases."""

    # the part being built and its variables (set per part by the builder)
    part: Part
    node_vars: set[str]
    rel_vars: set[str]

    def resolve_var(self, name: str) -> str:
        for _ in range(10):
            if name not in self.part.aliases or name in self.node_vars:
                break
            name = self.part.aliases[name]
        return name

    # WHERE → disjunctive normal form over atoms
    def where_terms(self, wheres: list[Expr]) -> list[Term]:
        conjuncts: list[Expr] = []
        stack = list(reversed(wheres))
        while stack:
            e = stack.pop()
            if isinstance(e, BoolOp) and e.op == "AND":
                stack.extend(reversed(e.items))
            else:
                conjuncts.append(e)
        terms: list[Term] = [()]
        for conjunct in conjuncts:
            try:
                d = self.dnf(conjunct)
            except _TooMany:
                d = None
            if d is None or len(terms) * len(d) > MAX_ALTERNATIVES:
                self.warn(f"OR condition dropped (more than {MAX_ALTERNATIVES} alternatives): {short(conjunct)}")
                continue
            terms = [a + b for a in terms for b in d]
        return _simplify(terms)

    def dnf(self, e: Expr) -> list[Term]:
        if isinstance(e, BoolOp) and e.op == "AND":
            result: list[Term] = [()]
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
            out: list[Term] = []
            for item in e.items:
                out.extend(self.dnf(item))
                if len(out) > MAX_ALTERNATIVES:
                    raise _TooMany
            return out
        if isinstance(e, BoolOp):
            self.warn(f"XOR condition dropped: {short(e)}")
            return [()]
        if isinstance(e, Not):
            self.warn(f"NOT condition dropped: {short(e)}")
            return [()]
        atom = self.atom(e)
        return [()] if atom is None else [(atom,)]

    def merge_equalities(self, e: BoolOp) -> PropAtom | None:
        """`v.k = 'a' OR v.k = 'b' OR v.k IN [...]` → one IN atom."""
        if not all(isinstance(i, Cmp) and i.op in ("=", "IN") for i in e.items):
            return None
        atoms = [self.atom(i, quiet=True) for i in e.items]
        first = atoms[0]
        if not isinstance(first, PropAtom):
            return None
        values: dict[tuple[type, Scalar], Scalar] = {}  # keyed by type too: 1, 1.0 and true stay apart
        for a in atoms:
            if not isinstance(a, PropAtom) or (a.var, a.key, a.ci) != (first.var, first.key, first.ci):
                return None
            for v in a.value if isinstance(a.value, tuple) else (a.value,):
                values.setdefault((type(v), v), v)
        return PropAtom(first.var, first.key, "IN", tuple(values.values()), first.ci)

    def atom(self, e: Expr, quiet: bool = False) -> Atom | None:
        """One leaf condition as an atom; None = dropped (read as true), with a warning unless quiet."""

        def drop(reason: str) -> None:
            if not quiet:
                self.warn(f"{reason}: {short(e)}")

        if isinstance(e, Lit) and e.value is True:
            return None
        if isinstance(e, LabelTest) and isinstance(e.expr, Var):
            if self.resolve_var(e.expr.name) in self.rel_vars:
                drop("relationship type test dropped")
                return None
            return LabelAtom(self.resolve_var(e.expr.name), e.labels)
        if isinstance(e, PatternE):
            return PatternAtom(e.chain)
        if isinstance(e, Func) and e.name == "exists" and len(e.args) == 1 and isinstance(e.args[0], PatternE):
            return PatternAtom(e.args[0].chain)
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
            return TextAtom(node_var, value)
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
        return PropAtom(var, key, op, value, ci)  # type: ignore[arg-type]

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
