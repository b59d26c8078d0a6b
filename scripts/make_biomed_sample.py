"""Draw a small, connected sample SKB (with recomputed QA) from the real biomedical SKB.

    .venv/bin/python scripts/make_biomed_sample.py --source /work/shared/data/biomed-skb --out data/biomed-sample

The source bundle (`schema.json`, `nodes.jsonl.gz`, `edges.jsonl.gz`, `qa-dev.jsonl`) is described in its
`SOURCES.md`. The script

1. parses every dev question with the template grammar below (derived from `qa-dev.jsonl`), evaluates it on
   the FULL graph and reports how often that reproduces the dev answers exactly;
2. picks ~N questions (deterministic under --seed) that cover every target type and every template family;
3. keeps their answers and constants plus sampled neighbourhoods and distractors (nodes that satisfy only
   one of the two constraints, lexical look-alikes for description look-ups), then joins the pieces into one
   connected component with shortest paths through the full graph;
4. keeps the edges among kept nodes, RECOMPUTES each question's answer set on the subset and drops questions
   whose answer set is empty or larger than 20;
5. writes schema.json (copied), nodes.jsonl.gz, edges.jsonl.gz, qa.jsonl and SOURCES.md to --out.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import re
import shutil
import sys
from collections import Counter, defaultdict, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

MAX_ANSWERS = 20

PLURALS = {
    "genes": "gene",
    "diseases": "disease",
    "phenotypes": "phenotype",
    "biological processes": "biological_process",
    "molecular functions": "molecular_function",
    "cellular components": "cellular_component",
}
SINGULARS = {v.replace("_", " "): v for v in PLURALS.values()}
ONTOLOGY = ("biological_process", "molecular_function", "cellular_component", "phenotype")

EDGE_SIGNATURES = {  # cross-type edges: (source type, target type)
    "gene_participates_in_biological_process": ("gene", "biological_process"),
    "gene_has_molecular_function": ("gene", "molecular_function"),
    "gene_located_in_cellular_component": ("gene", "cellular_component"),
    "gene_associated_with_disease": ("gene", "disease"),
    "disease_has_phenotype": ("disease", "phenotype"),
    "disease_has_mode_of_inheritance": ("disease", "phenotype"),
    "disease_has_clinical_feature": ("disease", "phenotype"),
}
EDGE_NAMES = (*EDGE_SIGNATURES, "is_a", "part_of", "regulates", "positively_regulates", "negatively_regulates")

# --- question grammar -------------------------------------------------------------------------------------------
# Two-constraint questions: "<opener> <target type, plural> <constraint> and <constraint><closer>".
OPENERS = ("Name the ", "Which are the ", "What ", "List the ", "Find ")
CLOSERS = (" are there?", "?", ".")
# Description look-ups: the snippet is a verbatim, lower-cased piece of the answer's text.
DESCRIPTION_RES = (
    re.compile(r'^Which (?P<t>[a-z ]+) is described as: "\.\.\.(?P<s>.+)\.\.\."\?$'),
    re.compile(r'^What is the (?P<t>[a-z ]+) whose description says "(?P<s>.+)"\?$'),
    re.compile(r'^Find the (?P<t>[a-z ]+) described by the phrase "(?P<s>.+)"\.$'),
)
KEYWORD_RE = re.compile(r"^(?:that mention|connected with|related to|whose description mentions) (?P<k>\S+)$")
CHROMOSOME_RE = re.compile(r"^located on chromosome (?P<c>\w+)$")


@dataclass(frozen=True)
class Relation:
    """A relation phrase: `{c}` marks the constant; `out` means target --edge--> constant."""

    pattern: str
    target: str  # target node type, or "*ontology" for is_a / part_of phrases
    edge: str
    out: bool

    def regex(self) -> re.Pattern[str]:
        head, _, tail = self.pattern.partition("{c}")
        return re.compile("^" + re.escape(head) + "(?P<c>.+)" + re.escape(tail) + "$")


# (target type, edge, target --edge--> constant?) -> phrasings; "*ontology" phrases apply to any ontology type.
PHRASES: dict[tuple[str, str, bool], tuple[str, ...]] = {
    ("gene", "gene_participates_in_biological_process", True): (
        "participating in {c}",
        "that take part in {c}",
        "involved in {c}",
    ),
    ("gene", "gene_has_molecular_function", True): (
        "whose product has {c}",
        "with the molecular function {c}",
        "that show {c}",
    ),
    ("gene", "gene_located_in_cellular_component", True): (
        "found in the {c}",
        "whose product is located in the {c}",
        "localised to the {c}",
    ),
    ("gene", "gene_associated_with_disease", True): ("implicated in {c}", "linked to {c}", "associated with {c}"),
    ("disease", "disease_has_mode_of_inheritance", True): (
        "with the mode of inheritance {c}",
        "whose inheritance is {c}",
        "inherited as {c}",
    ),
    ("disease", "gene_associated_with_disease", False): (
        "linked to mutations in {c}",
        "that involve the gene {c}",
        "associated with the gene {c}",
    ),
    ("disease", "disease_has_phenotype", True): ("that show {c}", "with the phenotype {c}", "presenting with {c}"),
    ("phenotype", "disease_has_phenotype", False): ("that are features of {c}", "seen in {c}", "reported for {c}"),
    ("biological_process", "gene_participates_in_biological_process", False): (
        "that the gene {c} participates in",
    ),
    ("molecular_function", "gene_has_molecular_function", False): (
        "that {c} has",
        "of the gene {c}",
        "carried out by the product of {c}",
    ),
    ("cellular_component", "gene_located_in_cellular_component", False): (
        "in which {c} is found",
        "that contain the product of {c}",
        "where the product of {c} is located",
    ),
    ("*ontology", "is_a", True): ("that are subtypes of {c}", "classified under {c}", "that are a kind of {c}"),
    ("*ontology", "is_a", False): (
        "that {c} is a kind of",
        "of which {c} is a subtype",
        "that are parents of {c}",
    ),
    ("*ontology", "part_of", True): ("forming part of {c}", "that are part of {c}", "within {c}"),
    ("*ontology", "part_of", False): ("that have {c} as a part", "of which {c} is a part", "containing {c}"),
}
RELATIONS = [Relation(p, target, edge, out) for (target, edge, out), ps in PHRASES.items() for p in ps]
RELATION_RES = [(r, r.regex()) for r in RELATIONS]


@dataclass(frozen=True)
class Constraint:
    kind: str  # "relation" | "chromosome" | "keyword"
    value: str  # constant name, chromosome or keyword
    edge: str = ""
    out: bool = True
    const_ids: tuple[int, ...] = ()


@dataclass
class Parsed:
    target: str
    template: str  # "description" or "<family>+<family>"
    constraints: list[Constraint] = field(default_factory=list)
    snippet: str = ""

    @property
    def constants(self) -> list[int]:
        return sorted({i for c in self.constraints for i in c.const_ids})


# --- graph ------------------------------------------------------------------------------------------------------
class Graph:
    def __init__(self, nodes: dict[int, dict], edges: list[tuple[int, str, int]]):
        self.nodes = nodes
        self.edges = edges
        self.out: dict[tuple[int, str], set[int]] = defaultdict(set)
        self.inc: dict[tuple[int, str], set[int]] = defaultdict(set)
        self.adj: dict[int, set[int]] = defaultdict(set)
        for s, t, d in edges:
            self.out[(s, t)].add(d)
            self.inc[(d, t)].add(s)
            self.adj[s].add(d)
            self.adj[d].add(s)
        self.by_name: dict[tuple[str, str], list[int]] = defaultdict(list)
        self.by_type: dict[str, list[int]] = defaultdict(list)
        for i, n in nodes.items():
            self.by_name[(n["type"], n["name"])].append(i)
            self.by_type[n["type"]].append(i)
            if n["type"] == "gene" and n["attrs"].get("symbol"):
                self.by_name[("gene", n["attrs"]["symbol"])].append(i)
        self._lower: dict[int, str] = {}

    def lower_doc(self, i: int) -> str:
        if i not in self._lower:
            self._lower[i] = (self.nodes[i]["name"] + ". " + self.nodes[i]["text"]).lower()
        return self._lower[i]

    def lookup(self, node_type: str, name: str) -> tuple[int, ...]:
        return tuple(sorted(set(self.by_name.get((node_type, name), ()))))

    def neighbours(self, i: int, edge: str, out: bool) -> set[int]:
        return (self.out if out else self.inc).get((i, edge), set())


def keyword_match(text_lower: str, keyword: str) -> bool:
    """The keyword rule the dev answers follow: case-insensitive, on regex word boundaries (`\\b`), in the
    node's "name. text" document; a keyword with a hyphen matches as a whole (`fungal-type`), and a
    hyphenated word in the text matches its parts (`21-acetate` mentions `acetate`)."""
    return re.search(r"\b" + re.escape(keyword.lower()) + r"\b", text_lower) is not None


# --- parsing ----------------------------------------------------------------------------------------------------
def _family(c: Constraint) -> str:
    if c.kind != "relation":
        return c.kind
    return c.edge if c.edge in ("is_a", "part_of") else "relation"


def parse_constraint(clause: str, target: str, g: Graph) -> list[Constraint]:
    m = CHROMOSOME_RE.match(clause)
    if m and target == "gene":
        return [Constraint("chromosome", m["c"])]
    found: list[Constraint] = []
    m = KEYWORD_RE.match(clause)
    if m:
        found.append(Constraint("keyword", m["k"]))
    for rel, rx in RELATION_RES:
        if rel.target not in (target, "*ontology") or (rel.target == "*ontology" and target not in ONTOLOGY):
            continue
        m = rx.match(clause)
        if not m:
            continue
        const_type = _constant_type(rel, target)
        ids = g.lookup(const_type, m["c"])
        if ids:
            found.append(Constraint("relation", m["c"], rel.edge, rel.out, ids))
    return found


def _constant_type(rel: Relation, target: str) -> str:
    if rel.edge not in EDGE_SIGNATURES:  # is_a / part_of link terms of one type
        return target
    source, dest = EDGE_SIGNATURES[rel.edge]
    return dest if rel.out else source


def parse_question(question: str, g: Graph) -> list[Parsed]:
    """All readings of a question whose constants exist in `g` (normally exactly one)."""
    for rx in DESCRIPTION_RES:
        m = rx.match(question)
        if m and m["t"] in SINGULARS:
            return [Parsed(SINGULARS[m["t"]], "description", snippet=m["s"])]
    body = next((question[len(o) :] for o in OPENERS if question.startswith(o)), None)
    if body is None:
        return []
    body = next((body[: -len(c)] for c in CLOSERS if body.endswith(c)), body)
    plural = next((p for p in PLURALS if body.startswith(p + " ")), None)
    if plural is None:
        return []
    target, body = PLURALS[plural], body[len(plural) + 1 :]
    readings: list[Parsed] = []
    for m in re.finditer(" and ", body):
        left, right = body[: m.start()], body[m.end() :]
        for a in parse_constraint(left, target, g):
            for b in parse_constraint(right, target, g):
                template = "+".join(sorted((_family(a), _family(b)), key=_FAMILY_ORDER.index))
                readings.append(Parsed(target, template, [a, b]))
    return readings


_FAMILY_ORDER = ["relation", "is_a", "part_of", "chromosome", "keyword"]


# --- evaluation -------------------------------------------------------------------------------------------------
def candidates(c: Constraint, target: str, g: Graph) -> set[int] | None:
    """Nodes satisfying a relational constraint (None for node-local constraints)."""
    if c.kind != "relation":
        return None
    found: set[int] = set()
    for k in c.const_ids:
        found |= g.neighbours(k, c.edge, not c.out)
    return {i for i in found if g.nodes[i]["type"] == target}


def satisfies(i: int, c: Constraint, g: Graph) -> bool:
    if c.kind == "chromosome":
        return g.nodes[i]["attrs"].get("chromosome") == c.value
    if c.kind == "keyword":
        return keyword_match(g.lower_doc(i), c.value)
    return any(i in g.neighbours(k, c.edge, not c.out) for k in c.const_ids)


def evaluate(p: Parsed, g: Graph) -> set[int]:
    if p.template == "description":
        snippet = p.snippet.lower()
        return {i for i in g.by_type[p.target] if snippet in g.nodes[i]["text"].lower()}
    pools = [s for s in (candidates(c, p.target, g) for c in p.constraints) if s is not None]
    pool = set.intersection(*pools) if pools else set(g.by_type[p.target])
    return {i for i in pool if g.nodes[i]["type"] == p.target and all(satisfies(i, c, g) for c in p.constraints)}


# --- loading ----------------------------------------------------------------------------------------------------
def _open(path: Path):
    return gzip.open(path, "rt", encoding="utf-8") if path.name.endswith(".gz") else path.open(encoding="utf-8")


def _find(directory: Path, stem: str) -> Path:
    for name in (f"{stem}.jsonl.gz", f"{stem}.jsonl"):
        if (directory / name).is_file():
            return directory / name
    sys.exit(f"error: neither {stem}.jsonl nor {stem}.jsonl.gz in {directory}")


def load_graph(directory: Path) -> Graph:
    with _open(_find(directory, "nodes")) as fh:
        nodes = {o["id"]: o for o in map(json.loads, fh)}
    with _open(_find(directory, "edges")) as fh:
        edges = [(o["src"], o["type"], o["dst"]) for o in map(json.loads, fh)]
    return Graph(nodes, edges)


# --- question choice --------------------------------------------------------------------------------------------
@dataclass
class Item:
    qa: dict
    parsed: Parsed
    answers: set[int]


def choose(items: list[Item], n: int, rng: random.Random) -> list[Item]:
    """Every template once, then every target type, then templates in proportion to the dev file."""
    pool = sorted(items, key=lambda it: it.qa["id"])
    rng.shuffle(pool)
    chosen: list[Item] = []

    def take(pred: Callable[[Item], bool]) -> None:
        for it in pool:
            if it not in chosen and pred(it) and len(chosen) < n:
                chosen.append(it)
                return

    for template in sorted({it.parsed.template for it in pool}):
        types = {c.parsed.target for c in chosen}
        take(lambda it, t=template, ts=types: it.parsed.template == t and it.parsed.target not in ts)
        take(lambda it, t=template: it.parsed.template == t and all(c.parsed.template != t for c in chosen))
    for target in sorted({it.parsed.target for it in pool}):
        take(lambda it, t=target: it.parsed.target == t and all(c.parsed.target != t for c in chosen))
    share = Counter(it.parsed.template for it in items)
    while len(chosen) < n:  # then the template furthest below its share of the dev file, unseen pairs first
        have = Counter(c.parsed.template for c in chosen)
        for template in sorted(share, key=lambda t: (have[t] - share[t] * n / len(items), t)):
            before, pairs = len(chosen), {(c.parsed.target, c.parsed.template) for c in chosen}
            take(lambda it, t=template, ps=pairs: it.parsed.template == t and (it.parsed.target, t) not in ps)
            take(lambda it, t=template, b=before: it.parsed.template == t and len(chosen) == b)
            if len(chosen) > before:
                break
        else:
            break
    return sorted(chosen, key=lambda it: int(it.qa["id"].rpartition("-")[2]))


# --- subset -----------------------------------------------------------------------------------------------------
def _sample(ids: Iterable[int], k: int, rng: random.Random) -> list[int]:
    ids = sorted(set(ids))
    return rng.sample(ids, k) if len(ids) > k else rng.sample(ids, len(ids))


def _interleave(lists: list[list[int]]) -> list[int]:
    out: list[int] = []
    for row in range(max((len(x) for x in lists), default=0)):
        out.extend(x[row] for x in lists if row < len(x))
    return out


def distractors(it: Item, g: Graph, k: int, rng: random.Random) -> list[int]:
    """Nodes of the target type that satisfy only part of the question, or resemble its answers."""
    p, lists = it.parsed, []
    has_edges = [i for i in g.by_type[p.target] if g.adj.get(i)]
    if p.template == "description":
        words = {w for w in re.findall(r"[a-z0-9]{4,}", p.snippet.lower())}
        scored = [(sum(w in g.lower_doc(i) for w in words), i) for i in has_edges if i not in it.answers]
        top = [i for s, i in sorted(scored, key=lambda x: (-x[0], x[1])) if s >= 2][: 3 * k]
        lists.append(_sample(top, k, rng))
    for c in p.constraints:
        if c.kind == "relation":
            lists.append(_sample(candidates(c, p.target, g) - it.answers, k, rng))
        elif c.kind == "keyword":
            hits = [i for i in has_edges if keyword_match(g.lower_doc(i), c.value)]
            lists.append(_sample(set(hits) - it.answers, k, rng))
        elif c.kind == "chromosome":
            same = {i for i in has_edges if g.nodes[i]["attrs"].get("chromosome") == c.value}
            related: set[int] = set()  # genes on the same chromosome in neighbouring terms
            for r in (x for x in p.constraints if x.kind == "relation"):
                for k_id in r.const_ids:
                    terms = g.neighbours(k_id, "is_a", True) | g.neighbours(k_id, "is_a", False)
                    for t in terms:
                        related |= g.neighbours(t, r.edge, not r.out)
            lists.append(_sample((related & same) - it.answers, k // 2, rng))
            lists.append(_sample(same - it.answers, k // 2, rng))
    return _interleave(lists)


def context(ids: Iterable[int], g: Graph, per_edge: int, rng: random.Random) -> list[int]:
    """A few neighbours of each node per (edge type, direction), so answers and constants are not bare."""
    out: list[int] = []
    for i in sorted(set(ids)):
        groups = [g.neighbours(i, e, d) for e in EDGE_NAMES for d in (True, False)]
        out.extend(_interleave([_sample(ns, per_edge, rng) for ns in groups if ns]))
    return out


def components(keep: set[int], g: Graph) -> list[set[int]]:
    seen: set[int] = set()
    comps: list[set[int]] = []
    for start in sorted(keep):
        if start in seen:
            continue
        comp, queue = {start}, deque([start])
        while queue:
            for j in g.adj.get(queue.popleft(), ()):
                if j in keep and j not in comp:
                    comp.add(j)
                    queue.append(j)
        seen |= comp
        comps.append(comp)
    return sorted(comps, key=lambda c: (-len(c), min(c)))


def connect(keep: set[int], g: Graph) -> tuple[set[int], int]:
    """Join every component to the largest with a shortest path through the full graph."""
    comps = components(keep, g)
    main, added = set(comps[0]), set()
    for comp in comps[1:]:
        if comp & main:
            continue
        parent: dict[int, int | None] = dict.fromkeys(sorted(comp))
        queue, hit = deque(sorted(comp)), None
        while queue and hit is None:
            u = queue.popleft()
            for v in sorted(g.adj.get(u, ())):
                if v not in parent:
                    parent[v] = u
                    if v in main:
                        hit = v
                        break
                    queue.append(v)
        if hit is None:
            continue  # unreachable (isolated in the full graph); reported by the caller
        node: int | None = hit
        while node is not None:
            added.add(node)
            node = parent[node]
        main |= comp | added
    return keep | added, len(comps)


def draw(chosen: list[Item], g: Graph, args: argparse.Namespace, rng: random.Random) -> tuple[set[int], int]:
    core = {i for it in chosen for i in (*it.answers, *it.parsed.constants)}
    optional = []
    for it in chosen:
        near = distractors(it, g, args.distractors, rng)
        own = context([*it.answers, *it.parsed.constants], g, 3, rng)
        optional.append(_interleave([near, own]) + context(near, g, 1, rng))
    budget = int(args.max_nodes * args.fill)
    while True:
        keep = set(core)
        for i in _interleave(optional):
            if len(keep) >= budget:
                break
            keep.add(i)
        keep, n_components = connect(keep, g)
        if len(keep) <= args.max_nodes or budget <= len(core):
            return keep, n_components
        budget -= len(keep) - args.max_nodes


def recompute(chosen: list[Item], sub: Graph) -> tuple[list[dict], list[str]]:
    records, notes = [], []
    for it in chosen:
        readings = parse_question(it.qa["question"], sub)
        answers = evaluate(readings[0], sub) if len(readings) == 1 else set()
        if len(readings) != 1 or not answers or len(answers) > MAX_ANSWERS:
            notes.append(f"dropped {it.qa['id']}: {len(readings)} readings, {len(answers)} answers on the subset")
            continue
        if answers != it.answers:
            notes.append(
                f"{it.qa['id']}: subset answers differ from the dev answers ({len(answers)} vs {len(it.answers)})"
            )
        records.append(
            {
                "id": f"biomed-sample-{len(records)}",
                "question": it.qa["question"],
                "answers": sorted(answers),
                "target_type": it.qa["target_type"],
                "template": readings[0].template,
                "source_id": it.qa["id"],
            }
        )
    return records, notes


@dataclass
class Summary:
    args: argparse.Namespace
    sub: Graph
    records: list[dict]
    agree: Counter
    n_dev: int
    n_components_before: int
    n_components_after: int
    question_nodes_in_largest: bool
    dropped: int
    same_as_dev: bool

    def _counts(self) -> tuple[Counter, Counter, Counter, Counter]:
        nodes = Counter(n["type"] for n in self.sub.nodes.values())
        edges = Counter(t for _, t, _ in self.sub.edges)
        templates = Counter(r["template"] for r in self.records)
        targets = Counter(r["target_type"] for r in self.records)
        return nodes, edges, templates, targets

    def report(self) -> str:
        nodes, edges, templates, targets = self._counts()
        return "\n".join(
            [
                f"nodes by type: {dict(sorted(nodes.items()))}",
                f"edges by type: {dict(sorted(edges.items()))}",
                f"questions: {len(self.records)}; by template {dict(sorted(templates.items()))}",
                f"questions by target type: {dict(sorted(targets.items()))}",
                "files: " + ", ".join(f"{p.name} {p.stat().st_size:,} B" for p in sorted(self.args.out.iterdir())),
            ]
        )

    def sources_md(self) -> str:
        nodes, edges, templates, targets = self._counts()
        source_md = (self.args.source / "SOURCES.md").read_text(encoding="utf-8")
        table = "\n".join(line for line in source_md.splitlines() if line.startswith("|"))
        node_counts = "; ".join(f"{t} {n:,}" for t, n in sorted(nodes.items(), key=lambda x: -x[1]))
        edge_counts = "; ".join(f"{t} {n:,}" for t, n in sorted(edges.items(), key=lambda x: -x[1]))
        by_template = "; ".join(f"{t} {n}" for t, n in sorted(templates.items(), key=lambda x: (-x[1], x[0])))
        by_target = "; ".join(f"{t} {n}" for t, n in sorted(targets.items(), key=lambda x: (-x[1], x[0])))
        a = self.args
        if self.n_components_after == 1:
            connectivity = f"The graph is connected (the drawn pieces formed {self.n_components_before} components"
            connectivity += " before joining)."
        else:
            connectivity = f"The graph has {self.n_components_after} components; the largest holds every"
            connectivity += f" question's answers and constants: {self.question_nodes_in_largest}."
        return f"""# biomed-sample — a small connected sample of biomed-skb

A real, small SKB in the bundle format of ARCHITECTURE.md, drawn from the full biomedical SKB
(`../shared/data/biomed-skb/`, 97,827 nodes, 690,556 edges) by `scripts/make_biomed_sample.py`. Node ids, names,
attributes and texts are the source's, unchanged (ids are not contiguous); `schema.json` is copied as is.

## Sources and licences (as for the full bundle)

{table}

Gene text is assembled from database fields (the sources have no prose gene summaries); some GO terms have no
definition in this GO.db build, their text is the name plus synonyms and `attrs.has_definition` is false.

## Counts

- {len(self.sub.nodes):,} nodes: {node_counts}.
- {len(self.sub.edges):,} edges (every source edge whose two ends were both kept): {edge_counts}.
- {connectivity}
- `qa.jsonl`: {len(self.records)} questions. By template: {by_template}. By target type: {by_target}.
  Templates name the two constraint families: `relation` (through a named gene, disease, phenotype or GO
  term), `is_a` / `part_of` (ontology parents or children of a named term), `chromosome` (gene attribute),
  `keyword` (a word the answer's text mentions); `description` is a look-up by a verbatim text snippet.

## How the subset was drawn

1. Every question of the source `qa-dev.jsonl` was parsed with a template grammar derived from that file
   (description look-ups; two constraints joined by "and", each a relation through a named constant, an
   `is_a` / `part_of` relation, the gene attribute `chromosome`, or a keyword) and evaluated on the full
   graph: the evaluator reproduced the dev answer set exactly for {self.agree.get("agree", 0)} of {self.n_dev}
   questions. Keywords match case-insensitively on regex word boundaries in the node's "name. text";
   description snippets are lower-cased substrings of the text.
2. {a.questions} of the questions with 1–{MAX_ANSWERS} answers were picked (seed {a.seed}): one per template first,
   then one per target type not yet covered, then templates in proportion to their share of the dev file
   (preferring unseen target type × template pairs).
3. Kept: their answers and constants; distractors of the target type (up to {a.distractors} per constraint)
   that satisfy only one constraint (other genes in the process, other genes on the same chromosome, other
   nodes that mention the keyword, other subtypes of the constant) or, for description look-ups, share words
   with the snippet; up to 3 sampled neighbours per edge type and direction of each answer and constant, and
   1 of each distractor. These were added round-robin across questions up to {a.fill:.0%} of
   `--max-nodes {a.max_nodes}`; the pieces were then joined to the largest component by shortest paths
   through the full graph.
4. Edges: those of the source among kept nodes. Answers were then RECOMPUTED on this subset's own graph
   (constants found by exact name, or gene symbol, in the subset); questions with no answer or more than
   {MAX_ANSWERS} are dropped ({self.dropped} dropped). Every kept question's recomputed answer set equals its
   dev answer set: {self.same_as_dev}. `source_id` names the dev question, `template` its template.

The answer sets are complete for this subset, not for the full graph's benchmark; scores on it are not
comparable with the full-bundle reference points.

## Regenerate

```
.venv/bin/python scripts/make_biomed_sample.py --source /work/shared/data/biomed-skb --out data/biomed-sample \\
    --questions {a.questions} --max-nodes {a.max_nodes} --seed {a.seed} --distractors {a.distractors} --fill {a.fill}
```
"""


def _write_jsonl_gz(path: Path, rows: Iterable[dict]) -> None:
    with path.open("wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz:
        for row in rows:
            gz.write((json.dumps(row, ensure_ascii=False) + "\n").encode("utf-8"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter
    )
    ap.add_argument("--source", type=Path, required=True, help="the full biomed-skb bundle")
    ap.add_argument("--out", type=Path, required=True, help="output bundle directory (created or overwritten)")
    ap.add_argument("--questions", type=int, default=20, help="dev questions to draw (default 20)")
    ap.add_argument("--max-nodes", type=int, default=4000, help="upper bound on kept nodes (default 4000)")
    ap.add_argument("--seed", type=int, default=13, help="sampling seed (default 13)")
    ap.add_argument("--distractors", type=int, default=60, help="distractors per constraint (default 60)")
    ap.add_argument("--fill", type=float, default=0.8, help="fill this share of --max-nodes before joining")
    args = ap.parse_args(argv)
    rng = random.Random(args.seed)

    g = load_graph(args.source)
    with (args.source / "qa-dev.jsonl").open(encoding="utf-8") as fh:
        dev = [json.loads(line) for line in fh if line.strip()]
    items, agree = [], Counter()
    for qa in dev:
        readings = parse_question(qa["question"], g)
        if len(readings) != 1:
            agree["unparsed"] += 1
            continue
        answers = evaluate(readings[0], g)
        ok = answers == set(qa["answers"])
        agree["agree" if ok else "disagree"] += 1
        if ok and 1 <= len(answers) <= MAX_ANSWERS:
            items.append(Item(qa, readings[0], answers))
    print(f"full graph: evaluator vs qa-dev answers: {dict(agree)} of {len(dev)}")

    chosen = choose(items, args.questions, rng)
    keep, n_before = draw(chosen, g, args, rng)
    sub = Graph({i: g.nodes[i] for i in sorted(keep)}, [e for e in g.edges if e[0] in keep and e[2] in keep])
    comps = components(keep, sub)
    question_nodes = {i for it in chosen for i in (*it.answers, *it.parsed.constants)}
    print(
        f"subset: {len(keep)} nodes, {len(sub.edges)} edges; components before joining {n_before}, after "
        f"{len(comps)}; largest holds {len(comps[0])} nodes and all question nodes: {question_nodes <= comps[0]}"
    )
    records, notes = recompute(chosen, sub)
    for note in notes:
        print(note)
    dev_answers = {it.qa["id"]: it.answers for it in chosen}
    same = all(set(r["answers"]) == dev_answers[r["source_id"]] for r in records)
    print(
        f"recomputed on the subset: {len(records)} kept, {len(chosen) - len(records)} dropped; same as dev: {same}"
    )

    args.out.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(args.source / "schema.json", args.out / "schema.json")
    _write_jsonl_gz(args.out / "nodes.jsonl.gz", (sub.nodes[i] for i in sorted(sub.nodes)))
    _write_jsonl_gz(args.out / "edges.jsonl.gz", ({"src": s, "type": t, "dst": d} for s, t, d in sub.edges))
    with (args.out / "qa.jsonl").open("w", encoding="utf-8") as fh:
        fh.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    summary = Summary(
        args,
        sub,
        records,
        agree,
        len(dev),
        n_before,
        len(comps),
        question_nodes <= comps[0],
        len(chosen) - len(records),
        same,
    )
    (args.out / "SOURCES.md").write_text(summary.sources_md(), encoding="utf-8")
    print(summary.report())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
