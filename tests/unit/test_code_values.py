"""Code columns are recognised from their values, whatever their key, and a partial or wildcard code reads as a
prefix that stops at a part boundary ("2.7.1." does not match 2.7.10.x)."""

from __future__ import annotations

import numpy as np

from skbqa.skb.schema import Schema
from skbqa.stages.parse.code_values import CodeValueSpotter
from skbqa.stages.parse.question_text import QuestionText
from skbqa.stores.attributes.catalog import AttributeCatalog
from skbqa.stores.nodes import NodeTable

SCHEMA = Schema.from_dict(
    {"node_types": [{"name": "part", "description": "", "name_attr": "name"}], "edge_types": []}
)


def spotter() -> CodeValueSpotter:
    attrs = [{"hs_code": f"84.{i % 7}.{i}", "colour": "red"} for i in range(30)]
    nodes = NodeTable(
        SCHEMA, np.arange(30), np.zeros(30, np.int64), [f"p{i}" for i in range(30)], [""] * 30, attrs
    )
    return CodeValueSpotter(AttributeCatalog.build(nodes))


def read(question: str) -> list[tuple[str, str, object]]:
    return [
        (m.constraint.attribute, m.constraint.op, m.constraint.value)
        for m in spotter()(QuestionText.of(question), "part")
    ]


def test_only_code_columns_are_code_columns() -> None:
    assert [c.key for c in spotter().columns("part")] == ["hs_code"]


def test_partial_and_wildcard_codes_are_prefixes_at_a_part_boundary() -> None:
    assert read("parts under HS 84.1.*") == [("hs_code", "STARTS WITH", "84.1.")]
    assert read("parts with hs code starting 84") == [("hs_code", "STARTS WITH", "84.")]
    assert read("the part with HS 84.3.10") == [("hs_code", "=", "84.3.10")]
    assert read("red parts") == []
