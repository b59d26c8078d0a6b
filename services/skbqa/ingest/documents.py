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

# Bump when the text of any embedded document changes: precomputed vectors record the version they were made for.
DOCUMENTS_VERSION = 1
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


Group = tuple[str, np.ndarray]
RELATION_CHUNK = 20_000  # nodes whose relation documents are built per step (bounded memory at millions)


def groups_of(nodes: NodeTable, graph: CsrGraph, positions: np.ndarray) -> dict[int, list[Group]]:
    """(label, neighbour positions) for each edge name and direction each of `positions` has neighbours over, in
    schema order, out before in: one batched gather per edge name and direction."""
    wanted = np.unique(np.asarray(positions, np.int64))
    groups: dict[int, list[Group]] = {int(p): [] for p in wanted.tolist()}
    for edge in graph.edge_names:
        for direction in ("out", "in"):
            sources, targets = graph.neighbour_pairs(wanted, edge, direction)
            if sources.size == 0:
                continue
            label = readable(edge) if direction == "out" else f"{readable(edge)} (inverse)"
            # neighbour_pairs returns pairs grouped by source in ascending order: split them into runs.
            starts = np.flatnonzero(np.r_[True, sources[1:] != sources[:-1]])
            ends = np.r_[starts[1:], sources.size]
            for source, start, end in zip(sources[starts].tolist(), starts.tolist(), ends.tolist(), strict=True):
                groups[source].append((label, targets[start:end]))
    return groups


def relation_groups(nodes: NodeTable, graph: CsrGraph) -> list[list[Group]]:
    """Per node: (label, neighbour positions) for each edge name and direction it has neighbours over."""
    groups = groups_of(nodes, graph, np.arange(len(nodes), dtype=np.int64))
    return [groups[p] for p in range(len(nodes))]


def relation_documents(
    nodes: NodeTable, graph: CsrGraph, progress: Callable[[int], None] | None = None
) -> list[str]:
    out: list[str] = []
    for lo in range(0, len(nodes), RELATION_CHUNK):
        out += relation_documents_for(nodes, graph, lo, min(lo + RELATION_CHUNK, len(nodes)))
        if progress is not None:
            progress(lo)
    return out


def relation_documents_for(nodes: NodeTable, graph: CsrGraph, lo: int, hi: int) -> list[str]:
    """The relation documents of positions lo..hi-1 (see `relation_documents_of`)."""
    return relation_documents_of(nodes, graph, np.arange(lo, hi, dtype=np.int64))


def relation_documents_of(nodes: NodeTable, graph: CsrGraph, positions: np.ndarray) -> list[str]:
    """The relation documents of `positions`, in that order; only these nodes' and their functional neighbours'
    groups are gathered, so the memory of a chunk does not grow with the graph."""
    groups = groups_of(nodes, graph, positions)
    vias = {int(t[0]) for g in groups.values() for _, t in g if t.size == 1}
    second = groups_of(nodes, graph, np.fromiter(vias, np.int64, len(vias)))
    names = nodes.names
    out: list[str] = []
    for position in np.asarray(positions, np.int64).tolist():
        head = f"{readable(nodes.type_name(position))}: {names[position]}."
        text = nodes.texts[position][:MAX_TEXT_IN_RELATION_DOC]
        parts: list[str] = []
        own = groups[position]
        for label, targets in own:
            shown = ", ".join(names[t] for t in targets[:NAMES_PER_RELATION].tolist())
            more = f" and {targets.size - NAMES_PER_RELATION} more" if targets.size > NAMES_PER_RELATION else ""
            parts.append(f"{label}: {shown}{more}")
        for label, targets in own:
            if targets.size != 1:
                continue
            via = int(targets[0])
            for label2, targets2 in second[via]:
                # Only the intermediate's own outgoing relations: inverse ones would list its other
                # members (siblings of this node), which describe the neighbour, not this node.
                if label2.endswith("(inverse)") or position in targets2:
                    continue
                shown = ", ".join(names[t] for t in targets2[:NAMES_PER_SECOND_HOP].tolist())
                parts.append(f"{label} {names[via]} → {label2}: {shown}")
        relations = "; ".join(parts)
        doc = f"{head} {text} Relations: {relations}" if relations else f"{head} {text}"
        out.append(doc[:MAX_RELATION_DOC_CHARS])
    return out


def embedded_texts(set_name: str, nodes: NodeTable, graph: CsrGraph, positions: np.ndarray) -> list[str]:
    """The texts of one embedding set (`name`, `document`, `relations`) for `positions`, in that order."""
    if set_name == "name":
        names = nodes.names
        return [names[p] for p in np.asarray(positions, np.int64).tolist()]
    if set_name == "document":
        return [embedding_document(nodes, p) for p in np.asarray(positions, np.int64).tolist()]
    if set_name == "relations":
        return relation_documents_of(nodes, graph, positions)
    raise ValueError(f"unknown embedding set {set_name!r}")
