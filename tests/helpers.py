"""Test helpers: a tiny bundle writer and a deterministic hashing encoder for pure-logic tests.

The hashing encoder is a test double for the `Encoder` port only where the model's semantics do not matter
(ingest mechanics, fusion arithmetic); end-to-end tests use the real ONNX MiniLM encoder.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

SCHEMA: dict[str, Any] = {
    "name": "tiny",
    "description": "papers, authors and fields",
    "node_types": [
        {"name": "paper", "description": "a research paper", "name_attr": "title"},
        {"name": "author", "description": "a person", "name_attr": "name"},
        {"name": "field", "description": "a field of study", "name_attr": "name"},
    ],
    "edge_types": [
        {"name": "written_by", "source": "paper", "target": "author", "description": "authorship"},
        {"name": "has_field", "source": "paper", "target": "field", "description": "topic"},
        {"name": "cites", "source": "paper", "target": "paper", "description": "citation"},
    ],
}

NODES: list[dict[str, Any]] = [
    {
        "id": 10,
        "type": "paper",
        "name": "Graph neural networks for molecules",
        "attrs": {"year": 2019},
        "text": "We learn molecular properties with message passing over chemical graphs.",
    },
    {
        "id": 11,
        "type": "paper",
        "name": "Retrieval over knowledge bases",
        "attrs": {"year": 2022},
        "text": "Dense and sparse retrieval of entities from semi-structured knowledge bases.",
    },
    {
        "id": 12,
        "type": "paper",
        "name": "Protein folding with attention",
        "attrs": {"year": 2021},
        "text": "Attention models predict protein structure from sequence.",
    },
    {"id": 20, "type": "author", "name": "Ada Lovelace", "attrs": {"country": "UK"}, "text": "Mathematician."},
    {"id": 21, "type": "author", "name": "Alan Turing", "attrs": {"country": "UK"}, "text": "Computer scientist."},
    {"id": 30, "type": "field", "name": "chemistry", "attrs": {}, "text": "The study of matter."},
    {"id": 31, "type": "field", "name": "information retrieval", "attrs": {}, "text": "Finding documents."},
]

EDGES: list[dict[str, Any]] = [
    {"src": 10, "type": "written_by", "dst": 20},
    {"src": 11, "type": "written_by", "dst": 21},
    {"src": 12, "type": "written_by", "dst": 20},
    {"src": 10, "type": "has_field", "dst": 30},
    {"src": 11, "type": "has_field", "dst": 31},
    {"src": 11, "type": "cites", "dst": 10},
    {"src": 12, "type": "cites", "dst": 10},
]

QA: list[dict[str, Any]] = [
    {"id": "q1", "question": "Which papers did Ada Lovelace write?", "answers": [10, 12], "target_type": "paper"},
    {"id": "q2", "question": "retrieval over knowledge bases", "answers": [11]},
]


def write_bundle(
    directory: Path,
    *,
    schema: dict[str, Any] | None = None,
    nodes: Sequence[dict[str, Any]] | None = None,
    edges: Sequence[dict[str, Any]] | None = None,
    qa: Sequence[dict[str, Any]] | None = None,
) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "schema.json").write_text(json.dumps(SCHEMA if schema is None else schema))
    (directory / "nodes.jsonl").write_text(
        "".join(json.dumps(n) + "\n" for n in (NODES if nodes is None else nodes))
    )
    (directory / "edges.jsonl").write_text(
        "".join(json.dumps(e) + "\n" for e in (EDGES if edges is None else edges))
    )
    (directory / "qa.jsonl").write_text("".join(json.dumps(q) + "\n" for q in (QA if qa is None else qa)))
    return directory


class HashingEncoder:
    """Bag of hashed words → unit vector. Deterministic, instant, and lexical (shared words ⇒ similar)."""

    def __init__(self, dim: int = 64, name: str = "test-hashing/64") -> None:
        self._dim = dim
        self._name = name
        self.calls = 0

    @property
    def name(self) -> str:
        return self._name

    @property
    def dim(self) -> int:
        return self._dim

    def encode(self, texts: Sequence[str], *, progress: str | None = None) -> np.ndarray:
        self.calls += 1
        out = np.zeros((len(texts), self._dim), np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                bucket = int(hashlib.md5(word.encode()).hexdigest(), 16) % self._dim
                out[row, bucket] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return out / norms


def sample_with_sage(engine: Any, directory: Path) -> tuple[Any, Any, dict[str, Any]]:
    """The SAGE graph of an ingested sample saved in `directory` (beside, not inside, a shared index), the stores
    that point there, and the engine's strategy table with `sage` over them: (graph, stores, strategies)."""
    import dataclasses

    from skbqa.strategies.sage.graph_build import build_sage_graph
    from skbqa.strategies.sage.strategy import SageStrategy

    stores = engine.stores
    graph = build_sage_graph(
        stores.nodes,
        stores.graph,
        stores.vectors["name"],
        stores.vectors["document"],
        index_identity={"created_unix": stores.manifest["created_unix"]},
    )
    graph.save(directory)
    own = dataclasses.replace(stores, directory=directory)
    strategies: dict[str, Any] = dict(engine.strategies)
    strategies["sage"] = SageStrategy(own, strategies)
    return graph, own, strategies


def engine_over(
    directory: Path, encoder: Any, schema: dict[str, Any], nodes: list[dict[str, Any]], edges: list[dict[str, Any]]
) -> Any:
    """An embedded engine over a small knowledge base of a test's own, ingested into `directory`."""
    from skbqa.engine.embedded import EmbeddedEngine
    from skbqa.ingest.builder import ingest

    bundle = write_bundle(directory / "bundle", schema=schema, nodes=nodes, edges=edges, qa=[])
    ingest(bundle, directory / "index", encoder, progress=False)
    return EmbeddedEngine.open(directory / "index", encoder=encoder)


def node_type(name: str, description: str) -> dict[str, str]:
    """A node type of a test schema, named by its `name` attribute."""
    return {"name": name, "description": description, "name_attr": "name"}


def edge_type(name: str, source: str, target: str, description: str) -> dict[str, str]:
    """An edge type of a test schema."""
    return {"name": name, "source": source, "target": target, "description": description}


def nodes_of(rows: list[tuple[int, str, str, str]]) -> list[dict[str, object]]:
    """Nodes of a test bundle from (id, type, name, text) rows."""
    return [{"id": i, "type": t, "name": n, "text": g} for i, t, n, g in rows]
