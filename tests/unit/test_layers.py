"""The package's floors, read from its imports with `ast`, so the layout stays as README's Layout section draws it.

Floors, top to bottom: cli → eval, serving, devstack → engine → strategies, changes → stages, ingest, synth → stores,
models, bus, observability, client → query, skb, common, v1. A module may import its own floor and the floors below it;
no two modules may import each other, directly or through others (lazy imports inside functions count too).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "services" / "skbqa"
FLOORS: dict[str, int] = {
    **dict.fromkeys(("v1", "common", "query", "skb"), 0),
    **dict.fromkeys(("stores", "models", "bus", "observability", "client"), 1),
    **dict.fromkeys(("stages", "ingest", "synth"), 2),
    **dict.fromkeys(("strategies", "changes"), 3),
    "engine": 4,
    **dict.fromkeys(("eval", "serving", "devstack"), 5),
    "cli": 6,
    "__main__": 7,
    "__init__": 0,
}
STAGES = ("parse", "symbols", "grounding", "ranking", "rerank")
MAX_LINES = 400


def modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        relative = path.relative_to(PACKAGE)
        if relative.parts[0] == "v1":
            continue
        parts = ["skbqa", *relative.with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imported(path: Path, name: str, known: dict[str, Path]) -> Iterator[str]:
    """The skbqa modules `path` imports (a `from package import module` names the module)."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names if alias.name.split(".")[0] == "skbqa")
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            if base.split(".")[0] != "skbqa":
                continue
            for alias in node.names:
                yield f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base


def graph() -> dict[str, set[str]]:
    known = modules()
    edges: dict[str, set[str]] = {}
    for name, path in known.items():
        targets = set()
        for target in imported(path, name, known):
            while target not in known and "." in target:
                target = target.rsplit(".", 1)[0]
            if target in known and target != name and not target.startswith("skbqa.v1"):
                targets.add(target)
        edges[name] = targets
    return edges


def floor(module: str) -> int:
    parts = module.split(".")
    return FLOORS[parts[1]] if len(parts) > 1 else 0


def test_no_import_runs_upward() -> None:
    upward = [
        f"{source} (floor {floor(source)}) imports {target} (floor {floor(target)})"
        for source, targets in graph().items()
        for target in targets
        if floor(target) > floor(source)
    ]
    assert not upward, "\n".join(sorted(upward))


def test_every_top_level_package_has_a_floor() -> None:
    assert not {m.split(".")[1] for m in modules() if "." in m} - set(FLOORS)


def test_stages_do_not_import_each_other() -> None:
    """Each stage folder reads the shared types and stores below it, never another stage's folder."""
    crossing = []
    for source, targets in graph().items():
        parts = source.split(".")
        if len(parts) > 3 and parts[1] == "stages" and parts[2] in STAGES:
            for target in targets:
                tparts = target.split(".")
                if len(tparts) > 3 and tparts[1] == "stages" and tparts[2] in STAGES and tparts[2] != parts[2]:
                    crossing.append(f"{source} imports {target}")
    assert not crossing, "\n".join(sorted(crossing))


def test_no_import_cycles() -> None:
    edges = graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(node: str) -> None:  # Tarjan's strongly connected components
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in edges[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    assert not cycles, "\n".join(" <-> ".join(c) for c in cycles)


def test_modules_stay_under_400_lines() -> None:
    long = {
        str(path.relative_to(PACKAGE)): n
        for path in modules().values()
        if (n := len(path.read_text().splitlines())) > MAX_LINES
    }
    assert not long, long
