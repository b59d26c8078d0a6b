"""Node attributes and texts of the Python standard-library SKB (used by build_skb.py).

Standard library only.
"""

from __future__ import annotations

import ast
import builtins
import collections
import re

import stdlib_parse as sp


def join_names(xs: list[str], limit: int = 25) -> str:
    xs = list(xs)
    more = len(xs) - limit
    xs = xs[:limit]
    if more > 0:
        return ", ".join(xs) + f" and {more} more"
    return xs[0] if len(xs) == 1 else ", ".join(xs[:-1]) + " and " + xs[-1]


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}es" if word.endswith("s") else f"{n} {word}s"


def builtin_doc(name: str) -> str:
    d = getattr(builtins, name).__doc__ or ""
    return re.sub(r"\s+", " ", d).strip()[:1500]


def lines_of(node) -> int:
    return node.end_lineno - node.lineno + 1


def func_attrs(fn, method: bool) -> dict:
    decs = sp.decorator_names(fn)
    static = "staticmethod" in decs
    a = {
        "n_params": sp.n_params(fn, drop_first=method and not static),
        "is_async": isinstance(fn, ast.AsyncFunctionDef),
        "is_generator": sp.is_generator(fn),
        "lines": lines_of(fn),
        "deprecated": bool(sp.DEPRECATION.search(sp.docstring(fn))) or sp.warns_deprecation(sp.own_nodes(fn)),
    }
    if decs:
        a["decorators"] = ", ".join(decs)
    return a


def class_is_abstract(cls) -> bool:
    for kw in cls.keywords:
        if kw.arg == "metaclass" and ast.unparse(kw.value).split(".")[-1] == "ABCMeta":
            return True
    if any(ast.unparse(b).split(".")[-1] == "ABC" for b in cls.bases):
        return True
    return any(
        any(d.split(".")[-1] == "abstractmethod" for d in sp.decorator_names(f))
        for defs in sp.class_methods(cls).values()
        for f in defs
    )


def make_nodes(keys, recs, nid, edges, mods) -> list[dict]:
    names = [recs[k]["name"] for k in keys]
    types = [recs[k]["type"] for k in keys]
    out_adj = collections.defaultdict(lambda: collections.defaultdict(list))
    in_adj = collections.defaultdict(lambda: collections.defaultdict(list))
    for s, t, d in sorted(edges):
        out_adj[s][t].append(d)
        in_adj[d][t].append(s)

    def N(ids, typ=None):
        return sorted(names[i] for i in ids if typ is None or types[i] == typ)

    nodes = []
    for i, k in enumerate(keys):
        r = recs[k]
        typ, name = r["type"], r["name"]
        oa, ia = out_adj[i], in_adj[i]
        attrs: dict = {}
        sents = []
        doc = ""
        if typ in ("package", "module") and k[1] == "builtins":
            defined = ia["defined_in"]
            attrs = {
                "lines": 0,
                "n_classes": len(N(defined, "class")),
                "n_exceptions": len(N(defined, "exception")),
            }
            attrs.update({"n_functions": 0, "deprecated": False})
            sents.append(
                "Module builtins holds the built-in names of Python 3.11, always available without an import. "
                f"Its classes (built-in types) are {join_names(N(defined, 'class'), 60)}. "
                f"Its exception classes are {join_names(N(defined, 'exception'), 80)}."
            )
        elif typ in ("package", "module"):
            m = mods[k[1]]
            doc = sp.docstring(m.tree)
            defined = ia["defined_in"]
            dep = bool(sp.DEPRECATION.search(doc)) or sp.warns_deprecation(sp.module_level_nodes(m.tree))
            attrs = {
                "lines": m.lines,
                "n_classes": len(N(defined, "class")),
                "n_exceptions": len(N(defined, "exception")),
                "n_functions": len(N(defined, "function")),
                "deprecated": dep,
            }
            parent = N(oa["submodule_of"])
            where = f" in package {parent[0]}" if parent else " at the top level"
            kind = "Package" if typ == "package" else "Module"
            sents.append(f"{kind} {name}{where} of the Python 3.11 standard library ({plural(m.lines, 'line')}).")
            if typ == "package":
                subs = N(ia["submodule_of"], "module")
                subp = N(ia["submodule_of"], "package")
                attrs["n_submodules"] = len(subs) + len(subp)
                if subs:
                    sents.append(f"Its modules are {join_names(subs)}.")
                if subp:
                    sents.append(f"Its subpackages are {join_names(subp)}.")
            for word, t in (("classes", "class"), ("exceptions", "exception"), ("functions", "function")):
                xs = N(defined, t)
                if xs:
                    w = word if len(xs) > 1 else {"classes": "class"}.get(word, word[:-1])
                    sents.append(f"It defines the {w} {join_names(xs)}.")
            imps = N(oa["imports"])
            if imps:
                sents.append(f"It imports {join_names(imps, 30)}.")
            if dep:
                sents.append("It is deprecated or mentions a deprecation.")
        elif k[0] == "builtin":
            doc = builtin_doc(k[1])
            word = "exception class" if typ == "exception" else "class (type)"
            attrs = {"builtin": True, "module": "builtins", "qualified_name": f"builtins.{k[1]}", "n_methods": 0}
            attrs.update({"is_abstract": False, "deprecated": False})
            sents.append(f"{name} is a built-in {word} of Python, in module builtins.")
        elif typ in ("class", "exception"):
            cls = r["ast"]
            doc = sp.docstring(cls)
            meths = N(ia["method_of"])
            decs = sp.decorator_names(cls)
            init = sp.class_methods(cls).get("__init__", [])
            dep = bool(sp.DEPRECATION.search(doc)) or any(sp.warns_deprecation(sp.own_nodes(f)) for f in init)
            attrs = {
                "builtin": False,
                "module": r["home"],
                "qualified_name": f"{r['home']}.{k[2]}",
                "n_methods": len(meths),
                "n_bases": len(cls.bases),
                "lines": lines_of(cls),
                "is_abstract": class_is_abstract(cls),
                "is_dataclass": any(d.split(".")[-1] == "dataclass" for d in decs),
                "deprecated": dep,
            }
            if decs:
                attrs["decorators"] = ", ".join(decs)
            word = "exception class" if typ == "exception" else "class"
            sents.append(
                f"{name} is {'an' if typ == 'exception' else 'a'} {word} defined in module {r['home']} ({plural(lines_of(cls), 'line')})."
            )
            if k[1] != r["home"]:
                sents.append(f"Its code lives in the private module {k[1]}.")
            if cls.bases:
                sents.append(f"It derives from {', '.join(ast.unparse(b) for b in cls.bases)}.")
            if attrs["is_abstract"]:
                sents.append("It is an abstract base class.")
            if attrs["is_dataclass"]:
                sents.append("It is a dataclass.")
            if meths:
                sents.append(f"Its methods are {join_names(sorted(m.split('.')[-1] for m in meths), 40)}.")
        elif typ in ("function", "method"):
            fn = r["ast"]
            doc = sp.docstring(fn)
            attrs = func_attrs(fn, typ == "method")
            attrs["module"] = r["home"]
            if typ == "function":
                attrs["qualified_name"] = f"{r['home']}.{k[2]}"
                sents.append(f"{name} is a function of module {r['home']}: {k[2]}({ast.unparse(fn.args)}).")
            else:
                decs = [d for f in r["all_defs"] for d in sp.decorator_names(f)]
                short = [d.split(".")[-1] for d in decs]
                attrs.update(
                    {
                        "class": k[2],
                        "qualified_name": f"{r['home']}.{k[2]}.{k[3]}",
                        "is_property": "property" in short or any(d.endswith(".setter") for d in decs),
                        "is_staticmethod": "staticmethod" in short,
                        "is_classmethod": "classmethod" in short,
                        "is_abstract": any(s.startswith("abstract") for s in short),
                        "is_dunder": k[3].startswith("__"),
                    }
                )
                cname = names[nid[r["cls"]]]
                sents.append(
                    f"{name} is a method of class {cname} in module {r['home']}: {k[3]}({ast.unparse(fn.args)})."
                )
                kinds = [w for w, f in (("a property", "is_property"), ("a static method", "is_staticmethod"),
                                        ("a class method", "is_classmethod"), ("abstract", "is_abstract")) if attrs[f]]  # fmt: skip
                if kinds:
                    sents.append(f"It is {' and '.join(kinds)}.")
                ov = N(oa["overrides"])
                if ov:
                    sents.append(f"It overrides {ov[0]}.")
            if attrs["is_async"]:
                sents.append("It is a coroutine function (async def).")
            if attrs["is_generator"]:
                sents.append("It is a generator.")
            if attrs.get("decorators"):
                sents.append(f"Decorators: {attrs['decorators']}.")
            if attrs["deprecated"]:
                sents.append("It is deprecated or mentions a deprecation.")
            rs = N(oa["raises"])
            if rs:
                sents.append(f"It raises {join_names(rs)}.")
        if typ in ("class", "exception"):
            bs = N(oa["subclass_of"])
            if bs and k[0] == "builtin":
                sents.append(f"It derives from {join_names(bs)}.")
            subs = N(ia["subclass_of"])
            if subs:
                sents.append(f"Its direct subclasses are {join_names(subs, 30)}.")
            if typ == "exception":
                by = N(ia["raises"])
                if by:
                    sents.append(f"It is raised by {join_names(by, 30)}.")
        if doc:
            sents.append(f"Docstring: {doc}")
        nodes.append({"id": i, "type": typ, "name": name, "attrs": attrs, "text": " ".join(sents)})
    return nodes
