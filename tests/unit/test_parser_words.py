"""Words the encoder parser must read as English, not as node names, on a schema of its own (nothing here is in
the development data): a word of a multi-word type name, a common noun after "a", a two-letter name, and an
unnamed node ("something") between two relations."""

from __future__ import annotations

from pathlib import Path

import pytest

from skbqa.engine.embedded import EmbeddedEngine
from skbqa.ingest.builder import ingest
from tests.helpers import write_bundle
from tests.unit.test_encoder_parser import constants, edges, parse

SCHEMA = {
    "name": "archive",
    "description": "software packages",
    "node_types": [
        {"name": "package", "description": "a binary package"},
        {"name": "source_package", "description": "the source a package is built from"},
        {"name": "maintainer", "description": "a person or team maintaining packages"},
        {"name": "tag", "description": "a label for packages"},
    ],
    "edge_types": [
        {"name": "depends", "source": "package", "target": "package", "description": "needs another package"},
        {"name": "built_from", "source": "package", "target": "source_package", "description": "built from"},
        {"name": "maintained_by", "source": "package", "target": "maintainer", "description": "maintained by"},
        {"name": "tagged", "source": "package", "target": "tag", "description": "carries a tag"},
    ],
}
NODES = [
    {"id": 1, "type": "package", "name": "jq", "text": "command-line JSON processor"},
    {"id": 2, "type": "package", "name": "curl", "text": "transfer data with URLs"},
    {"id": 3, "type": "package", "name": "jshon", "text": "JSON parser for the shell"},
    {"id": 4, "type": "package", "name": "wget2", "text": "web downloader"},
    {"id": 5, "type": "package", "name": "libcurl4", "text": "URL transfer library"},
    {"id": 6, "type": "source_package", "name": "curl", "text": "source of curl"},
    {"id": 7, "type": "maintainer", "name": "Ada Lovelace", "text": ""},
    {"id": 8, "type": "tag", "name": "source", "text": "source code"},
    {"id": 9, "type": "tag", "name": "library", "text": "a library"},
    {"id": 10, "type": "package", "name": "httpie", "text": "HTTP client"},
]
EDGES = [
    {"src": 3, "type": "depends", "dst": 1},
    {"src": 2, "type": "built_from", "dst": 6},
    {"src": 5, "type": "built_from", "dst": 6},
    {"src": 5, "type": "maintained_by", "dst": 7},
    {"src": 4, "type": "depends", "dst": 5},
    {"src": 10, "type": "depends", "dst": 2},
    {"src": 5, "type": "tagged", "dst": 9},
    {"src": 2, "type": "tagged", "dst": 8},
]


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory, onnx_encoder) -> EmbeddedEngine:
    directory: Path = tmp_path_factory.mktemp("archive")
    bundle = write_bundle(directory / "bundle", schema=SCHEMA, nodes=NODES, edges=EDGES, qa=[])
    ingest(bundle, directory / "index", onnx_encoder, progress=False)
    return EmbeddedEngine.open(directory / "index", encoder=onnx_encoder)


def test_a_two_letter_name_is_a_constant(engine: EmbeddedEngine) -> None:
    parsed = parse(engine, "which packages depend on jq?")
    assert constants(parsed) == {"c1": ("package", ("jq",))}
    assert engine.ask("which packages depend on jq?", strategy="af").items[0].node_id == 3


def test_a_word_of_a_type_name_is_not_a_node_name(engine: EmbeddedEngine) -> None:
    parsed = parse(engine, "which packages are built from the curl source?")
    assert all("source" not in names for _, names in constants(parsed).values())
    assert ("curl",) in [names for _, names in constants(parsed).values()]


def test_a_word_after_an_indefinite_article_is_a_common_noun(engine: EmbeddedEngine) -> None:
    parsed = parse(engine, "which packages depend on a library maintained by Ada Lovelace?")
    assert all("library" not in names for _, names in constants(parsed).values())


def test_something_between_two_relations_is_an_unnamed_node(engine: EmbeddedEngine) -> None:
    parsed = parse(engine, "which packages depend on something maintained by Ada Lovelace?")
    assert constants(parsed) == {"c1": ("maintainer", ("Ada Lovelace",))}
    assert edges(parsed) == {("y", "depends", "m1"), ("m1", "maintained_by", "c1")}
    assert parsed.symbols["m1"].type == "package"
    answer = engine.ask("which packages depend on something maintained by Ada Lovelace?", strategy="af")
    assert answer.items[0].node_id == 4


def test_two_names_joined_by_and_are_both_constants(engine: EmbeddedEngine) -> None:
    parsed = parse(engine, "which packages depend on jq and curl?")
    assert sorted(names for _, names in constants(parsed).values()) == [("curl",), ("jq",)]
