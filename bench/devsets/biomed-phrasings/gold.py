#!/usr/bin/env python3
"""Compute gold answers for the biomed-phrasings development set.

usage: python3 gold.py [BUNDLE_DIR] [--specs specs.jsonl] [--out qa.jsonl]

BUNDLE_DIR defaults to /work/shared/data/biomed-skb. Reads specs.jsonl next to this
script, evaluates every spec over the bundle's nodes/edges and writes qa.jsonl
(one line per question, in spec order, answers sorted ascending).

Spec semantics (all constraints of a spec are ANDed; candidates are all nodes of
target_type):
  {"edge": E, "dir": "out", "node": ...}  target -[E]-> node
  {"edge": E, "dir": "in",  "node": ...}  node -[E]-> target
      node = {"id": N, "name": "<exact node name>"}   a named constant (name is checked)
           | {"var": {"type": T2, "constraints": [...]}}  an unnamed intermediate:
             some node of type T2 satisfying the nested constraints.
      Edges are single hops (is_a / part_of are NOT closed transitively).
  {"attr": A, "op": "=", "value": V}        case-insensitive equality
  {"attr": A, "op": "contains", "value": V} case-insensitive substring
  {"attr": A, "op": "prefix", "value": V}   case-insensitive prefix
  {"attr": A, "op": ">" | "<", "value": V}  numeric comparison (non-numeric values never match)
      For list-valued attributes (aliases, ec_numbers, uniprot_ids, ensembl_ids split on
      ", "; synonyms split on "; ") the operator is applied to each item and matches if
      any item matches.
  {"text_contains": W}  W occurs in the node's text, case-insensitive, not inside a
      longer alphanumeric token (so "kinase" does not match "kinases").

The script refuses (prints the offending questions, exits 1, writes nothing) when a
constant's name differs from the node's name, a constant has the wrong type for the
edge, an answer set is empty or has more than 60 answers, or ids are duplicated.
"""

import gzip
import json
import os
import re
import sys
from collections import defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_BUNDLE = "/work/shared/data/biomed-skb"
MAX_ANSWERS = 60
LIST_ATTRS = {"aliases": ", ", "ec_numbers": ", ", "uniprot_ids": ", ", "ensembl_ids": ", ", "synonyms": "; "}


class KB:
    def __init__(self, bundle):
        self.nodes = {}
        self.by_type = defaultdict(set)
        with gzip.open(os.path.join(bundle, "nodes.jsonl.gz"), "rt", encoding="utf-8") as f:
            for line in f:
                n = json.loads(line)
                self.nodes[n["id"]] = n
                self.by_type[n["type"]].add(n["id"])
        self.out = defaultdict(lambda: defaultdict(set))
        self.inn = defaultdict(lambda: defaultdict(set))
        with gzip.open(os.path.join(bundle, "edges.jsonl.gz"), "rt", encoding="utf-8") as f:
            for line in f:
                e = json.loads(line)
                self.out[e["type"]][e["src"]].add(e["dst"])
                self.inn[e["type"]][e["dst"]].add(e["src"])
        with open(os.path.join(bundle, "schema.json"), encoding="utf-8") as f:
            schema = json.load(f)
        self.signatures = {(e["name"], e["source"], e["target"]) for e in schema["edge_types"]}


class SpecError(Exception):
    pass


def _attr_values(node, attr):
    v = node["attrs"].get(attr)
    if v is None:
        return []
    if attr in LIST_ATTRS and isinstance(v, str):
        return [x.strip() for x in v.split(LIST_ATTRS[attr]) if x.strip()]
    return [v]


def _num(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return None


def _attr_match(node, c):
    op, want = c["op"], c["value"]
    for v in _attr_values(node, c["attr"]):
        if op in (">", "<"):
            a, b = _num(v), _num(want)
            if a is None or b is None:
                continue
            if (op == ">" and a > b) or (op == "<" and a < b):
                return True
            continue
        s, w = str(v).lower(), str(want).lower()
        if op == "=" and s == w:
            return True
        if op == "contains" and w in s:
            return True
        if op == "prefix" and s.startswith(w):
            return True
        if op not in ("=", "contains", "prefix"):
            raise SpecError(f"unknown op {op!r}")
    return False


def _word_re(word):
    return re.compile(r"(?<![A-Za-z0-9])" + re.escape(word) + r"(?![A-Za-z0-9])", re.I)


def evaluate(kb, target_type, constraints, errors):
    if target_type not in kb.by_type:
        raise SpecError(f"unknown type {target_type!r}")
    cand = set(kb.by_type[target_type])
    for c in constraints:
        if "edge" in c:
            e, d, node = c["edge"], c["dir"], c["node"]
            if d not in ("out", "in"):
                raise SpecError(f"bad dir {d!r}")
            if "var" in node:
                vt = node["var"]["type"]
                others = evaluate(kb, vt, node["var"].get("constraints", []), errors)
            else:
                nid = node["id"]
                if nid not in kb.nodes:
                    raise SpecError(f"unknown node id {nid!r}")
                real = kb.nodes[nid]["name"]
                if node.get("name") != real:
                    errors.append("name mismatch for {}: spec {!r}, node {!r}".format(nid, node.get("name"), real))
                vt = kb.nodes[nid]["type"]
                others = {nid}
            sig = (e, target_type, vt) if d == "out" else (e, vt, target_type)
            if sig not in kb.signatures:
                errors.append(f"edge {e} {d} between {target_type} and {vt} not in schema")
            index = kb.inn[e] if d == "out" else kb.out[e]
            hit = set()
            for o in others:
                hit |= index.get(o, set())
            cand &= hit
        elif "attr" in c:
            cand = {i for i in cand if _attr_match(kb.nodes[i], c)}
        elif "text_contains" in c:
            rx = _word_re(c["text_contains"])
            cand = {i for i in cand if rx.search(kb.nodes[i]["text"] or "")}
        else:
            raise SpecError(f"unknown constraint {c!r}")
    return cand


def main(argv):
    args = list(argv)
    specs_path = os.path.join(HERE, "specs.jsonl")
    out_path = os.path.join(HERE, "qa.jsonl")
    bundle = DEFAULT_BUNDLE
    while args:
        a = args.pop(0)
        if a == "--specs":
            specs_path = args.pop(0)
        elif a == "--out":
            out_path = args.pop(0)
        else:
            bundle = a
    kb = KB(bundle)
    rows, problems, seen = [], [], set()
    with open(specs_path, encoding="utf-8") as f:
        specs = [json.loads(line) for line in f if line.strip()]
    for s in specs:
        errors = []
        if s["id"] in seen:
            errors.append("duplicate id")
        seen.add(s["id"])
        try:
            ans = sorted(evaluate(kb, s["spec"]["target_type"], s["spec"]["constraints"], errors))
        except SpecError as ex:
            errors.append(str(ex))
            ans = []
        if not ans and not errors:
            errors.append("empty answer set")
        if len(ans) > MAX_ANSWERS:
            errors.append(f"{len(ans)} answers (> {MAX_ANSWERS})")
        if errors:
            problems.append((s, errors, ans))
            continue
        rows.append(
            {
                "id": s["id"],
                "question": s["question"],
                "answers": ans,
                "target_type": s["spec"]["target_type"],
                "meta": {"family": s["family"], "spec": s["spec"]},
            }
        )
    if problems:
        for s, errors, ans in problems:
            print("REFUSED {}: {}".format(s["id"], s["question"]))
            for e in errors:
                print("   -", e)
            for i in ans[:80]:
                print("     {}  {}".format(i, kb.nodes[i]["name"]))
        print(f"{len(problems)} of {len(specs)} specs refused; nothing written")
        return 1
    with open(out_path, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n")
    fam = defaultdict(int)
    for r in rows:
        fam[r["meta"]["family"]] += 1
    print(f"wrote {len(rows)} questions to {out_path}")
    for k in sorted(fam):
        print(f"  {k:<18} {fam[k]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
