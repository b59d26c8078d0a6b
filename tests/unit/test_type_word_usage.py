"""Which node type a word belongs to, by how the nodes of each type use it of themselves (names and the opening of
their texts), as rates so that a large type does not win by size."""

from __future__ import annotations

import numpy as np

from skbqa.skb.schema import Schema
from skbqa.stages.parse.type_word_usage import USAGE_FLOOR, TypeWordUsage
from skbqa.stores.nodes import NodeTable

SCHEMA = Schema.from_dict(
    {
        "node_types": [
            {"name": "tool", "description": "", "name_attr": "name"},
            {"name": "person", "description": "", "name_attr": "name"},
        ],
        "edge_types": [],
    }
)


def table(rows: list[tuple[int, str, str]]) -> NodeTable:
    return NodeTable(
        SCHEMA,
        np.arange(len(rows)),
        np.array([t for t, _, _ in rows], dtype=np.int64),
        [name for _, name, _ in rows],
        [text for _, _, text in rows],
        [{} for _ in rows],
    )


def test_a_word_a_types_nodes_use_of_themselves_points_to_that_type() -> None:
    tools = [(0, f"grep{i}", "A utility to search files for patterns.") for i in range(12)]
    people = [(1, f"Ann {i}", f"A developer who wrote utilities number {i}.") for i in range(40)]
    usage = TypeWordUsage(table(tools + people))
    shares = usage.shares({"utility", "utilities"})
    assert shares is not None
    # 12 of 12 tools say "utility", 40 of 40 people say "utilities": equal rates, whatever the sizes
    assert np.allclose(shares, [0.5, 0.5])
    developer = usage.shares({"developer", "developers"})
    # only people say "developer": they take all but the floor that keeps tools possible, never ruled out
    assert developer is not None and np.allclose(developer, [USAGE_FLOOR / 2, 1.0 - USAGE_FLOOR / 2])


def test_rare_and_late_words_say_nothing() -> None:
    tail = " filler" * 40
    rows = [(0, f"t{i}", f"A tool.{tail} person") for i in range(12)] + [(1, "p", "someone")] * 9
    usage = TypeWordUsage(table(rows))
    assert usage.shares({"person"}) is None  # only past the opening characters
    assert usage.shares({"someone"}) is None  # fewer than MIN_NODES nodes


def test_description_words_skip_quoted_identifiers_and_keep_short_nouns() -> None:
    """ "such as mail-transport-agent" names no type "agent"; "also called a tag" names one (3 letters)."""
    from skbqa.stages.parse.type_descriptions import description_nouns

    schema = Schema.from_dict(
        {
            "node_types": [
                {
                    "name": "label",
                    "description": "A label (also called a tag), e.g. role::program.",
                    "name_attr": "n",
                },
                {"name": "alias", "description": "A name such as mail-transport-agent.", "name_attr": "n"},
                {"name": "item", "description": "A program or tool that has labels.", "name_attr": "n"},
            ],
            "edge_types": [],
        }
    )
    words = description_nouns(schema)
    assert words["tag"] == {"label"}
    assert "agent" not in words and "mail" not in words
    assert words["program"] == {"item"}  # "role::program" is an example value, not a word of the label type
