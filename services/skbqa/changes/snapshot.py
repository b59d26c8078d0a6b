"""Writing a snapshot: the changed knowledge base as a complete index in a work directory beside the index, by the
ingest builder itself (`ingest.builder.build_snapshot`), so an updated index is the index a fresh ingest of the
final knowledge base would give. Only texts that changed are encoded (`changes.vectors`); BM25 and the name
lexicon are copied when the change cannot alter them; the node table and CSR graph are rebuilt (seconds per 100k
nodes); a SAGE graph the old snapshot had is rebuilt with its own settings; GRAPE's trained weights carry over
(its features are read from the graph at query time).

`write_in_child` does the same in a child process at low CPU priority, replaying the change log itself: a
serving process keeps its cores (and its interpreter lock) for questions while a fold runs.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import multiprocessing
import os
import shutil
import signal
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from skbqa.changes.log import ChangeLog
from skbqa.changes.state import KbState, Touched
from skbqa.changes.vectors import DeltaVectors
from skbqa.ingest.builder import build_snapshot
from skbqa.models.index_encoder import encoder_for_index
from skbqa.query.encoder import Encoder
from skbqa.skb.model import SKB, lookup_positions
from skbqa.stores.graph.csr import CsrGraph
from skbqa.stores.index import (
    EMBEDDING_SETS,
    kb_version,
    load_exact_vectors,
    read_manifest,
    verify_files,
    work_prefix,
)
from skbqa.stores.lexicon import LEXICON_FILE
from skbqa.stores.nodes import NodeTable

CARRIED_OVER = ("grape",)  # directories a new snapshot keeps as they are
CHILD_NICENESS = 10
PR_SET_PDEATHSIG = 1  # prctl(2)


@dataclass
class SnapshotReport:
    version: int
    nodes: int
    edges: int
    seconds: dict[str, float] = field(default_factory=dict)
    encoded: dict[str, int] = field(default_factory=dict)
    reused: dict[str, int] = field(default_factory=dict)
    copied: list[str] = field(default_factory=list)  # stores taken as they were from the previous snapshot


def write_snapshot(
    directory: Path, version: int, skb: SKB, touched: Touched, encoder: Encoder, *, progress: bool = False
) -> tuple[Path, SnapshotReport]:
    """The snapshot of `skb` (the knowledge base at `version`; `touched`: what changed since the index at
    `directory`) in a new work directory beside it; the caller renames it into place or removes it."""
    started = time.perf_counter()
    old_manifest = read_manifest(directory)
    verify_files(directory, old_manifest, ("nodes", "graph", "vectors"))
    old_nodes = NodeTable.load(directory / "nodes")
    old_sets = {name: load_exact_vectors(directory / "vectors" / name) for name in EMBEDDING_SETS}
    delta = DeltaVectors(
        old_nodes, CsrGraph.load(directory / "graph"), old_sets, touched, encoder, progress=progress
    )
    sets = old_manifest.get("vectors", {}).get("sets", {})
    provenance = {
        "bundle": old_manifest.get("bundle", {}),
        "kb_version": version,
        # the ingest's time, kept through every fold: the lineage of the index's Milvus collections (their names)
        "ingested_unix": old_manifest.get("ingested_unix", old_manifest.get("created_unix", 0)),
        "updated_unix": int(time.time()),
        "vectors": {"source": "encoder", "updated": True},
    }
    reuse = reusable_parts(directory, old_nodes, skb, touched)
    work = Path(tempfile.mkdtemp(prefix=work_prefix(directory), dir=directory.parent))
    try:
        built = build_snapshot(
            skb,
            work,
            encoder,
            vector_dtype=old_manifest.get("vector_dtype", "float32"),
            progress=progress,
            ann={
                name: "always" if sets.get(name, {}).get("index") == "ann" else "never" for name in EMBEDDING_SETS
            },
            vectors_for=delta,
            provenance=provenance,
            reuse=reuse,
        )
        for name in CARRIED_OVER:
            if (directory / name).is_dir():
                shutil.copytree(directory / name, work / name)
        seconds = dict(built.seconds)
        if (directory / "sage").is_dir():
            seconds["sage"] = _rebuild_sage(directory, work)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    seconds["snapshot_total"] = round(time.perf_counter() - started, 3)
    report = SnapshotReport(
        version,
        built.nodes,
        built.edges,
        seconds,
        dict(delta.report.encoded),
        dict(delta.report.reused),
        sorted(reuse),
    )
    return work, report


def reusable_parts(directory: Path, old: NodeTable, skb: SKB, touched: Touched) -> dict[str, Path]:
    """The old snapshot's stores that the new nodes would build identically: BM25 when no node's record changed
    (only edges did), the name lexicon when no name, type or attribute did (texts and edges may have)."""
    if not np.array_equal(old.ids, skb.node_ids):
        return {}
    reuse = {} if touched.records else {"bm25": directory / "bm25"}
    positions = lookup_positions(old.ids, np.fromiter(touched.records, np.int64, len(touched.records)))
    same_labels = all(
        old.names[p] == skb.names[p] and old.attrs[p] == skb.attrs[p] and old.types[p] == skb.node_type[p]
        for p in positions.tolist()
    )
    if same_labels:
        reuse["lexicon"] = directory / "nodes" / LEXICON_FILE
    return reuse


def _rebuild_sage(old_dir: Path, work: Path) -> float:
    """The SAGE graph indexes node positions, which a change moves: build it again, with the settings it had."""
    from skbqa.strategies.sage.graph_build import SageBuildConfig, build_for_index
    from skbqa.strategies.sage.store import SAGE_DIR

    started = time.perf_counter()
    meta = json.loads((old_dir / SAGE_DIR / "sage.json").read_text())
    build_for_index(work, SageBuildConfig(**meta.get("config", {})))
    return round(time.perf_counter() - started, 3)


# --- in a child process -------------------------------------------------------------------------------------


def replayed_state(directory: Path, through: int) -> KbState:
    """The knowledge base of the index at `directory` with its logged batches up to version `through` applied."""
    state = KbState.from_index(NodeTable.load(directory / "nodes"), CsrGraph.load(directory / "graph"))
    after = kb_version(read_manifest(directory))
    for version, changes in ChangeLog(directory).batches(after=after):
        if version > through:
            break
        state.apply(list(enumerate(changes, start=1)), f"change log version {version}")
    return state


def _die_with_parent(parent: int) -> None:
    """Linux: SIGKILL this process when `parent` (the process that started it) dies: a killed server leaves no
    fold behind, and the next start removes the fold's work directory. The parent's PID comes from the parent
    itself, not from getppid() here: a parent killed while this interpreter was starting is gone already, and
    the orphan would otherwise take its new parent (init) for it and write a snapshot nobody will use."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the parent died before the request took effect
        os._exit(1)


def _child(directory: str, version: int, encoder_url: str | None, progress: bool) -> tuple[str, SnapshotReport]:
    os.nice(CHILD_NICENESS)
    index = Path(directory)
    state = replayed_state(index, version)
    if encoder_url:
        from skbqa.models.triton_encoder import TritonEncoder

        encoder: Encoder = TritonEncoder.from_url(encoder_url)
    else:
        encoder = encoder_for_index(index, read_manifest(index).get("encoder", {}).get("name", ""))
    work, report = write_snapshot(index, version, state.to_skb(), state.touched, encoder, progress=progress)
    return str(work), report


def write_in_child(
    directory: Path, version: int, *, encoder_url: str | None = None, progress: bool = False
) -> tuple[Path, SnapshotReport]:
    """`write_snapshot` for the index's logged batches up to `version`, computed by a child process at niceness
    +10 (its own interpreter, memory returned when it ends; a crash there leaves the serving process alone)."""
    context = multiprocessing.get_context("spawn")
    with context.Pool(1, initializer=_die_with_parent, initargs=(os.getpid(),)) as pool:
        work, report = pool.apply(_child, (str(directory), version, encoder_url, progress))
    return Path(work), report
