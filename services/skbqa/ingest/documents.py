"""The three texts embedded per node, as AF-Retriever uses them.

- name: the node's name alone — symbol candidates (step 4) are matched on names *without* relations, which the
  AF-Retriever ablation (Table 20) shows is better for finding constants.
- document: "type: name. text. attr: value; ..." — the node's own content, also what BM25 indexes.
- document with relations: the document (text capped) followed by its 1-hop relations grouped by edge type and
  direction, and 2-hop paths through relations that are functional for the node (the node has exactly one
  neighbour over that edge: 1-1 / n-1 in the paper's words). Length-capped: the encoder reads 128 tokens.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from skbqa.stores.graph.csr import CsrGraph
from skbqa.stores.nodes import NodeTable

MAX_TEXT_CHARS = 1500  # document text cap (BM25 and the document embedding)
MAX_TEXT_IN_RELATION_DOC = 200  # keep room for relations inside the encoder's 128-token window
MAX_RELATION_DOC_CHARS = 700
NAMES_PER_RELATION = 6
NAMES_PER_SECOND_HOP = 3


def readable(identifier: str) -> str:
    return identifier.replace("_", " ").strip()


def document(nodes: NodeTable, position: int) -> str:
    head = f"{readable(nodes.type_name(position))}: {nodes.names[position]}."
    text = nodes.texts[position][:MAX_TEXT_CHARS]
    attrs = "; ".join(
        f"{readable(k)}: {v}"
        for k, v in nodes.attrs[position].items()
        if v not in (None, "") and not _is_identifier(k)
    )
    return " ".join(part for part in (head, text, attrs and f"({attrs})") if part)


def _is_identifier(key: str) -> bool:
    """Database identifiers (entrez_id, uniprot_ids, ...) are noise for both BM25 and the encoder."""
    lowered = key.lower()
    return lowered == "id" or lowered.endswith(("_id", "_ids", " id", " ids"))


def documents(nodes: NodeTable) -> list[str]:
    return [document(nodes, i) for i in range(len(nodes))]


def embedding_document(nodes: NodeTable, position: int) -> str:
    """The document as embedded: type, name and text without the attribute list (which BM25 still sees)."""
    return (
        f"{readable(nodes.type_name(position))}: {nodes.names[position]}. {nodes.texts[position][:MAX_TEXT_CHARS]}"
    )


def embedding_documents(nodes: NodeTable) -> list[str]:
    return [embedding_document(nodes, i) for i in range(len(nodes))]


def relation_groups(nodes: NodeTable, graph: CsrGraph) -> list[list[tuple[str, np.ndarray]]]:
    """Per node: (label, neighbour positions) for each edge name and direction it has neighbours over."""
    groups: list[list[tuple[str, np.ndarray]]] = [[] for _ in range(len(nodes))]
    everyone = np.arange(len(nodes), dtype=np.int64)
    for edge in graph.edge_names:
        for direction in ("out", "in"):
            sources, targets = graph.neighbour_pairs(everyone, edge, direction)
            if sources.size == 0:
                continue
            label = readable(edge) if direction == "out" else f"{readable(edge)} (inverse)"
            # neighbour_pairs returns pairs grouped by source in ascending order: split them into runs.
            starts = np.flatnonzero(np.r_[True, sources[1:] != sources[:-1]])
            for run, start in enumerate(starts):
                end = starts[run + 1] if run + 1 < starts.size else sources.size
                groups[int(sources[start])].append((label, targets[start:end]))
    return groups


def relation_documents(
    nodes: NodeTable, graph: CsrGraph, progress: Callable[[int], None] | None = None
) -> list[str]:
    groups = relation_groups(nodes, graph)
    names = nodes.names
    out: list[str] = []
    for position in range(len(nodes)):
        head = f"{readable(nodes.type_name(position))}: {names[position]}."
        text = nodes.texts[position][:MAX_TEXT_IN_RELATION_DOC]
        parts: list[str] = []
        for label, targets in groups[position]:
            shown = ", ".join(names[int(t)] for t in targets[:NAMES_PER_RELATION])
            more = f" and {targets.size - NAMES_PER_RELATION} more" if targets.size > NAMES_PER_RELATION else ""
            parts.append(f"{label}: {shown}{more}")
        for label, targets in groups[position]:
            if targets.size != 1:
                continue
            via = int(targets[0])
            for label2, targets2 in groups[via]:
                # Only the intermediate's own outgoing relations: inverse ones would list its other
                # members (siblings of this node), which describe the neighbour, not this node.
                if label2.endswith("(inverse)") or position in targets2:
                    continue
                shown = ", ".join(names[int(t)] for t in targets2[:NAMES_PER_SECOND_HOP])
                parts.append(f"{label} {names[via]} → {label2}: {shown}")
        relations = "; ".join(parts)
        doc = f"{head} {text} Relations: {relations}" if relations else f"{head} {text}"
        out.append(doc[:MAX_RELATION_DOC_CHARS])
        if progress is not None and position % 10000 == 0:
            progress(position)
    return out
