"""Offline SAGE graph construction (paper §2.1 B) over an embedded index.

1. graph nodes: the nodes with rich text (`sage.rich`); the others keep only their KG edges;
2. candidates: per node, its top-M neighbours of the same type by name similarity (name vectors), content
   similarity (document vectors) and shared entities (`sage.entities`); their union is the candidate set. The
   vector neighbourhoods are approximate (`sage.ann`: IVF, each node scored against its `nprobe` nearest of ~√n
   clusters), so no signal scores all pairs; the manifest records the pairs scored per type and signal;
3. every candidate pair is scored by every signal; per node type and signal, the `percentile` of the scores
   over the candidate pairs is that signal's threshold, and a signal votes for a pair that *exceeds* it;
4. a candidate pair becomes an edge when any signal votes (the paper's OR logic); existing KG edges between two
   graph nodes of the same type are kept as structural edges ("we retain explicit schema edges");
5. each edge stores its signals, all three scores and its rarest shared entity (the paper's edge metadata).

Neighbourhoods stay within one node type: STaRK answers share one type, the paper observes that expansion helps
when it adds nodes of the seeds' type, and cross-type links are what the KG's typed edges already express.
"""

from __future__ import annotations

import logging
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from skbqa.common.errors import IndexStoreError
from skbqa.stores.graph.csr import CsrGraph
from skbqa.stores.index import load_exact_vectors, read_manifest, verify_files
from skbqa.stores.lexicon import NameLexicon
from skbqa.stores.nodes import NodeTable
from skbqa.stores.vectors.exact import ExactIndex
from skbqa.strategies.sage import signals as sig
from skbqa.strategies.sage.entities import DEFAULT_MAX_DF_SHARE, link_entities
from skbqa.strategies.sage.rich import DEFAULT_MIN_CONTENT_WORDS, rich_text
from skbqa.strategies.sage.store import BITS, SIMILARITY_SIGNALS, SageGraph, degree_summary

logger = logging.getLogger(__name__)

SWEEP_PERCENTILES = (80, 85, 90, 95, 97, 99)  # the rows of the paper's Table 5


@dataclass(frozen=True)
class SageBuildConfig:
    percentile: float = 95.0
    neighbours: int = 20  # M: candidates per node and signal
    nprobe: int = 16  # IVF clusters searched per node (biomed: ANN recall@20 ≥ 0.91 per type, see bench)
    centroids: int | None = None  # IVF clusters per node type; None: ⌈√n⌉ of the type's n graph nodes
    min_content_words: int = DEFAULT_MIN_CONTENT_WORDS
    max_entity_df_share: float = DEFAULT_MAX_DF_SHARE
    structural: bool = True  # keep KG edges between graph nodes of the same type

    def validate(self) -> None:
        if not 0.0 <= self.percentile < 100.0:
            raise ValueError(f"percentile must be within [0, 100), got {self.percentile}")
        if self.neighbours < 1:
            raise ValueError(f"neighbours must be at least 1, got {self.neighbours}")
        if self.nprobe < 1:
            raise ValueError(f"nprobe must be at least 1, got {self.nprobe}")
        if self.centroids is not None and self.centroids < 1:
            raise ValueError(f"centroids must be at least 1 (or unset for √n), got {self.centroids}")
        if self.min_content_words < 0:
            raise ValueError("min_content_words must not be negative")


def unit_rows(index: ExactIndex, positions: np.ndarray, label: str) -> np.ndarray:
    # float32 even over a float16 index: numpy's float16 matrix products are not BLAS and far slower
    vectors = index.vectors_for(positions).astype(np.float32, copy=False)
    if vectors.shape[0] != positions.size:
        raise IndexStoreError(
            f"the {label} vector index lacks {positions.size - vectors.shape[0]} nodes; re-ingest"
        )
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms == 0, 1.0, norms)


def _structural_pairs(graph: CsrGraph, members: np.ndarray, local_types: np.ndarray) -> np.ndarray:
    """KG edges (any type, either direction) between two graph nodes of the same type, as local (min, max)."""
    src, dst = graph.neighbour_pairs(members, direction="out")
    where = np.searchsorted(members, dst)
    inside = (where < members.size) & (members[np.minimum(where, members.size - 1)] == dst)
    a, b = np.searchsorted(members, src[inside]), where[inside]
    same = local_types[a] == local_types[b]
    if not same.any():
        return np.zeros((0, 2), np.int64)
    return sig.unique_pairs(sig.canonical_pairs(a[same], b[same]), size=members.size)


def _search_summary(n: int, per_signal: dict[str, sig.TopM]) -> dict[str, Any]:
    """What one type's candidate search cost: pairs scored per signal, against the n² of exact all-pairs."""
    ivf = per_signal["name"]
    return {
        "nodes": n,
        "centroids": ivf.centroids,
        "largest_cluster": max(top.largest_cluster for top in per_signal.values()),
        "all_pairs": n * n,
        "pairs_scored": {s: top.scored for s, top in per_signal.items()},
        "share_of_all_pairs": {s: round(top.scored / max(1, n * n), 4) for s, top in per_signal.items()},
    }


def _search_total(by_type: dict[str, dict[str, Any]]) -> dict[str, Any]:
    everything = sum(t["all_pairs"] for t in by_type.values())
    scored = {s: sum(t["pairs_scored"][s] for t in by_type.values()) for s in SIMILARITY_SIGNALS}
    return {
        "all_pairs": everything,
        "pairs_scored": scored,
        "share_of_all_pairs": {s: round(v / max(1, everything), 4) for s, v in scored.items()},
    }


def _sweep(scores: np.ndarray, groups: np.ndarray, n_groups: int, members: int) -> list[dict[str, Any]]:
    """Similarity edges at each percentile under OR and AND logic, over the same candidates (paper Table 5)."""
    rows = []
    for percentile in SWEEP_PERCENTILES:
        thresholds = sig.percentile_thresholds(scores, groups, percentile, n_groups)
        votes = sig.above(scores, groups, thresholds)
        for logic, kept in (("OR", votes.any(axis=1)), ("AND", votes.all(axis=1))):
            edges = int(kept.sum())
            rows.append(
                {
                    "percentile": percentile,
                    "logic": logic,
                    "edges": edges,
                    "share_of_candidates": round(edges / max(1, scores.shape[0]), 4),
                    "avg_degree": round(2 * edges / max(1, members), 2),
                    "density": edges / max(1, members * (members - 1) / 2),
                }
            )
    return rows


def build_sage_graph(
    nodes: NodeTable,
    graph: CsrGraph,
    name_vectors: ExactIndex,
    content_vectors: ExactIndex,
    config: SageBuildConfig | None = None,
    *,
    index_identity: dict[str, Any] | None = None,
    lexicon: NameLexicon | None = None,
) -> SageGraph:
    config = config or SageBuildConfig()
    config.validate()
    seconds: dict[str, float] = {}
    clock = time.perf_counter()

    def lap(stage: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        seconds[stage] = round(now - clock, 2)
        logger.info("sage build: %s %.1f s", stage, now - clock)
        clock = now

    rich = rich_text(nodes, min_content_words=config.min_content_words)
    members = np.flatnonzero(rich.mask).astype(np.int64)  # local index i ↔ node position members[i]
    local_types = nodes.types[members].astype(np.int64)
    lap("rich_text")
    names = unit_rows(name_vectors, members, "name")
    contents = unit_rows(content_vectors, members, "document")
    entities = link_entities(
        nodes, lexicon or NameLexicon.build(nodes), members, max_df_share=config.max_entity_df_share
    )
    lap("entities")

    found: list[np.ndarray] = []
    search: dict[str, Any] = {}
    m, nprobe, centroids = config.neighbours, config.nprobe, config.centroids
    for group in sig.type_groups(local_types):
        per_signal = {
            "name": sig.ann_top_m(names, group, m, nprobe=nprobe, centroids=centroids),
            "content": sig.ann_top_m(contents, group, m, nprobe=nprobe, centroids=centroids),
            "entity": sig.sparse_top_m(entities.matrix, group, m),
        }
        found.extend(top.pairs for top in per_signal.values())
        search[nodes.schema.node_types[int(local_types[group[0]])].name] = _search_summary(group.size, per_signal)
    empty = np.zeros((0, 2), np.int64)
    candidates = sig.unique_pairs(*found, empty, size=members.size)
    lap("candidates")

    structural = _structural_pairs(graph, members, local_types) if config.structural else empty
    pairs = sig.unique_pairs(candidates, structural, size=members.size)
    keys = pairs[:, 0] * members.size + pairs[:, 1]
    is_candidate = np.isin(keys, candidates[:, 0] * members.size + candidates[:, 1])
    is_structural = np.isin(keys, structural[:, 0] * members.size + structural[:, 1])
    scores = np.stack(
        [
            sig.dense_pair_scores(names, pairs),
            sig.dense_pair_scores(contents, pairs),
            sig.sparse_pair_scores(entities.matrix, pairs),
        ],
        axis=1,
    )
    groups = local_types[pairs[:, 0]]
    lap("scores")

    n_types = len(nodes.schema.node_types)
    selection = sig.select_edges(scores, groups, is_candidate, is_structural, config.percentile, n_types)
    thresholds, kept = selection.thresholds, selection.kept
    sweep = _sweep(scores[is_candidate], groups[is_candidate], n_types, members.size)
    pairs, bits, scores = pairs[kept], selection.bits[kept], scores[kept]
    column = sig.best_shared_column(entities.matrix, pairs)
    entity = np.full(column.size, -1, np.int64)
    entity[column >= 0] = entities.nodes[column[column >= 0]]
    lap("select")

    type_names = [t.name for t in nodes.schema.node_types]
    similarity_edges = int((bits & ~BITS["structure"] != 0).sum())
    meta: dict[str, Any] = {
        "index": index_identity or {},
        "config": asdict(config),
        "rich": rich.summary(nodes),
        "entities": {
            "entities": int(entities.matrix.shape[1]),
            "mentions_linked": entities.mentions,
            "node_entity_pairs": int(entities.matrix.nnz),
            "nodes_with_entities": int((np.diff(entities.matrix.indptr) > 0).sum()),
        },
        "thresholds": {
            type_names[code]: dict(zip(SIMILARITY_SIGNALS, map(float, thresholds[code]), strict=True))
            for code in np.unique(local_types)
            if not np.isnan(thresholds[code]).all()
        },
        "candidate_pairs": int(candidates.shape[0]),
        "candidate_search": {
            "method": "ivf",
            "note": "pairs_scored: ordered (node, member) scores computed per signal; share: of n² per type",
            "by_type": search,
            "total": _search_total(search),
        },
        "edges": {
            "total": int(pairs.shape[0]),
            "similarity": similarity_edges,
            "share_of_candidates": round(similarity_edges / max(1, candidates.shape[0]), 4),
            "structure_only": int((bits == BITS["structure"]).sum()),
            "by_signal": {s: int((bits & b != 0).sum()) for s, b in BITS.items()},
        },
        "graph_nodes": int(members.size),
        "density": pairs.shape[0] / max(1, members.size * (members.size - 1) / 2),
        "seconds": seconds,
    }
    built = SageGraph.from_pairs(len(nodes), members[pairs], bits, scores, entity, rich.mask, meta)
    meta["degree"] = degree_summary(built.degree(members))
    meta["degree_by_type"] = {
        type_names[code]: degree_summary(built.degree(members[local_types == code]))
        for code in np.unique(local_types)
    }
    meta["table5_sweep"] = sweep
    seconds["total"] = round(sum(seconds.values()), 2)
    return built


def build_for_index(index_dir: Path | str, config: SageBuildConfig | None = None) -> tuple[SageGraph, Path]:
    """Build the graph of an embedded index and write it to INDEX_DIR/sage. Loads only what the build reads
    (nodes, KG, name and document vectors), not BM25 or the relations vectors."""
    directory = Path(index_dir)
    manifest = read_manifest(directory)
    verify_files(directory, manifest, ("nodes", "graph", "vectors/name", "vectors/document"))
    try:
        nodes = NodeTable.load(directory / "nodes")
        graph = CsrGraph.load(directory / "graph")
        names = load_exact_vectors(directory / "vectors" / "name")
        documents = load_exact_vectors(directory / "vectors" / "document")
    except (OSError, KeyError, ValueError) as exc:
        raise IndexStoreError(
            f"{directory}: index is incomplete or damaged ({exc}); re-run skbqa ingest"
        ) from None
    identity = {
        "created_unix": manifest.get("created_unix"),
        "bundle_sha256": manifest.get("bundle", {}).get("sha256"),
        "encoder": manifest.get("encoder", {}).get("name"),
        "nodes": len(nodes),
    }
    built = build_sage_graph(nodes, graph, names, documents, config, index_identity=identity)
    return built, built.save(directory)
