"""Writing and validating an SKB bundle, shared by the held-out builders (debian/, wordnet/).

A bundle is a directory with schema.json ({"name", "description", "node_types": [{"name",
"description", "name_attr"}], "edge_types": [{"name", "source", "target", "description"}]}),
nodes.jsonl.gz ({"id", "type", "name", "attrs", "text"}, ids 0..n-1 in file order, attrs
scalar), edges.jsonl.gz ({"src", "type", "dst"}, no duplicates, each (type, source type,
target type) declared in the schema) and build_stats.json.  Standard library only.
"""

from __future__ import annotations

import argparse
import collections
import gzip
import io
import json
import os
import sys
from collections.abc import Callable, Iterable


def expand_schema(spec: dict) -> dict:
    """The bundle's schema from a builder's compact one: each edge type given as (name, [(source, target), ...],
    description) becomes one entry per signature."""
    return {
        "name": spec["name"],
        "description": spec["description"],
        "node_types": spec["node_types"],
        "edge_types": [
            {"name": n, "source": s, "target": t, "description": d}
            for n, pairs, d in spec["edge_types"]
            for s, t in pairs
        ],
    }


def write_bundle(out_dir: str, schema: dict, nodes: list[dict], edges: Iterable[tuple[int, str, int]]) -> None:
    """schema.json, nodes.jsonl.gz and edges.jsonl.gz (edges as (src, type, dst), sorted)."""
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "schema.json"), "w") as f:
        json.dump(schema, f, indent=2)
    with _gzip_text(os.path.join(out_dir, "nodes.jsonl.gz")) as f:
        for nd in nodes:
            f.write(json.dumps(nd, ensure_ascii=False) + "\n")
    with _gzip_text(os.path.join(out_dir, "edges.jsonl.gz")) as f:
        for s, t, d in sorted(edges):
            f.write(json.dumps({"src": s, "type": t, "dst": d}) + "\n")


def _gzip_text(path: str) -> io.TextIOWrapper:
    """A gzip text file whose header carries mtime 0, so rebuilding from the same input gives the same bytes."""
    return io.TextIOWrapper(gzip.GzipFile(path, "wb", mtime=0), encoding="utf-8")


def write_stats(out_dir: str, stats: dict) -> None:
    with open(os.path.join(out_dir, "build_stats.json"), "w") as f:
        json.dump(stats, f, indent=2)


def validate(out_dir: str, unique_names: bool = False) -> list[str]:
    """Problems found in the bundle (at most about 50); unique_names: no two nodes share
    their (type, name)."""
    errs = []
    with open(os.path.join(out_dir, "schema.json")) as f:
        schema = json.load(f)
    for k in ("name", "description", "node_types", "edge_types"):
        if k not in schema:
            errs.append(f"schema misses {k}")
    ntypes = {t["name"] for t in schema["node_types"]}
    for t in schema["node_types"]:
        if set(t) != {"name", "description", "name_attr"} or not t["description"]:
            errs.append(f"node type keys {t}")
    pairs = collections.defaultdict(set)
    for e in schema["edge_types"]:
        if set(e) != {"name", "source", "target", "description"} or not e["description"]:
            errs.append(f"edge type keys {e}")
        if e["source"] not in ntypes or e["target"] not in ntypes:
            errs.append(f"edge type {e['name']} uses unknown node type")
        pairs[e["name"]].add((e["source"], e["target"]))
    types = {}
    names = collections.Counter()
    with gzip.open(os.path.join(out_dir, "nodes.jsonl.gz"), "rt", encoding="utf-8") as f:
        for i, line in enumerate(f):
            nd = json.loads(line)
            if set(nd) != {"id", "type", "name", "attrs", "text"}:
                errs.append(f"node line {i} keys {sorted(nd)}")
            if nd["id"] != i or not isinstance(nd["id"], int):
                errs.append(f"node id {nd['id']} at line {i}")
            if nd["type"] not in ntypes:
                errs.append(f"node {i} unknown type {nd['type']}")
            if not isinstance(nd["name"], str) or not nd["name"] or not isinstance(nd["text"], str):
                errs.append(f"node {i} bad name/text")
            for k, v in nd["attrs"].items():
                if not isinstance(k, str) or not isinstance(v, (str, int, float, bool)):
                    errs.append(f"node {i} attr {k} not scalar")
            types[i] = nd["type"]
            names[(nd["type"], nd["name"])] += 1
            if len(errs) > 50:
                return errs
    if unique_names:
        errs += [f"duplicate node {k}" for k, c in names.items() if c > 1]
    seen = set()
    with gzip.open(os.path.join(out_dir, "edges.jsonl.gz"), "rt", encoding="utf-8") as f:
        for line in f:
            e = json.loads(line)
            key = (e["src"], e["type"], e["dst"])
            if key in seen:
                errs.append(f"duplicate edge {key}")
            seen.add(key)
            if e["src"] not in types or e["dst"] not in types:
                errs.append(f"dangling edge {key}")
            elif (types[e["src"]], types[e["dst"]]) not in pairs.get(e["type"], ()):
                errs.append(f"edge {key} {types[e['src']]}->{types[e['dst']]} not in schema")
            if len(errs) > 50:
                return errs
    return errs


def builder_main(
    doc: str, source: str, build: Callable[[argparse.Namespace], dict], options=None, unique_names=False
):
    """The builders' main: SOURCE OUT_DIR [options] [--validate-only].  build(args) writes
    the bundle and gives its stats (printed) unless --validate-only; then the bundle in
    OUT_DIR is validated, and the script exits non-zero if it is invalid.  options(parser)
    adds the builder's own options."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(source)
    ap.add_argument("out_dir")
    if options:
        options(ap)
    ap.add_argument("--validate-only", action="store_true")
    a = ap.parse_args()
    if not a.validate_only:
        stats = build(a)
        print(json.dumps(stats, indent=2))
    errs = validate(a.out_dir, unique_names)
    if errs:
        print("INVALID bundle:\n  " + "\n  ".join(errs[:50]), file=sys.stderr)
        sys.exit(1)
    print("bundle valid")
