"""Parsing the Python standard library's source with ``ast`` for build_skb.py.

Nothing here imports a standard-library module under study: every file is read and parsed,
and names are resolved through each module's own imports, definitions and simple aliases
(``X = Y``).  Only ``builtins`` is introspected (it is always loaded), to model the built-in
classes and exceptions.  Standard library only.
"""

from __future__ import annotations

import ast
import builtins
import os
import re
from dataclasses import dataclass, field

SKIP_DIRS = {
    "test",
    "tests",
    "idlelib",
    "lib2to3",
    "tkinter",
    "turtledemo",
    "ensurepip",
    "site-packages",
    "__pycache__",
    "lib-dynload",
}


def private(modname: str) -> bool:
    return any(p.startswith("_") for p in modname.split("."))


@dataclass
class Mod:
    name: str
    path: str
    is_pkg: bool
    tree: ast.Module
    lines: int
    defs: dict[str, ast.AST] = field(default_factory=dict)  # top-level classes and functions
    table: dict[str, list[tuple]] = field(default_factory=dict)  # name -> candidate bindings
    stars: list[str] = field(default_factory=list)  # modules star-imported, in order
    all_names: list[str] | None = None
    imports: set[str] = field(default_factory=set)  # modules imported at the top level

    @property
    def private(self) -> bool:
        return private(self.name)


def find_files(stdlib: str) -> list[tuple[str, str, bool]]:
    """(module name, path, is_package) of every source file kept, sorted by module name."""
    out = []
    for root, dirs, files in os.walk(stdlib):
        rel = os.path.relpath(root, stdlib)
        parts = [] if rel == "." else rel.split(os.sep)
        dirs[:] = sorted(
            d
            for d in dirs
            if d not in SKIP_DIRS
            and not d.startswith("config-")
            and os.path.exists(os.path.join(root, d, "__init__.py"))
            and parts != ["encodings"]
        )
        if parts and not os.path.exists(os.path.join(root, "__init__.py")):
            continue
        for f in sorted(files):
            if not f.endswith(".py"):
                continue
            stem = f[:-3]
            if parts == ["encodings"] and stem != "__init__":  # ~120 generated codec tables
                continue
            if stem == "__main__":
                continue
            is_pkg = stem == "__init__"
            name = ".".join(parts if is_pkg else [*parts, stem])
            if not name or name.startswith("__"):
                continue
            out.append((name, os.path.join(root, f), is_pkg))
    return sorted(out)


def add_binding(m: Mod, name: str, ent: tuple) -> None:
    m.table.setdefault(name, []).append(ent)


def top_statements(body):
    """Module-level statements, descending into if / try / with blocks."""
    for st in body:
        yield st
        if isinstance(st, ast.If):
            yield from top_statements(st.body)
            yield from top_statements(st.orelse)
        elif isinstance(st, ast.Try):
            yield from top_statements(st.body)
            for h in st.handlers:
                yield from top_statements(h.body)
            yield from top_statements(st.orelse)
            yield from top_statements(st.finalbody)
        elif isinstance(st, ast.With):
            yield from top_statements(st.body)


def str_list(node) -> list[str] | None:
    if isinstance(node, (ast.List, ast.Tuple)) and all(
        isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts
    ):
        return [e.value for e in node.elts]
    return None


def index_module(m: Mod) -> None:
    pkg = m.name if m.is_pkg else m.name.rpartition(".")[0]
    for st in top_statements(m.tree.body):
        if isinstance(st, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            m.defs.setdefault(st.name, st)
            add_binding(m, st.name, ("def", m.name, st.name))
        elif isinstance(st, ast.Import):
            for a in st.names:
                m.imports.add(a.name)
                if a.asname:
                    add_binding(m, a.asname, ("mod", a.name))
                else:
                    top = a.name.split(".")[0]
                    add_binding(m, top, ("mod", top))
        elif isinstance(st, ast.ImportFrom):
            base = st.module or ""
            if st.level:
                parts = pkg.split(".") if pkg else []
                parts = parts[: len(parts) - (st.level - 1)] if st.level > 1 else parts
                base = ".".join([*parts, *([st.module] if st.module else [])])
            m.imports.add(base)
            for a in st.names:
                m.imports.add(f"{base}.{a.name}")  # kept only if it names a module
                if a.name == "*":
                    m.stars.append(base)
                else:
                    add_binding(m, a.asname or a.name, ("imp", base, a.name))
        elif isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name):
            t = st.targets[0].id
            if t == "__all__":
                m.all_names = str_list(st.value)
            elif isinstance(st.value, (ast.Name, ast.Attribute)):
                add_binding(m, t, ("expr", m.name, st.value))
        elif isinstance(st, ast.AugAssign) and isinstance(st.target, ast.Name) and st.target.id == "__all__":
            extra = str_list(st.value)
            if extra and m.all_names is not None:
                m.all_names = m.all_names + extra


def load(stdlib: str) -> dict[str, Mod]:
    mods = {}
    for name, path, is_pkg in find_files(stdlib):
        try:
            with open(path, "rb") as f:
                src = f.read()
            tree = ast.parse(src, filename=path)
        except (SyntaxError, ValueError, UnicodeDecodeError):
            continue
        m = Mod(name, path, is_pkg, tree, src.count(b"\n") + (0 if src.endswith(b"\n") else 1))
        index_module(m)
        mods[name] = m
    return mods


BUILTIN_NAMES = frozenset(dir(builtins))


class Resolver:
    """Resolves names and dotted expressions in a module to ('def', module, name),
    ('mod', module) or ('builtin', name)."""

    def __init__(self, mods: dict[str, Mod]):
        self.mods = mods
        self.memo: dict[tuple[str, str], tuple | None] = {}

    def exported(self, modname: str, name: str) -> bool:
        m = self.mods[modname]
        return name in m.all_names if m.all_names is not None else not name.startswith("_")

    def lookup(self, modname: str, name: str, seen=frozenset()):
        key = (modname, name)
        if key in self.memo:
            return self.memo[key]
        if key in seen or modname not in self.mods:
            return None
        seen = seen | {key}
        m = self.mods[modname]
        r = None
        ents = m.table.get(name, [])
        for ent in [e for e in ents if e[0] == "def"] + [e for e in ents if e[0] != "def"]:  # own code first
            r = self.deref(ent, seen)
            if r:
                break
        if r is None and f"{modname}.{name}" in self.mods:
            r = ("mod", f"{modname}.{name}")
        if r is None:
            for s in m.stars:
                if s in self.mods and self.exported(s, name):
                    r = self.lookup(s, name, seen)
                    if r:
                        break
        if r is not None or not seen - {key}:
            self.memo[key] = r
        return r

    def deref(self, ent, seen):
        kind = ent[0]
        if kind == "def":
            return ent
        if kind == "mod":
            return ent if ent[1] in self.mods else None
        if kind == "imp":
            if ent[1] == "builtins" and ent[2] in BUILTIN_NAMES:
                return ("builtin", ent[2])
            return self.lookup(ent[1], ent[2], seen)
        return self.expr(ent[1], ent[2], seen)

    def expr(self, modname: str, node, seen=frozenset()):
        if isinstance(node, ast.Name):
            r = self.lookup(modname, node.id, seen)
            if r is None and node.id in BUILTIN_NAMES:
                r = ("builtin", node.id)
            return r
        if isinstance(node, ast.Attribute):
            if isinstance(node.value, ast.Name) and node.value.id == "builtins" and node.attr in BUILTIN_NAMES:
                return ("builtin", node.attr)
            base = self.expr(modname, node.value, seen)
            if base and base[0] == "mod":
                return self.lookup(base[1], node.attr, seen)
        return None


# --------------------------------------------------------------------------------------
# facts about functions and classes
# --------------------------------------------------------------------------------------


NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_OWN: dict[int, tuple] = {}


def own_nodes(fn) -> tuple:
    """The nodes of a function body, not descending into nested functions, classes or lambdas
    (cached: the trees live as long as the build)."""
    got = _OWN.get(id(fn))
    if got is None or got[0] is not fn:
        out, stack = [], [n for n in fn.body if not isinstance(n, NESTED)]
        while stack:
            n = stack.pop()
            out.append(n)
            for c in ast.iter_child_nodes(n):
                if not isinstance(c, NESTED):
                    stack.append(c)
        got = _OWN[id(fn)] = (fn, tuple(out))
    return got[1]


def decorator_names(node) -> list[str]:
    out = []
    for d in node.decorator_list:
        if isinstance(d, ast.Call):
            d = d.func
        out.append(ast.unparse(d))
    return out


def raised_exprs(fn):
    """The expressions after ``raise`` (the callee for ``raise X(...)``), in source order."""
    rs = [n for n in own_nodes(fn) if isinstance(n, ast.Raise) and n.exc is not None]
    rs.sort(key=lambda n: (n.lineno, n.col_offset))
    return [n.exc.func if isinstance(n.exc, ast.Call) else n.exc for n in rs]


def is_generator(fn) -> bool:
    return any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in own_nodes(fn))


DEPRECATION = re.compile(r"\bdeprecat", re.I)


def warns_deprecation(nodes) -> bool:
    for n in nodes:
        if isinstance(n, ast.Name) and n.id in ("DeprecationWarning", "PendingDeprecationWarning"):
            return True
        if isinstance(n, ast.Attribute) and n.attr in ("DeprecationWarning", "_deprecated"):
            return True
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "_deprecated":
            return True
    return False


def module_level_nodes(tree):
    """Nodes of the module's top level, outside function and class bodies."""
    stack = [n for n in tree.body if not isinstance(n, NESTED)]
    while stack:
        n = stack.pop()
        yield n
        for c in ast.iter_child_nodes(n):
            if not isinstance(c, NESTED):
                stack.append(c)


def docstring(node) -> str:
    d = ast.get_docstring(node, clean=True) or ""
    d = re.sub(r"\s+", " ", d).strip()
    if len(d) > 1500:
        d = d[:1500].rsplit(" ", 1)[0] + " …"
    return d


def n_params(fn, drop_first: bool) -> int:
    a = fn.args
    n = len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs) + (a.vararg is not None) + (a.kwarg is not None)
    return max(0, n - 1) if drop_first and (a.posonlyargs or a.args) else n


def signature(fn) -> str:
    return f"{fn.name}({ast.unparse(fn.args)})"


def class_methods(cls) -> dict[str, list]:
    """Method name -> its definitions in the class body (a property's getter comes first)."""
    out: dict[str, list] = {}
    for st in cls.body:
        if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out.setdefault(st.name, []).append(st)
    return out


def public_method(name: str) -> bool:
    return not name.startswith("_") or (name.startswith("__") and name.endswith("__") and len(name) > 4)


def builtin_classes() -> list[tuple[str, type]]:
    """Public classes of the builtins module (not object), sorted by name."""
    out = []
    for n in sorted(BUILTIN_NAMES):
        v = getattr(builtins, n)
        if isinstance(v, type) and not n.startswith("_") and v is not object:
            out.append((n, v))
    return out
