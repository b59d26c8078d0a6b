"""A two-letter word English also has ("re", "us") is a name where a name stands: right after a verb the schema
states a relation with, after a relating preposition, or as the subject after "does"; and an edge the schema has
both ways between two types takes its direction from the clause ("modules that import X" against "modules X
imports"). A schema of its own; nothing here is in any question set."""

from __future__ import annotations

import pytest

from skbqa.engine.embedded import EmbeddedEngine
from tests.helpers import edge_type, engine_over, node_type, nodes_of
from tests.unit.test_encoder_parser import constants, edges, parse

SCHEMA = {
    "name": "code",
    "description": "Python modules and packages and what they import",
    "node_types": [
        node_type("module", "A Python module: one file of code."),
        node_type("package", "A Python package: a directory of modules."),
    ],
    "edge_types": [
        edge_type("imports", "module", "package", "the module imports the target package"),
        edge_type("imports", "package", "module", "the package imports the target module"),
    ],
}
NODES = nodes_of(
    [
        (1, "package", "re", "regular expression operations"),
        (2, "module", "glob", "Unix style pathname pattern expansion"),
        (3, "module", "fnmatch", "Unix filename pattern matching"),
        (4, "module", "enum", "support for enumerations"),
        (5, "module", "csv", "CSV file reading and writing"),
    ]
)
EDGES = [{"src": s, "type": "imports", "dst": d} for s, d in ((2, 1), (3, 1), (1, 4))]


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory, onnx_encoder) -> EmbeddedEngine:
    return engine_over(tmp_path_factory.mktemp("code"), onnx_encoder, SCHEMA, NODES, EDGES)


@pytest.mark.parametrize(
    ("question", "edge", "answers"),
    [
        ("Which modules import re?", ("y", "imports", "c1"), {2, 3}),
        ("Which modules does re import?", ("c1", "imports", "y"), {4}),
        ("modules imported by re", ("c1", "imports", "y"), {4}),
    ],
)
def test_a_short_word_in_a_names_place_is_a_name(
    engine: EmbeddedEngine, question: str, edge: tuple[str, str, str], answers: set[int]
) -> None:
    parsed = parse(engine, question)
    assert [names for _, names in constants(parsed).values()] == [("re",)]
    assert edges(parsed) == {edge}
    found = [item.node_id for item in engine.ask(question, strategy="af").items[: len(answers)]]
    assert set(found) == answers
