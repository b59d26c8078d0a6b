"""Hierarchies said the way programmers say them, on a schema of its own (a small code base; nothing here is in
any question set): "the *parent* classes of X" asks for X's superclasses; a term noun that is a type's own word
("weakref *classes*") is that type, not a category of the name before it; "the subclasses of the Mailbox *class*"
asks for classes, as the type word after the name says; and an edge the schema has both ways between two types
("imports": module to package and back) takes its direction from the words, inside a chain too."""

from __future__ import annotations

import pytest

from skbqa.engine.embedded import EmbeddedEngine
from tests.helpers import edge_type, engine_over, node_type, nodes_of
from tests.unit.test_encoder_parser import edges, parse

SCHEMA = {
    "name": "codebase",
    "description": "The modules, packages and classes of a code base",
    "node_types": [
        node_type("module", "A module: one file of code."),
        node_type("package", "A package: a directory of modules and packages."),
        node_type("class", "A class defined in a module."),
    ],
    "edge_types": [
        edge_type("defined_in", "class", "module", "the class is defined in the target module"),
        edge_type("subclass_of", "class", "class", "the class inherits from the target class, its base"),
        edge_type("imports", "module", "module", "the module imports the target module"),
        edge_type("imports", "module", "package", "the module imports the target package"),
        edge_type("imports", "package", "module", "the package imports the target module"),
        edge_type("submodule_of", "package", "package", "the package is a submodule of the target package"),
    ],
}
NODES = nodes_of(
    [
        (1, "module", "weakref", "weak references"),
        (2, "module", "mailbox", "mailboxes in various formats"),
        (3, "module", "abcs", "abstract base classes of containers"),
        (4, "module", "urllib", "URL handling"),
        (5, "module", "xmlrpc", "XML remote procedure calls"),
        (6, "module", "smtplib", "an SMTP client"),
        (10, "package", "http", "HTTP modules"),
        (11, "package", "httpkit", "tools for HTTP clients"),
        (12, "package", "httptools", "parsers for HTTP messages"),
        (20, "class", "MutableMapping", "a mapping that can change"),
        (21, "class", "WeakValueDictionary", "a mapping whose values are weak references"),
        (22, "class", "WeakKeyDictionary", "a mapping whose keys are weak references"),
        (23, "class", "Mailbox", "a collection of messages"),
        (24, "class", "Maildir", "a mailbox in the Maildir format"),
        (25, "class", "mbox", "a mailbox in the mbox format"),
        (26, "class", "Mapping", "a read-only mapping"),
        (27, "class", "Container", "anything that holds items"),
        (28, "class", "WeakSet", "a set of weak references"),
    ]
)
EDGES = [
    {"src": s, "type": t, "dst": d}
    for s, t, d in [
        (21, "defined_in", 1), (22, "defined_in", 1), (28, "defined_in", 1), (23, "defined_in", 2),
        (24, "defined_in", 2), (25, "defined_in", 2), (20, "defined_in", 3), (26, "defined_in", 3),
        (27, "defined_in", 3), (21, "subclass_of", 20), (22, "subclass_of", 20), (20, "subclass_of", 26),
        (26, "subclass_of", 27), (24, "subclass_of", 23), (25, "subclass_of", 23), (2, "imports", 1),
        (4, "imports", 1), (5, "imports", 2), (6, "imports", 2), (4, "imports", 11), (5, "imports", 12),
        (11, "imports", 6), (12, "imports", 6), (11, "submodule_of", 10), (12, "submodule_of", 10),
    ]
]  # fmt: skip


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory, onnx_encoder) -> EmbeddedEngine:
    return engine_over(tmp_path_factory.mktemp("codebase"), onnx_encoder, SCHEMA, NODES, EDGES)


@pytest.mark.parametrize(
    ("question", "edge"),
    [
        ("What are the parent classes of MutableMapping?", ("c1", "subclass_of", "y")),
        ("What are the child classes of MutableMapping?", ("y", "subclass_of", "c1")),
    ],
)
def test_the_answers_head_noun_says_which_end_of_the_hierarchy(
    engine: EmbeddedEngine, question: str, edge: tuple[str, str, str]
) -> None:
    parsed = parse(engine, question)
    assert edges(parsed) == {edge}
    assert parsed.text_constraints == []  # "parent": said by the hop, no words to match


def test_a_term_noun_that_names_a_type_is_that_type(engine: EmbeddedEngine) -> None:
    question = "Which weakref classes subclass MutableMapping?"
    assert parse(engine, question).target_type == "class"
    assert {item.node_id for item in engine.ask(question, strategy="af").items[:2]} == {21, 22}


def test_a_level_of_a_name_typed_after_it_is_of_that_type(engine: EmbeddedEngine) -> None:
    question = "What are the subclasses of the Mailbox class in mailbox?"
    assert parse(engine, question).target_type == "class"
    assert {item.node_id for item in engine.ask(question, strategy="af").items[:2]} == {24, 25}


def test_an_edge_both_ways_inside_a_chain_goes_as_the_words_say(engine: EmbeddedEngine) -> None:
    question = "Which modules import one of the submodules of the http package?"
    parsed = parse(engine, question)
    assert ("y", "imports", "m1") in edges(parsed)
    assert {item.node_id for item in engine.ask(question, strategy="af").items[:2]} == {4, 5}
