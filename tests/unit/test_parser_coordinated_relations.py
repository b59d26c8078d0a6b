"""Coordinated names stand in one relation: "countries that belong to both NATO and the EU" asks for members of
each. Each name's readings are ranked alone; the group takes the reading none of them rules out with the best sum,
so a name whose words lean to another edge ("belong to": part of) follows the one whose data allows only one.
A schema of its own; nothing here is in any question set."""

from __future__ import annotations

import pytest

from skbqa.engine.embedded import EmbeddedEngine
from skbqa.skb.schema import EdgeType
from skbqa.stages.parse.agreeing_relations import agree_coordinated, agreed_readings
from skbqa.stages.parse.relations import Hop, RelationOption
from tests.helpers import engine_over
from tests.unit.test_encoder_parser import edges, parse

PART = EdgeType("part_of", "place", "place", "the place is a part of the target place")
MEMBER = EdgeType("member_of", "place", "place", "the place is a member of the target group")


def _option(edge: EdgeType, score: float) -> RelationOption:
    return RelationOption((Hop(edge, False),), (), score)


def test_the_group_takes_the_reading_every_name_allows() -> None:
    first = [("place", [_option(PART, 0.24), _option(MEMBER, 0.14)])]
    second = [("place", [_option(MEMBER, 0.14), _option(PART, -9.8)])]  # the data rules part_of out
    readings = agreed_readings([first, second])
    assert readings[1] is None  # its own best already
    assert readings[0] is not None and readings[0][2].hops[0].edge is MEMBER


def test_no_shared_reading_changes_nothing() -> None:
    first = [("place", [_option(PART, 0.24), _option(MEMBER, -9.0)])]
    second = [("place", [_option(MEMBER, 0.14), _option(PART, -9.8)])]
    assert agreed_readings([first, second]) == [None, None]


def test_only_names_beside_each_other_and_read_alike_form_a_group() -> None:
    ranked = {
        0: [("place", [_option(PART, 0.24), _option(MEMBER, 0.14)])],
        1: [("place", [_option(MEMBER, 0.14), _option(PART, -9.8)])],
    }
    assert set(agree_coordinated([(False, "belong to"), (True, "belong to")], ranked.__getitem__)) == {0}
    assert agree_coordinated([(False, "belong to"), (True, "lie in")], ranked.__getitem__) == {}
    assert agree_coordinated([(False, "belong to"), (False, "belong to")], ranked.__getitem__) == {}


SCHEMA = {
    "name": "blocs",
    "description": "places, the larger places they are part of and the groups they are members of",
    "node_types": [
        {"name": "place", "description": "A country, region or group of countries.", "name_attr": "name"}
    ],
    "edge_types": [
        {"name": e.name, "source": e.source, "target": e.target, "description": e.description}
        for e in (PART, MEMBER)
    ],
}
PLACES = ["Norland", "Sudia", "Westmark", "Northern Alliance", "Trade Union", "Greater Norland"]
NODES = [{"id": i, "type": "place", "name": n, "text": f"{n}, a place."} for i, n in enumerate(PLACES, 1)]
# the alliance has parts and members; the union has members only
LINKS = [(1, "member_of", 4), (2, "member_of", 4), (1, "member_of", 5), (3, "member_of", 5), (6, "part_of", 4)]
EDGES = [{"src": s, "type": t, "dst": d} for s, t, d in LINKS]


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory, onnx_encoder) -> EmbeddedEngine:
    return engine_over(tmp_path_factory.mktemp("blocs"), onnx_encoder, SCHEMA, NODES, EDGES)


def test_both_names_take_the_relation_both_allow(engine: EmbeddedEngine) -> None:
    question = "which places are a part of both the Northern Alliance and the Trade Union?"
    assert edges(parse(engine, question)) == {("y", "member_of", "c1"), ("y", "member_of", "c2")}
    assert engine.ask(question, strategy="af").items[0].node_id == 1
