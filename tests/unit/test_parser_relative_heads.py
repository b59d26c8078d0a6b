"""A common noun that heads a relative clause about another name ("the *band* that John Lennon belongs to") stands
for an unnamed node of that kind on the way to the answer, not for the node named "band"; a clause that only says
something else about it ("the band that John Lennon loved") names no relation, and the noun stays a name. A schema of its
own; nothing here is in any question set."""

from __future__ import annotations

import pytest

from skbqa.engine.embedded import EmbeddedEngine
from tests.helpers import edge_type, engine_over, node_type, nodes_of
from tests.unit.test_encoder_parser import constants, edges, parse

SCHEMA = {
    "name": "ensembles",
    "description": "People and the groups they play in, named by proper names and by common nouns",
    "node_types": [
        node_type("entity", "A person, a group of people or a kind of group, named by a proper or common noun."),
        node_type("style", "A style of music."),
    ],
    "edge_types": [
        edge_type("member_of", "entity", "entity", "the entity is a member of the target group or collection"),
        edge_type("kind_of", "entity", "entity", "the entity is a more specific kind of the target entity"),
        edge_type("plays_style", "entity", "style", "the group or person performs music in the target style"),
    ],
}
NODES = nodes_of(
    [
        (1, "entity", "band", "a group of musicians playing popular music together"),
        (2, "entity", "The Quarrymen", "a skiffle group formed in Liverpool in 1956"),
        (3, "entity", "John Lennon", "an English singer and songwriter"),
        (4, "entity", "Paul McCartney", "an English singer, songwriter and bass player"),
        (5, "entity", "George Harrison", "an English guitarist"),
        (6, "entity", "Miles Davis", "an American trumpeter"),
        (7, "entity", "Miles Davis Quintet", "a jazz quintet led by a trumpeter"),
        (8, "style", "jazz", "music with swing and improvisation"),
        (9, "entity", "Herbie Hancock", "an American pianist"),
    ]
)
EDGES = [
    {"src": s, "type": t, "dst": d}
    for s, t, d in [
        (2, "kind_of", 1),
        (7, "kind_of", 1),
        (3, "member_of", 2),
        (4, "member_of", 2),
        (5, "member_of", 2),
        (6, "member_of", 7),
        (9, "member_of", 7),
        (7, "plays_style", 8),
        (1, "plays_style", 8),
    ]
]


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory, onnx_encoder) -> EmbeddedEngine:
    return engine_over(tmp_path_factory.mktemp("ensembles"), onnx_encoder, SCHEMA, NODES, EDGES)


def test_the_head_of_a_relative_clause_about_a_name_is_a_node_on_the_way(engine: EmbeddedEngine) -> None:
    question = "Which people are members of the band that John Lennon is a member of?"
    parsed = parse(engine, question)
    assert [names for _, names in constants(parsed).values()] == [("John Lennon",)]
    unnamed = [name for name, symbol in parsed.symbols.items() if not symbol.is_constant and name != "y"]
    assert len(unnamed) == 1
    assert edges(parsed) == {("y", "member_of", unnamed[0]), ("c1", "member_of", unnamed[0])}
    assert {4, 5} <= {item.node_id for item in engine.ask(question, strategy="af").items[:3]}


def test_a_clause_that_names_no_relation_leaves_the_noun_a_name(engine: EmbeddedEngine) -> None:
    parsed = parse(engine, "Which groups are kinds of the band that John Lennon loved?")
    assert ("band",) in [names for _, names in constants(parsed).values()]
