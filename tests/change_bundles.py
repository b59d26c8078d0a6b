"""A bundle split into a base and a stream of changes whose result is a known final bundle: the equivalence tests'
material (tests/integration/test_live_updates.py)."""

from __future__ import annotations

import gzip
import json
import random
import shutil
from pathlib import Path
from typing import Any


def _read(path: Path) -> list[dict[str, Any]]:
    opener: Any = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _write(directory: Path, schema: Path, nodes: list[dict[str, Any]], edges: list[dict[str, Any]]) -> Path:
    directory.mkdir(parents=True)
    shutil.copy(schema, directory / "schema.json")
    (directory / "nodes.jsonl").write_text("".join(json.dumps(n) + "\n" for n in nodes))
    (directory / "edges.jsonl").write_text("".join(json.dumps(e) + "\n" for e in edges))
    return directory


def split_bundle(
    source: Path, out: Path, *, held_back: float = 0.1, edited: float = 0.03, deleted: float = 0.02, seed: int = 7
) -> tuple[Path, Path, list[dict[str, Any]]]:
    """(base bundle, final bundle, changes): the final bundle is `source` with some nodes edited and some deleted;
    the base lacks `held_back` of the final nodes and edges, has the deleted nodes, and the edited ones as they
    were; applying the changes to the base gives the final bundle."""
    rng = random.Random(seed)
    nodes = _read(next(source.glob("nodes.jsonl*")))
    edges = [
        dict(e)
        for e in {(e["src"], e["type"], e["dst"]): e for e in _read(next(source.glob("edges.jsonl*")))}.values()
    ]
    ids = [n["id"] for n in nodes]
    rng.shuffle(ids)
    n_del, n_edit, n_held = (int(len(ids) * share) for share in (deleted, edited, held_back))
    gone = set(ids[:n_del])
    changed = set(ids[n_del : n_del + n_edit])
    held = set(ids[n_del + n_edit : n_del + n_edit + n_held])
    final_nodes, base_nodes, changes = [], [], []
    for node in nodes:
        if node["id"] in gone:
            base_nodes.append(node)
            continue
        if node["id"] in changed:
            base_nodes.append(node)
            node = {
                **node,
                "name": node["name"] + " (revised)",
                "text": "Revised: " + node.get("text", "")[::-1][:300],
            }
            changes.append({"op": "upsert_node", "node": node})
        elif node["id"] in held:
            changes.append({"op": "upsert_node", "node": node})
        else:
            base_nodes.append(node)
        final_nodes.append(node)
    final_edges, base_edges = [], []
    for edge in edges:
        if edge["src"] in gone or edge["dst"] in gone:
            if edge["src"] not in held and edge["dst"] not in held:  # deleting the node takes the edge away
                base_edges.append(edge)
            continue
        final_edges.append(edge)
        if edge["src"] in held or edge["dst"] in held or rng.random() < held_back:
            changes.append({"op": "add_edge", **edge})
        else:
            base_edges.append(edge)
    changes += [{"op": "delete_node", "id": node_id} for node_id in sorted(gone)]
    schema = source / "schema.json"
    return (
        _write(out / "base", schema, base_nodes, base_edges),
        _write(out / "final", schema, final_nodes, final_edges),
        changes,
    )


def write_changes(path: Path, changes: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(c) + "\n" for c in changes))
    return path
