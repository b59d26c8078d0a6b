from __future__ import annotations

from pathlib import Path

from skbqa.ingest.documents import MAX_RELATION_DOC_CHARS, document, embedding_document, relation_documents
from skbqa.skb.bundle import load_bundle
from skbqa.stores.graph.csr import CsrGraph
from skbqa.stores.nodes import NodeTable


def _table(bundle: Path) -> tuple[NodeTable, CsrGraph]:
    skb = load_bundle(bundle)
    graph = CsrGraph.build(skb.num_nodes, skb.schema.edge_names, skb.edge_src, skb.edge_dst, skb.edge_type)
    return NodeTable.from_skb(skb), graph


def test_document_has_type_name_text_and_attributes(tiny_bundle: Path) -> None:
    nodes, _ = _table(tiny_bundle)
    doc = document(nodes, 0)
    assert doc.startswith("paper: Graph neural networks for molecules.")
    assert "message passing" in doc and "year: 2019" in doc
    assert "year" not in embedding_document(nodes, 0)  # the embedded form leaves attributes to BM25


def test_relation_document_lists_one_hop_both_directions_and_functional_two_hop(tiny_bundle: Path) -> None:
    nodes, graph = _table(tiny_bundle)
    docs = relation_documents(nodes, graph)
    paper_12 = docs[int(nodes.positions([12])[0])]
    assert "written by: Ada Lovelace" in paper_12
    assert "cites: Graph neural networks for molecules" in paper_12
    # paper 12 cites exactly one paper (functional for it), so that paper's own relations are a 2-hop path
    assert "cites Graph neural networks for molecules → has field: chemistry" in paper_12
    author_20 = docs[int(nodes.positions([20])[0])]
    assert "written by (inverse): Graph neural networks for molecules, Protein folding with attention" in author_20
    assert all(len(d) <= MAX_RELATION_DOC_CHARS for d in docs)
