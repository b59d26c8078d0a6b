"""The syntax tree of the Cypher subset that `skbqa.stages.parse.cypher.parser` reads, and helpers to walk and print it.

The parser (`skbqa.stages.parse.cypher.statements`) produces one `Part` per single query (a UNION has several); the
builder in `skbqa.stages.parse.cypher.parser` maps the parts to a `StructuredQuery`. `render` / `short` print a (sub)tree as
Cypher-like text for warnings.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, fields, is_dataclass
from typing import Any, Literal

Value = str | int | float | bool | None


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
class Part:
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


def walk(obj: Any) -> Iterator[Any]:
    if isinstance(obj, tuple | list):
        for item in obj:
            yield from walk(item)
    elif is_dataclass(obj) and not isinstance(obj, type):
        yield obj
        for f in fields(obj):
            yield from walk(getattr(obj, f.name))


def render(e: Any) -> str:
    match e:
        case Lit(value=v):
            if isinstance(v, str):
                return repr(v)
            return "null" if v is None else str(v).lower() if isinstance(v, bool) else str(v)
        case Var(name=n):
            return n
        case Prop(base=b, key=k):
            return f"{render(b)}.{k}"
        case Param(name=n):
            return f"${n}"
        case ListE(items=items):
            return "[" + ", ".join(render(i) for i in items) + "]"
        case MapE(items=items):
            return "{" + ", ".join(f"{k}: {render(v)}" for k, v in items) + "}"
        case Func(name=n, args=args):
            return f"{n}(" + ", ".join(render(a) for a in args) + ")"
        case Star():
            return "*"
        case Cmp(op=op, left=left, right=right) | Arith(op=op, left=left, right=right):
            return f"{render(left)} {op} {render(right)}"
        case IsNull(expr=x, negated=neg):
            return f"{render(x)} IS {'NOT ' if neg else ''}NULL"
        case Not(expr=x):
            return f"NOT {render(x)}"
        case BoolOp(op=op, items=items):
            return "(" + f" {op} ".join(render(i) for i in items) + ")"
        case LabelTest(expr=x, labels=labels):
            return render(x) + "".join(f":{lb}" for lb in labels)
        case PatternE(chain=chain):
            return render(chain)
        case Chain(nodes=nodes, rels=rels):
            out = render(nodes[0])
            for rel, node in zip(rels, nodes[1:], strict=True):
                out += render(rel) + render(node)
            return out
        case NodePat(var=v, labels=labels):
            return "(" + (v or "") + "".join(f":{lb}" for lb in labels) + ")"
        case RelPat(types=types, direction=d):
            body = "[:" + "|".join(types) + "]" if types else ""
            return ("<-" if d == "in" else "-") + body + ("->" if d == "out" else "-")
    return "?"


def short(e: Any) -> str:
    text = render(e)
    return text if len(text) <= 80 else text[:77] + "..."
