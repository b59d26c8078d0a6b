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

Modules: `cypher_lexer` cuts the query out of the answer and tokenises it; `cypher_syntax.Parser` reads the
tokens into the syntax tree of `cypher_ast` (its grammar layered over `cypher_cursor`, `cypher_patterns` and
`cypher_expr`); the builder here maps the tree to a `StructuredQuery`, reading conditions with `cypher_where`
and resolving types against the schema with `cypher_schema`.
"""

from __future__ import annotations

import itertools
from typing import Literal

from skbqa.query.structured import AttributeConstraint, StructuredQuery, Symbol, Triplet
from skbqa.skb.schema import Schema
from skbqa.stages.parse.cypher.lexer import MAX_INPUT_CHARS, CypherSyntaxError, extract_cypher, tokenize
from skbqa.stages.parse.cypher.patterns import MAX_HOPS
from skbqa.stages.parse.cypher.schema import Similarity, closest_type
from skbqa.stages.parse.cypher.statements import Parser
from skbqa.stages.parse.cypher.syntax_tree import Chain, Cmp, NodePat, Part, Prop, RelPat, Var, short, walk
from skbqa.stages.parse.cypher.where import (
    MAX_ALTERNATIVES,
    Atom,
    LabelAtom,
    PatternAtom,
    PropAtom,
    TextAtom,
    WhereNormaliser,
)

__all__ = [
    "MAX_ALTERNATIVES",
    "MAX_HOPS",
    "MAX_INPUT_CHARS",
    "CypherSyntaxError",
    "closest_type",
    "parse_cypher",
    "parse_cypher_or_error",
]

Mode = Literal["strict", "lenient"]


class _Builder(WhereNormaliser):
    """Maps the parsed parts to a `StructuredQuery` (conditions and schema lookups come from the bases)."""

    # statement
    def build(self, parts: list[Part]) -> StructuredQuery:
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

    def build_part(self, part: Part) -> StructuredQuery:
        self.part = part
        self.node_vars = set()
        self.rel_vars = set()
        used: set[str] = set()
        for obj in walk([part.chains, part.wheres, part.returns]):
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
        for obj in walk([part.chains, part.wheres]):
            if isinstance(obj, NodePat):
                self.node_name(obj)
        self.rel_types = {}
        for obj in walk([part.chains, part.wheres]):
            if isinstance(obj, RelPat):
                self.rel_types[obj] = self.resolve_rel(obj)
        target = self.target(part)

        base: list[Atom] = []
        for chain in part.chains:
            base.extend(self.chain_atoms(chain))
        terms = self.where_terms(part.wheres)
        alternated = [r for c in part.chains for r in c.rels if len(self.rel_types[r]) > 1]
        for obj in walk(part.wheres):
            if isinstance(obj, RelPat) and len(self.rel_types[obj]) > 1:
                self.warn(f"edge-type alternation {short(obj)} in WHERE read as any edge type")
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

    def target(self, part: Part) -> str:
        if part.return_star:
            names = [self.node_name(n) for c in part.chains for n in c.nodes]
            self.warn("RETURN * read as returning the first node of the pattern")
            return names[0] if names else ""
        if not part.returns:
            if part.returns is None:
                self.warn("no RETURN clause: the target is unknown")
            return ""
        variables = [self.resolve_var(v.name) for v in walk(part.returns) if isinstance(v, Var)]
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

    def chain_atoms(self, chain: Chain) -> list[Atom]:
        atoms: list[Atom] = []
        for node in chain.nodes:
            name = self.node_name(node)
            for key, value in node.props:
                atom = self.atom(Cmp("=", Prop(Var(name), key), value))
                if atom is not None:
                    atoms.append(atom)
        return atoms

    # one complete query
    def make(
        self, chains: list[Chain], atoms: list[Atom], choice: dict[RelPat, str], target: str
    ) -> StructuredQuery:
        all_chains = list(chains) + [a.chain for a in atoms if isinstance(a, PatternAtom)]
        labels: dict[str, list[str]] = {}
        names: dict[str, list[str]] = {}

        def add(var: str) -> None:
            if var not in labels:
                labels[var], names[var] = [], []

        for chain in all_chains:
            for node in chain.nodes:
                add(self.node_name(node))
                labels[self.node_name(node)].extend(node.labels)
        extra: list[Atom] = []
        for chain in all_chains[len(chains) :]:
            extra.extend(self.chain_atoms(chain))
        atoms = [*atoms, *extra]
        for atom in atoms:
            if isinstance(atom, LabelAtom):
                add(atom.var)
                labels[atom.var].extend(atom.labels)
        for atom in atoms:
            if isinstance(atom, PropAtom | TextAtom) and atom.var not in labels:
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
            if isinstance(atom, TextAtom) and atom.text not in text:
                text.append(atom.text)
            if not isinstance(atom, PropAtom):
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
        parser = Parser(tokenize(source, warnings), warnings)
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
