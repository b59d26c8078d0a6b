"""Synthetic STaRK-like SKB bundles of any size: a bibliographic graph with texts, attributes and QA.

`generate` builds the graph's structure (`structure`), its attributes (`attributes`) and texts (`texts`), then
writes the bundle (`writer`). Everything is vectorised with numpy except the final per-line string formatting,
and every step draws from its own seeded generator, so the output is byte-identical for equal arguments.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from skbqa.synth import vocab
from skbqa.synth.attributes import _make_attrs
from skbqa.synth.graph import SynthGraph
from skbqa.synth.questions import generate_questions
from skbqa.synth.structure import TYPE_NAMES, _make_edges, _make_names, _schema, _type_counts
from skbqa.synth.texts import _write_nodes_and_texts
from skbqa.synth.writer import _LineWriter, _Progress, _tmp, _write_edges

_MIN_NODES = 100


@dataclass
class SynthStats:
    out_dir: Path
    nodes: int
    edges: int
    questions: int
    node_counts: dict[str, int] = field(default_factory=dict)
    edge_counts: dict[str, int] = field(default_factory=dict)  # by edge name (signatures summed)
    bytes_written: int = 0
    seconds: float = 0.0


def generate(
    out_dir: Path,
    *,
    nodes: int,
    seed: int,
    questions: int = 200,
    edges_per_node: float = 20.0,
    gzip: bool = True,
    progress: bool = False,
) -> SynthStats:
    """Write a synthetic SKB bundle (`schema.json`, `nodes.jsonl[.gz]`, `edges.jsonl[.gz]`, `qa.jsonl`).

    `nodes` is the exact node count (at least 100). `edges_per_node` is the target average degree (in plus
    out, over all edge types): the bundle holds about `nodes * edges_per_node / 2` edges, a little less after
    duplicate pairs are dropped. A structural floor applies to small values: every paper has one venue, at
    least one author and at least one field, every author at least one institution and every venue at least
    one field. `questions` QA items are sampled (fewer only if the graph is too small to yield distinct ones).
    Same arguments ⇒ byte-identical files. Files are written under temporary names and renamed at the end.
    """
    if nodes < _MIN_NODES:
        raise ValueError(f"nodes must be at least {_MIN_NODES}, got {nodes}")
    if edges_per_node <= 0:
        raise ValueError(f"edges_per_node must be positive, got {edges_per_node}")
    if questions < 0:
        raise ValueError(f"questions must be >= 0, got {questions}")
    vocab.check_tables()
    started = time.perf_counter()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    say = _Progress(progress, started)
    rng_names, rng_edges, rng_attrs, rng_texts, rng_qa = (
        np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(5)
    )

    counts = _type_counts(nodes)
    offsets: dict[str, int] = {}
    start = 0
    for t in TYPE_NAMES:
        offsets[t] = start
        start += counts[t]
    graph = SynthGraph(list(TYPE_NAMES), counts, offsets)
    field_nouns, venue_nouns, venue_kinds = _make_names(graph, rng_names)
    say(f"names for {nodes:,} nodes")
    _make_edges(graph, rng_edges, edges_per_node)
    say(f"{sum(r.size for r in graph.relations):,} edges")
    _make_attrs(graph, rng_attrs, venue_kinds)
    say("attributes")

    suffix = ".jsonl.gz" if gzip else ".jsonl"
    nodes_path, edges_path = out_dir / f"nodes{suffix}", out_dir / f"edges{suffix}"
    qa_path, schema_path = out_dir / "qa.jsonl", out_dir / "schema.json"
    written = [nodes_path, edges_path, qa_path, schema_path]
    try:
        with _LineWriter(_tmp(nodes_path), gzip) as writer:
            _write_nodes_and_texts(graph, rng_texts, field_nouns, venue_nouns, writer, say)
        say("nodes written")
        with _LineWriter(_tmp(edges_path), gzip) as writer:
            _write_edges(graph, writer)
        say("edges written")
        items = generate_questions(graph, rng_qa, questions)
        with _LineWriter(_tmp(qa_path), False) as writer:
            writer.write("".join(json.dumps(item, ensure_ascii=False) + "\n" for item in items))
        say(f"{len(items)} questions")
        _tmp(schema_path).write_text(json.dumps(_schema(), indent=2) + "\n", encoding="utf-8")
    except BaseException:
        for path in written:
            _tmp(path).unlink(missing_ok=True)
        raise

    for path in written:
        os.replace(_tmp(path), path)
    other = ".jsonl" if gzip else ".jsonl.gz"
    for stem in ("nodes", "edges"):  # a stale sibling would shadow or confuse the loader
        (out_dir / f"{stem}{other}").unlink(missing_ok=True)

    edge_counts: dict[str, int] = {}
    for r in graph.relations:
        edge_counts[r.name] = edge_counts.get(r.name, 0) + r.size
    stats = SynthStats(
        out_dir=out_dir,
        nodes=nodes,
        edges=sum(edge_counts.values()),
        questions=len(items),
        node_counts=dict(counts),
        edge_counts=edge_counts,
        bytes_written=sum(p.stat().st_size for p in written),
        seconds=round(time.perf_counter() - started, 3),
    )
    say(f"done: {stats.bytes_written / 1e6:.1f} MB")
    return stats
