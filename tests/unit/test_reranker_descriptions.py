from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from skbqa.ingest.documents import relation_groups
from skbqa.models.chat import estimate_tokens
from skbqa.query.context import Candidate
from skbqa.skb.bundle import load_bundle
from skbqa.stages.rerank.descriptions import (
    Description,
    Level,
    NodeDescriber,
    fit_prompt,
    grounded_neighbours,
    node_relation_groups,
)
from skbqa.stores.graph.csr import CsrGraph
from skbqa.stores.nodes import NodeTable
from tests.helpers import write_bundle


def _table(bundle: Path) -> tuple[NodeTable, CsrGraph]:
    skb = load_bundle(bundle)
    graph = CsrGraph.build(skb.num_nodes, skb.schema.edge_names, skb.edge_src, skb.edge_dst, skb.edge_type)
    return NodeTable.from_skb(skb), graph


def _pos(nodes: NodeTable, node_id: int) -> int:
    return int(nodes.positions([node_id])[0])


def _candidate(position: int, **evidence: object) -> Candidate:
    return Candidate(position, 0.0, "test", evidence=dict(evidence))


def test_per_node_groups_match_the_ingest_grouping_for_every_node(tiny_bundle: Path) -> None:
    nodes, graph = _table(tiny_bundle)
    everyone = relation_groups(nodes, graph)
    mine = node_relation_groups(graph, range(len(nodes)))
    for position in range(len(nodes)):
        expected = [(label, targets.tolist()) for label, targets in everyone[position]]
        assert [(label, targets.tolist()) for label, targets in mine[position]] == expected


def test_full_description_has_content_one_hop_both_ways_and_only_functional_two_hop(tiny_bundle: Path) -> None:
    nodes, graph = _table(tiny_bundle)
    paper_12, author_21, author_20 = NodeDescriber(nodes, graph).describe(
        [_candidate(_pos(nodes, 12)), _candidate(_pos(nodes, 21)), _candidate(_pos(nodes, 20))]
    )
    assert paper_12.type_name == "paper"
    assert paper_12.full.startswith("Protein folding with attention. Attributes: year: 2021. Attention models")
    assert "written by: Ada Lovelace" in paper_12.full
    assert "cites Graph neural networks for molecules → has field: chemistry" in paper_12.full
    # Alan Turing wrote one paper: the inverse relation is functional for him, so that paper's own relations show,
    # but not its way back to him.
    assert (
        "written by (inverse) Retrieval over knowledge bases → has field: information retrieval" in author_21.full
    )
    assert "→ written by: Alan Turing" not in author_21.full
    # Ada wrote two papers: not functional, so no 2-hop path through either.
    assert "written by (inverse): Graph neural networks for molecules, Protein folding with attention" in (
        author_20.full
    )
    assert "→" not in author_20.full


def test_grounded_level_keeps_only_relations_reaching_grounded_neighbours(tiny_bundle: Path) -> None:
    nodes, graph = _table(tiny_bundle)
    ada = _pos(nodes, 20)
    (paper_12,) = NodeDescriber(nodes, graph).describe([_candidate(_pos(nodes, 12), grounded_neighbours=[ada])])
    assert "written by: Ada Lovelace" in paper_12.grounded
    assert "cites Graph neural networks for molecules → written by: Ada Lovelace" in paper_12.grounded
    assert "chemistry" not in paper_12.grounded and "cites: Graph" not in paper_12.grounded
    assert "Relations" not in paper_12.bare
    assert len(paper_12.bare) < len(paper_12.grounded) < len(paper_12.full)


def test_grounded_level_without_or_with_malformed_evidence_has_no_relations(tiny_bundle: Path) -> None:
    nodes, graph = _table(tiny_bundle)
    position = _pos(nodes, 12)
    plain, malformed = NodeDescriber(nodes, graph).describe(
        [_candidate(position), _candidate(position, grounded_neighbours=["not a node"])]
    )
    assert plain.grounded == plain.bare and malformed.grounded == malformed.bare
    assert grounded_neighbours(_candidate(position, grounded_neighbours=np.array([3, 1]))) == {1, 3}


def test_caps_and_whitespace(tmp_path: Path) -> None:
    papers = [{"id": 100 + i, "type": "paper", "name": f"P{i}", "attrs": {}, "text": "t"} for i in range(4)]
    field = {"id": 1, "type": "field", "name": "chemistry", "attrs": {}, "text": "line one\n\n  line two"}
    edges = [{"src": 100 + i, "type": "has_field", "dst": 1} for i in range(4)]
    nodes, graph = _table(write_bundle(tmp_path / "b", nodes=[*papers, field], edges=edges, qa=[]))
    describer = NodeDescriber(nodes, graph, names_per_relation=2, max_text_chars=12)
    (chemistry,) = describer.describe([_candidate(_pos(nodes, 1))])
    assert "has field (inverse): P0, P1 and 2 more" in chemistry.full
    assert "line one lin" in chemistry.bare and "\n" not in chemistry.full  # newlines collapsed, then capped
    assert "line two" not in chemistry.bare


def _descriptions() -> list[Description]:
    return [
        Description(0, "paper", full="F" * 400, grounded="G" * 200, bare="B" * 80),
        Description(1, "paper", full="f" * 400, grounded="g" * 200, bare="b" * 80),
    ]


def _render(texts: list[str]) -> str:
    return "Question: which?\n" + "\n".join(f"{i}, paper, {t}" for i, t in enumerate(texts, 1))


@pytest.mark.parametrize(
    ("level_size", "slack", "expected"),
    [("full", 0, "full"), ("full", -1, "grounded"), ("grounded", -1, "bare"), ("bare", -1, "truncated")],
)
def test_fit_prompt_falls_back_exactly_when_the_more_detailed_prompt_overflows(
    level_size: Level, slack: int, expected: Level
) -> None:
    descriptions = _descriptions()
    size = estimate_tokens(_render([d.text(level_size) for d in descriptions]))
    fitted = fit_prompt(_render, descriptions, size + slack)
    assert fitted.level == expected
    if expected == "truncated":
        assert estimate_tokens(fitted.prompt) <= size + slack
        assert "B" in fitted.prompt and "b" in fitted.prompt  # both candidates keep a share
    else:
        assert fitted.prompt == _render([d.text(expected) for d in descriptions])
