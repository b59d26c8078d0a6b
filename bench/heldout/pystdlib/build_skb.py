#!/usr/bin/env python3
"""Build a held-out SKB bundle from the Python 3.11 standard library's source code.

Usage:
    build_skb.py OUT_DIR [--stdlib PATH] [--validate-only]

Every .py file under the running interpreter's stdlib directory
(``sysconfig.get_paths()["stdlib"]``, or --stdlib) is parsed with ``ast``; no module under
study is imported.  Packages, modules, public classes, exceptions, module-level functions and
methods become nodes; sub-module, definition, method, subclass, raise, override and import
relations become edges (see README.md).  The built-in classes and exceptions are modelled as
nodes of a ``builtins`` module (read from the always-loaded ``builtins`` module).  Standard
library only; the output is byte-identical across runs and PYTHONHASHSEED values.
"""

from __future__ import annotations

import argparse
import collections
import gc
import json
import os
import sys
import sysconfig
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bundle_writer
import skb_text
import stdlib_parse as sp

SCHEMA = {
    "name": "python-stdlib",
    "description": (
        "The Python 3.11 standard library as seen in its source code: packages, modules, public "
        "classes, exception classes, module-level functions and methods, with which module defines "
        "what, which class a method belongs to, class inheritance, which exceptions a function or "
        "method raises, which methods override a base-class method, and which modules import which."
    ),
    "node_types": [
        {
            "name": "package",
            "name_attr": "name",
            "description": "A package of the standard library (a directory with __init__.py), named by its dotted import path such as email.mime or concurrent.futures.",
        },
        {
            "name": "module",
            "name_attr": "name",
            "description": "A standard-library module (a .py file, or the builtins module), named by its dotted import path such as json.decoder or collections.abc; attributes give its line count and numbers of classes and functions.",
        },
        {
            "name": "class",
            "name_attr": "name",
            "description": "A public class (a type) that is not an exception, including built-in types such as dict; named by its class name, or module.Class when several classes share that name.",
        },
        {
            "name": "exception",
            "name_attr": "name",
            "description": "An exception class (an error or warning type) deriving from BaseException, built-in or defined in a module; named by its class name, or module.Class when several share that name.",
        },
        {
            "name": "function",
            "name_attr": "name",
            "description": "A public module-level function; named by its function name, or module.function when several functions share that name.",
        },
        {
            "name": "method",
            "name_attr": "name",
            "description": "A method defined in a class body (public or a dunder method such as __init__), named Class.method, or module.Class.method when that is ambiguous; attributes tell static, class, property, async and abstract methods apart.",
        },
    ],
    "edge_types": [
        ("submodule_of", [], "The module or package is a direct child of the package."),
        ("defined_in", [], "The class, exception or function is defined in (exported by) the module or package."),
        ("method_of", [], "The method is defined in the body of the class or exception class."),
        ("subclass_of", [], "The class derives (inherits) directly from the base class."),
        ("raises", [], "The function or method contains a raise statement for the exception."),
        ("overrides", [], "The method overrides (redefines) the method of the same name of a base class."),
        ("imports", [], "The module or package imports the other module or package at its top level."),
    ],
}
TYPE_ORDER = ["package", "module", "class", "exception", "function", "method"]


def build(stdlib: str, out_dir: str) -> dict:
    t0 = time.time()
    mods = sp.load(stdlib)
    R = sp.Resolver(mods)
    public = sorted(n for n in mods if not mods[n].private)

    # homes: where each top-level definition lives for the user (private modules' public
    # definitions live in the public module that re-exports them)
    cand = collections.defaultdict(set)
    for mn in public:
        m = mods[mn]
        for s in m.stars:
            if s in mods and mods[s].private:
                for name in mods[s].defs:
                    if not name.startswith("_") and R.exported(s, name) and name not in m.defs:
                        cand[(s, name)].add((0, len(mn), mn))
        for name in sorted(m.table):
            if name.startswith("_") or name in m.defs:
                continue
            for ent in m.table[name]:
                if ent[0] == "imp" and sp.private(ent[1]):  # imported straight from a private module
                    r = R.lookup(ent[1], ent[2])
                    if r and r[0] == "def" and sp.private(r[1]) and not r[2].startswith("_"):
                        listed = m.all_names is not None and name in m.all_names
                        cand[(r[1], r[2])].add((0 if listed else 1, len(mn), mn))
    home = {}
    for mn in sorted(mods):
        for name in mods[mn].defs:
            if name.startswith("_"):
                continue
            if not mods[mn].private:
                home[(mn, name)] = mn
            elif cand.get((mn, name)):
                home[(mn, name)] = min(cand[(mn, name)])[2]  # star or __all__ first, then shortest
    taken = set()
    for k in sorted(home, key=lambda k: (sp.private(k[0]), k)):  # a public module's own name wins
        if (home[k], k[1]) in taken:
            del home[k]
        else:
            taken.add((home[k], k[1]))

    def is_class(ref):
        return ref and (
            (ref[0] == "def" and isinstance(mods[ref[1]].defs.get(ref[2]), sp.ast.ClassDef))
            or (ref[0] == "builtin" and isinstance(getattr(sp.builtins, ref[1]), type))
        )

    bases_memo = {}

    def bases(ref):  # resolved direct bases (class refs)
        if ref not in bases_memo:
            if ref[0] == "builtin":
                bs = [("builtin", b.__name__) for b in getattr(sp.builtins, ref[1]).__bases__ if b is not object]
            else:
                bs = [R.expr(ref[1], b) for b in mods[ref[1]].defs[ref[2]].bases]
            bases_memo[ref] = [b for b in bs if is_class(b)]
        return bases_memo[ref]

    def ancestors(ref):
        out, queue, seen = [], list(bases(ref)), {ref}
        while queue:
            b = queue.pop(0)
            if b not in seen:
                seen.add(b)
                out.append(b)
                queue.extend(bases(b))
        return out

    def is_exc(ref):
        if ref[0] == "builtin":
            return issubclass(getattr(sp.builtins, ref[1]), BaseException)
        return any(b[0] == "builtin" and is_exc(b) for b in ancestors(ref))

    # nodes: key -> record
    recs = {}
    for mn in public:
        recs[("mod", mn)] = {"type": "package" if mods[mn].is_pkg else "module", "plain": mn, "mod": mn}
    recs[("mod", "builtins")] = {"type": "module", "plain": "builtins", "mod": "builtins"}
    for bn, _ in sp.builtin_classes():
        ref = ("builtin", bn)
        recs[ref] = {"type": "exception" if is_exc(ref) else "class", "plain": bn, "home": "builtins"}
    for (mn, name), h in sorted(home.items()):
        node = mods[mn].defs[name]
        ref = ("def", mn, name)
        if isinstance(node, sp.ast.ClassDef):
            recs[ref] = {"type": "exception" if is_exc(ref) else "class", "plain": name, "home": h, "ast": node}
            for mname, defs in sp.class_methods(node).items():
                if sp.public_method(mname):
                    recs[("meth", mn, name, mname)] = {
                        "type": "method",
                        "plain": f"{name}.{mname}",
                        "home": h,
                        "ast": defs[0],
                        "all_defs": defs,
                        "cls": ref,
                    }
        else:
            recs[ref] = {"type": "function", "plain": name, "home": h, "ast": node}
    counts = collections.Counter((r["type"], r["plain"]) for r in recs.values() if r["type"] != "method")
    for k, r in sorted(recs.items(), key=lambda kr: kr[1]["type"] == "method"):
        if r["type"] == "method":  # Class.method, with the class's own (maybe qualified) name
            r["name"] = f"{recs[r['cls']]['name']}.{k[3]}"
            continue
        clash = counts[(r["type"], r["plain"])] > 1
        r["name"] = (
            f"{r['home']}.{r['plain']}" if clash and r.get("home", "builtins") != "builtins" else r["plain"]
        )
    keys = sorted(recs, key=lambda k: (TYPE_ORDER.index(recs[k]["type"]), recs[k]["name"], repr(k)))
    nid = {k: i for i, k in enumerate(keys)}

    edges = set()

    def edge(a, t, b):
        if a in nid and b in nid and a != b:
            edges.add((nid[a], t, nid[b]))

    for mn in public:
        edge(("mod", mn), "submodule_of", ("mod", mn.rpartition(".")[0]))
        for imp in sorted(mods[mn].imports):
            edge(("mod", mn), "imports", ("mod", imp))
    for k in keys:
        r = recs[k]
        if r["type"] in ("class", "exception", "function"):
            edge(k, "defined_in", ("mod", r["home"]))
        if r["type"] in ("class", "exception"):
            for b in bases(k):
                while b not in recs and b[0] == "def" and bases(b):  # skip private intermediates
                    b = bases(b)[0]
                edge(k, "subclass_of", b)
        if r["type"] == "method":
            edge(k, "method_of", r["cls"])
            mname = k[3]
            for a in ancestors(r["cls"]):
                if a[0] == "def" and mname in sp.class_methods(mods[a[1]].defs[a[2]]):
                    edge(k, "overrides", ("meth", a[1], a[2], mname))
                    break
        if r["type"] in ("function", "method"):
            for x in sp.raised_exprs(r["ast"]):
                ref = R.expr(k[1], x)
                if ref in recs and recs[ref]["type"] == "exception":
                    edge(k, "raises", ref)

    pairs = collections.defaultdict(set)
    for s, t, d in edges:
        pairs[t].add((recs[keys[s]]["type"], recs[keys[d]]["type"]))
    schema_spec = dict(SCHEMA)
    schema_spec["edge_types"] = [
        (n, sorted(pairs[n], key=lambda p: (TYPE_ORDER.index(p[0]), TYPE_ORDER.index(p[1]))), d)
        for n, _, d in SCHEMA["edge_types"]
    ]
    nodes = skb_text.make_nodes(keys, recs, nid, edges, mods)
    bundle_writer.write_bundle(out_dir, bundle_writer.expand_schema(schema_spec), nodes, edges)
    stats = {
        "source": "Python {}.{}.{} standard library".format(*sys.version_info[:3]),
        "modules_parsed": len(mods),
        "nodes": len(nodes),
        "edges": len(edges),
        "nodes_by_type": {t: sum(1 for n in nodes if n["type"] == t) for t in TYPE_ORDER},
        "edges_by_type": dict(sorted(collections.Counter(e[1] for e in edges).items())),
    }
    bundle_writer.write_stats(out_dir, stats)
    stats["seconds_total"] = round(time.time() - t0, 1)  # printed, not written (determinism)
    return stats


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out_dir")
    ap.add_argument("--stdlib", default=sysconfig.get_paths()["stdlib"])
    ap.add_argument("--validate-only", action="store_true")
    a = ap.parse_args()
    if not a.validate_only:
        gc.disable()  # the build allocates many small AST objects and keeps them all
        print(json.dumps(build(a.stdlib, a.out_dir), indent=2))
    errs = bundle_writer.validate(a.out_dir, unique_names=True)
    if errs:
        print("INVALID bundle:\n  " + "\n  ".join(errs[:50]), file=sys.stderr)
        sys.exit(1)
    print("bundle valid")


if __name__ == "__main__":
    main()
