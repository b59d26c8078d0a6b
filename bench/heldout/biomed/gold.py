#!/usr/bin/env python3
"""Compute gold answers for the held-out biomed question set.

Usage: python3 gold.py [BUNDLE_DIR] [--specs specs.jsonl] [--out qa.jsonl] [--max 60]

Reads the biomed-skb bundle (nodes.jsonl.gz, edges.jsonl.gz, schema.json), evaluates the
constraint spec of every question in specs.jsonl, and writes qa.jsonl with the sorted
answer ids.  Stdlib only, deterministic.  See README.md for the spec language.

It fails loudly (exit status 2, nothing written) when
  * a spec references a node id that does not exist, whose type is wrong, or whose name
    differs from the name stored in the spec;
  * the way the question mentions a constant ("mention") is not found in the question, or
    is not a legitimate name for the node (name / synonym / symbol / alias / a one-or-two
    character typo of one of those), or is ambiguous (another node of the same type has
    that name, symbol or synonym);
  * an edge type is used with a (source, target) pair the schema does not declare;
  * a spec is malformed, or ids are duplicated.
Questions with 0 answers or more than --max answers are dropped from qa.jsonl and listed
on stderr (and in qa.flagged.jsonl).
"""

import argparse
import collections
import gzip
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


class SpecError(Exception):
    pass


WARNINGS = []


# ----------------------------------------------------------------------------- loading
class Graph:
    def __init__(self, bundle):
        self.nodes = {}
        with gzip.open(os.path.join(bundle, "nodes.jsonl.gz"), "rt", encoding="utf-8") as f:
            for line in f:
                n = json.loads(line)
                self.nodes[n["id"]] = n
        self.out = collections.defaultdict(lambda: collections.defaultdict(set))
        self.inn = collections.defaultdict(lambda: collections.defaultdict(set))
        with gzip.open(os.path.join(bundle, "edges.jsonl.gz"), "rt", encoding="utf-8") as f:
            for line in f:
                e = json.loads(line)
                self.out[e["src"]][e["type"]].add(e["dst"])
                self.inn[e["dst"]][e["type"]].add(e["src"])
        with open(os.path.join(bundle, "schema.json"), encoding="utf-8") as f:
            schema = json.load(f)
        self.signatures = collections.defaultdict(set)  # edge -> {(src_type, dst_type)}
        for et in schema["edge_types"]:
            self.signatures[et["name"]].add((et["source"], et["target"]))
        self.node_types = {t["name"] for t in schema["node_types"]}
        self.by_type = collections.defaultdict(set)
        for i, n in self.nodes.items():
            self.by_type[n["type"]].add(i)
        # lower-cased surface forms per type, for ambiguity checks
        self.surface = collections.defaultdict(lambda: collections.defaultdict(set))
        for i, n in self.nodes.items():
            for s in surface_forms(n):
                self.surface[n["type"]][norm(s)].add(i)


def split_list(value, sep):
    if value is None:
        return []
    return [p.strip() for p in str(value).split(sep) if p.strip()]


def synonyms(n):
    return split_list(n["attrs"].get("synonyms"), ";")


def aliases(n):
    return split_list(n["attrs"].get("aliases"), ",")


def surface_forms(n):
    forms = [n["name"]]
    if "symbol" in n["attrs"]:
        forms.append(n["attrs"]["symbol"])
    forms += synonyms(n)
    return forms


def norm(s):
    s = s.lower().replace("\u2019", "'").replace("\u2018", "'")
    return re.sub(r"\s+", " ", s).strip()


def edit_distance(a, b):
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


# ----------------------------------------------------------------------------- checks
MENTION_KINDS = {"name", "synonym", "symbol", "alias", "typo", "paraphrase"}


def check_constant(g, ref, expected_type, question, qid):
    """ref = {"id", "name", optional "mention", "mention_kind"}"""
    for k in ("id", "name"):
        if k not in ref:
            raise SpecError(f"{qid}: constant without {k!r}: {ref}")
    i = ref["id"]
    if i not in g.nodes:
        raise SpecError(f"{qid}: node id {i} does not exist")
    n = g.nodes[i]
    if n["name"] != ref["name"]:
        raise SpecError(f"{qid}: node {i} is named {n['name']!r}, spec says {ref['name']!r}")
    if expected_type is not None and n["type"] not in expected_type:
        raise SpecError(f"{qid}: node {i} ({n['name']}) has type {n['type']}, edge needs {sorted(expected_type)}")
    mention = ref.get("mention", ref["name"])
    kind = ref.get("mention_kind", "name")
    if kind not in MENTION_KINDS:
        raise SpecError(f"{qid}: unknown mention_kind {kind!r}")
    if norm(mention) not in norm(question):
        raise SpecError(f"{qid}: mention {mention!r} of node {i} not found in question {question!r}")
    m = norm(mention)
    if kind == "name":
        ok = m == norm(n["name"])
    elif kind == "synonym":
        ok = m in {norm(s) for s in synonyms(n)}
    elif kind == "symbol":
        ok = m == norm(n["attrs"].get("symbol", ""))
    elif kind == "alias":
        ok = m in {norm(s) for s in aliases(n)}
    elif kind == "typo":
        ok = any(0 < edit_distance(m, norm(s)) <= 2 for s in surface_forms(n) + aliases(n))
    else:  # paraphrase: must carry a note explaining it
        ok = bool(ref.get("note"))
    if not ok:
        raise SpecError(f"{qid}: mention {mention!r} is not a valid {kind} of node {i} ({n['name']!r})")
    # ambiguity: the mentioned form must not name another node of the same type
    if kind in ("name", "synonym", "symbol"):
        others = g.surface[n["type"]].get(m, set()) - {i}
        if others:
            raise SpecError(f"{qid}: mention {mention!r} is ambiguous; also names {sorted(others)}")
    if kind == "alias":
        others = {
            j
            for j in g.by_type["gene"]
            if j != i
            and (m in {norm(s) for s in aliases(g.nodes[j])} or m == norm(g.nodes[j]["attrs"].get("symbol", "")))
        }
        if others:
            raise SpecError(f"{qid}: alias {mention!r} is shared with genes {sorted(others)[:5]}")
    if kind == "symbol":
        # official symbols win, but say so when the symbol is also another gene's alias
        others = {j for j in g.by_type["gene"] if j != i and m in {norm(s) for s in aliases(g.nodes[j])}}
        if others:
            WARNINGS.append(
                f"{qid}: symbol {mention!r} is also an alias of genes "
                f"{sorted(g.nodes[j]['attrs']['symbol'] for j in others)}"
            )
    if kind == "name":
        others = g.surface[n["type"]].get(norm(n["name"]), set()) - {i}
        if others:
            raise SpecError(f"{qid}: name {n['name']!r} is ambiguous; also {sorted(others)}")


# ----------------------------------------------------------------------------- evaluation
def attr_value(n, attr):
    if attr == "name":
        return n["name"]
    return n["attrs"].get(attr)


def attr_ok(n, c):
    v = attr_value(n, c["attr"])
    op = c["op"]
    val = c.get("value")
    if op == "exists":
        return v is not None
    if v is None:
        return False
    s = str(v)
    if op == "=":
        return s == str(val)
    if op == "!=":
        return s != str(val)
    if op == "in":
        return s in [str(x) for x in val]
    if op == "contains":
        return str(val).lower() in s.lower()
    if op == "prefix":
        return s.lower().startswith(str(val).lower())
    if op in ("any_eq", "any_prefix"):
        parts = split_list(s, c.get("sep", ","))
        if op == "any_eq":
            return any(p == str(val) for p in parts)
        return any(p.startswith(str(val)) for p in parts)
    if op in ("<", "<=", ">", ">="):
        try:
            x = float(s)
        except ValueError:
            return False
        y = float(val)
        return {"<": x < y, "<=": x <= y, ">": x > y, ">=": x >= y}[op]
    raise SpecError(f"unknown op {op!r}")


def text_ok(n, c):
    field = c.get("field", "text")
    hay = n["name"] if field == "name" else (n.get("text") or "")
    return re.search(r"\b" + re.escape(c["text"]) + r"\b", hay, re.IGNORECASE) is not None


def edge_names(c):
    """ "edge" is one edge type or a list of edge types (any of them)."""
    e = c["edge"]
    return list(e) if isinstance(e, list) else [e]


def other_types(g, edge, direction, target_type, qid):
    if isinstance(edge, list):
        sets = [other_types(g, e, direction, target_type, qid) for e in edge]
        return set.intersection(*sets)
    sigs = g.signatures.get(edge)
    if not sigs:
        raise SpecError(f"{qid}: unknown edge type {edge!r}")
    if direction == "out":
        res = {d for s, d in sigs if s == target_type}
    elif direction == "in":
        res = {s for s, d in sigs if d == target_type}
    else:
        raise SpecError(f"{qid}: dir must be 'out' or 'in', got {direction!r}")
    if not res:
        raise SpecError(f"{qid}: edge {edge!r} dir {direction} not valid for target type {target_type}")
    return res


def evaluate(g, spec, question, qid, depth=0):
    ttype = spec.get("target_type") or spec.get("type")
    if ttype not in g.node_types:
        raise SpecError(f"{qid}: bad target type {ttype!r}")
    cons = spec.get("constraints")
    if not cons:
        raise SpecError(f"{qid}: spec without constraints")
    cand = None
    filters = []
    for c in cons:
        if "edge" in c:
            otypes = other_types(g, c["edge"], c["dir"], ttype, qid)
            node = c["node"]
            if "var" in node:
                var = node["var"]
                vt = var.get("type") or var.get("target_type")
                if vt not in otypes:
                    raise SpecError(f"{qid}: variable of type {vt} cannot sit at the other end of {c['edge']}")
                others = evaluate(g, var, question, qid, depth + 1)
            else:
                check_constant(g, node, otypes, question, qid)
                others = {node["id"]}
            adj = g.inn if c["dir"] == "out" else g.out  # target -edge-> other  => other's in-edges
            s = set()
            for o in others:
                for en in edge_names(c):
                    s |= {x for x in adj[o].get(en, ()) if g.nodes[x]["type"] == ttype}
            cand = s if cand is None else cand & s
        elif "attr" in c or "text" in c or "not" in c:
            filters.append(c)
        else:
            raise SpecError(f"{qid}: malformed constraint {c}")
    if cand is None:
        cand = set(g.by_type[ttype])

    def passes(n, c):
        if "not" in c:
            inner = c["not"]
            if "edge" in inner:
                sub = evaluate(g, {"target_type": ttype, "constraints": [inner]}, question, qid, depth + 1)
                return n["id"] not in sub
            return not passes(n, inner)
        if "attr" in c:
            return attr_ok(n, c)
        return text_ok(n, c)

    return {i for i in cand if all(passes(g.nodes[i], c) for c in filters)}


def count_hops(spec):
    h = 0
    for c in spec["constraints"]:
        if "edge" in c and "var" in c["node"]:
            h = max(h, 1 + count_hops(c["node"]["var"]))
    return h


# ----------------------------------------------------------------------------- main
def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bundle", nargs="?", default="/work/shared/data/biomed-skb")
    ap.add_argument("--specs", default=os.path.join(HERE, "specs.jsonl"))
    ap.add_argument("--out", default=os.path.join(HERE, "qa.jsonl"))
    ap.add_argument("--max", type=int, default=60)
    args = ap.parse_args()

    g = Graph(args.bundle)
    specs = []
    with open(args.specs, encoding="utf-8") as f:
        for ln, line in enumerate(f, 1):
            if line.strip():
                try:
                    specs.append(json.loads(line))
                except json.JSONDecodeError as e:
                    print(f"specs.jsonl line {ln}: {e}", file=sys.stderr)
                    sys.exit(2)
    seen = set()
    rows, flagged, errors = [], [], []
    for s in specs:
        qid = s.get("id")
        if qid in seen:
            errors.append(f"duplicate id {qid}")
            continue
        seen.add(qid)
        try:
            ans = evaluate(g, s["spec"], s["question"], qid)
        except SpecError as e:
            errors.append(str(e))
            continue
        row = {
            "id": qid,
            "question": s["question"],
            "answers": sorted(ans),
            "target_type": s["spec"]["target_type"],
            "meta": {"family": s["family"], "spec": s["spec"]},
        }
        if not ans or len(ans) > args.max:
            flagged.append({"id": qid, "n_answers": len(ans), "question": s["question"]})
        else:
            rows.append(row)
    if errors:
        for e in errors:
            print("ERROR:", e, file=sys.stderr)
        print(f"{len(errors)} spec error(s); nothing written", file=sys.stderr)
        sys.exit(2)
    with open(args.out, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n")
    flag_path = os.path.splitext(args.out)[0] + ".flagged.jsonl"
    with open(flag_path, "w", encoding="utf-8") as f:
        for r in flagged:
            f.write(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n")
    for w in sorted(set(WARNINGS)):
        print("warning:", w, file=sys.stderr)
    for r in flagged:
        print(f"DROPPED {r['id']}: {r['n_answers']} answers: {r['question']}", file=sys.stderr)
    fam = collections.Counter(r["meta"]["family"] for r in rows)
    tt = collections.Counter(r["target_type"] for r in rows)
    sizes = sorted(len(r["answers"]) for r in rows)
    print(f"wrote {len(rows)} questions to {args.out} ({len(flagged)} dropped)")
    print("families:", dict(sorted(fam.items())))
    print("target types:", dict(sorted(tt.items())))
    if sizes:
        buckets = collections.Counter(
            "1"
            if n == 1
            else "2-5"
            if n <= 5
            else "6-10"
            if n <= 10
            else "11-20"
            if n <= 20
            else "21-30"
            if n <= 30
            else "31-60"
            for n in sizes
        )
        print(
            "answer sizes:",
            {k: buckets[k] for k in ["1", "2-5", "6-10", "11-20", "21-30", "31-60"]},
            f"median {sizes[len(sizes) // 2]}, max {sizes[-1]}",
        )


if __name__ == "__main__":
    main()
