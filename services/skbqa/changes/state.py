"""The knowledge base as changes see it: nodes by id and the set of edges, read from an index, changed one batch
at a time (a batch applies whole or not at all), and written back as an `SKB` for the index builder.

Edges are a set: adding an edge that exists and removing one that does not change nothing, so a batch applied
twice leaves the same knowledge base (the change log's replay relies on it). `touched` collects, since the state
was read, the ids whose record changed, whose name changed (neighbours' texts quote it) and the ends of changed
edges: the builder re-embeds only texts that read them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from skbqa.changes.format import AddEdge, Change, ChangeError, DeleteNode, RemoveEdge, UpsertNode
from skbqa.skb.model import SKB, Scalar, lookup_positions
from skbqa.skb.schema import Schema
from skbqa.stores.graph.csr import CsrGraph
from skbqa.stores.nodes import NodeTable

Edge = tuple[int, int, int]  # (source id, edge code, target id)


@dataclass
class Touched:
    records: set[int] = field(default_factory=set)  # added, deleted, or name / type / text / attrs changed
    names: set[int] = field(default_factory=set)  # added, deleted or renamed
    edges: set[int] = field(default_factory=set)  # an end of an added or removed edge

    def copy(self) -> Touched:
        return Touched(set(self.records), set(self.names), set(self.edges))

    def merge(self, other: Touched) -> None:
        self.records |= other.records
        self.names |= other.names
        self.edges |= other.edges


@dataclass(frozen=True)
class NodeRecord:
    type: int
    name: str
    text: str
    attrs: dict[str, Scalar]


class KbState:
    def __init__(self, schema: Schema, nodes: dict[int, NodeRecord], edges: set[Edge]) -> None:
        self.schema = schema
        self.nodes = nodes
        self.edges = edges
        self.incident: dict[int, set[Edge]] = {}
        for edge in edges:
            self.incident.setdefault(edge[0], set()).add(edge)
            self.incident.setdefault(edge[2], set()).add(edge)
        self.touched = Touched()
        n_types = len(schema.node_types)
        self._allowed = np.zeros((len(schema.edge_names), n_types, n_types), dtype=bool)
        for e in schema.edge_types:
            self._allowed[schema.edge_code(e.name), schema.node_code(e.source), schema.node_code(e.target)] = True

    @classmethod
    def from_index(cls, nodes: NodeTable, graph: CsrGraph) -> KbState:
        ids = nodes.ids.tolist()
        records = {
            node_id: NodeRecord(int(t), nodes.names[i], nodes.texts[i], dict(nodes.attrs[i]))
            for i, (node_id, t) in enumerate(zip(ids, nodes.types.tolist(), strict=True))
        }
        src, dst, codes = graph.edge_arrays()
        id_of = nodes.ids
        edges = set(zip(id_of[src].tolist(), codes.tolist(), id_of[dst].tolist(), strict=True))
        return cls(nodes.schema, records, edges)

    # ------------------------------------------------------------------------------------------------ changes

    def apply(
        self, batch: list[tuple[int, Change]], where: str, then: Callable[[Counter[str]], None] | None = None
    ) -> Counter[str]:
        """Apply every change of `batch` ((line, change) pairs) or none: the first one that does not fit raises
        ChangeError naming its line, after the ones before it are undone. `then` runs once all fit, with the
        outcome (the log append, which records it for idempotent resends): when it raises, the batch is undone
        too. Returns what happened, by outcome."""
        undo: list[tuple[str, Any]] = []
        touched_before = self.touched.copy()
        outcome: Counter[str] = Counter()
        try:
            for line, change in batch:
                outcome[self._apply_one(change, where, line, undo)] += 1
            if not self.nodes:
                raise ChangeError(where, None, "the batch would leave the knowledge base without nodes")
            if then is not None:
                then(outcome)
        except BaseException:
            for kind, item in reversed(undo):
                self._undo(kind, item)
            self.touched = touched_before
            raise
        return outcome

    def _apply_one(self, change: Change, where: str, line: int, undo: list[tuple[str, Any]]) -> str:
        if isinstance(change, UpsertNode):
            return self._upsert(change, where, line, undo)
        if isinstance(change, DeleteNode):
            old = self.nodes.get(change.id)
            if old is None:
                return "nodes already absent"
            for edge in list(self.incident.get(change.id, ())):
                self._remove_edge(edge, undo)
            undo.append(("node", (change.id, old)))
            del self.nodes[change.id]
            self.touched.records.add(change.id)
            self.touched.names.add(change.id)
            return "nodes deleted"
        edge = self._edge(change, where, line)
        if isinstance(change, AddEdge):
            if edge in self.edges:
                return "edges already present"
            self.edges.add(edge)
            self._link(edge)
            undo.append(("added", edge))
            self.touched.edges.update((edge[0], edge[2]))
            return "edges added"
        if edge not in self.edges:
            return "edges already absent"
        self._remove_edge(edge, undo)
        return "edges removed"

    def _upsert(self, change: UpsertNode, where: str, line: int, undo: list[tuple[str, Any]]) -> str:
        if not self.schema.has_node_type(change.type):
            raise ChangeError(where, line, f"node type {change.type!r:.80} is not declared in the schema")
        code = self.schema.node_code(change.type)
        old = self.nodes.get(change.id)
        if old is not None and old.type != code:
            was = self.schema.node_types[old.type].name
            raise ChangeError(
                where,
                line,
                f"node {change.id} is a {was}; an upsert cannot make it a {change.type} "
                "(delete it, then add it with its new type and edges)",
            )
        record = NodeRecord(code, change.name, change.text, dict(change.attrs))
        if old == record:
            return "nodes unchanged"
        undo.append(("node", (change.id, old)))
        self.nodes[change.id] = record
        self.touched.records.add(change.id)
        if old is None or old.name != record.name:
            self.touched.names.add(change.id)
        return "nodes added" if old is None else "nodes changed"

    def _edge(self, change: AddEdge | RemoveEdge, where: str, line: int) -> Edge:
        if not self.schema.has_edge_type(change.type):
            raise ChangeError(where, line, f"edge type {change.type!r:.80} is not declared in the schema")
        code = self.schema.edge_code(change.type)
        if isinstance(change, RemoveEdge):
            return (change.src, code, change.dst)
        for end, node_id in (("src", change.src), ("dst", change.dst)):
            if node_id not in self.nodes:
                raise ChangeError(where, line, f"edge {end} {node_id} is not a node of the knowledge base")
        src_type, dst_type = self.nodes[change.src].type, self.nodes[change.dst].type
        if not self._allowed[code, src_type, dst_type]:
            names = self.schema.node_types
            allowed = ", ".join(f"{a} → {b}" for a, b in self.schema.signatures(change.type))
            raise ChangeError(
                where,
                line,
                f"edge '{change.type}' connects {names[src_type].name} → {names[dst_type].name}, "
                f"but the schema allows only {allowed}",
            )
        return (change.src, code, change.dst)

    def _link(self, edge: Edge) -> None:
        self.incident.setdefault(edge[0], set()).add(edge)
        self.incident.setdefault(edge[2], set()).add(edge)

    def _remove_edge(self, edge: Edge, undo: list[tuple[str, Any]]) -> None:
        self.edges.discard(edge)
        for end in (edge[0], edge[2]):
            linked = self.incident.get(end)
            if linked is not None:
                linked.discard(edge)
        undo.append(("removed", edge))
        self.touched.edges.update((edge[0], edge[2]))

    def _undo(self, kind: str, item: Any) -> None:
        if kind == "node":
            node_id, old = item
            if old is None:
                self.nodes.pop(node_id, None)
            else:
                self.nodes[node_id] = old
        elif kind == "added":
            self.edges.discard(item)
            for end in (item[0], item[2]):
                self.incident.get(end, set()).discard(item)
        else:
            self.edges.add(item)
            self._link(item)

    # ------------------------------------------------------------------------------------------------ output

    def to_skb(self) -> SKB:
        """The knowledge base as the loader would read it from a bundle: nodes sorted by id, edges as positions."""
        ids = np.fromiter(sorted(self.nodes), np.int64, len(self.nodes))
        records = [self.nodes[i] for i in ids.tolist()]
        if self.edges:
            src_ids, codes, dst_ids = (np.asarray(column, np.int64) for column in zip(*self.edges, strict=True))
        else:
            src_ids = codes = dst_ids = np.zeros(0, np.int64)
        return SKB(
            self.schema,
            ids,
            np.asarray([r.type for r in records], np.int16),
            [r.name for r in records],
            [r.text for r in records],
            [dict(r.attrs) for r in records],
            lookup_positions(ids, src_ids).astype(np.int32),
            lookup_positions(ids, dst_ids).astype(np.int32),
            codes.astype(np.int16),
        )
