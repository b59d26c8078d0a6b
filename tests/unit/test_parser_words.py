"""Words the encoder parser must read as English, not as node names, on a schema of its own (nothing here is in
the development data): a word of a multi-word type name, a common noun after "a", a two-letter name, and an
unnamed node ("something") between two relations."""

from __future__ import annotations

import pytest

from skbqa.engine.embedded import EmbeddedEngine
from tests.helpers import engine_over
from tests.unit.test_encoder_parser import constants, edges, parse

SCHEMA = {
    "name": "archive",
    "description": "software packages",
    "node_types": [
        {"name": "package", "description": "a binary package (a deb)"},
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
    {"id": 11, "type": "tag", "name": "deb", "text": "packaged as a .deb"},
    {"id": 12, "type": "tag", "name": "shared library", "text": "a library loaded at run time"},
    {"id": 13, "type": "tag", "name": "games", "text": "games and toys"},
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
    {"src": 5, "type": "tagged", "dst": 12},
    {"src": 3, "type": "tagged", "dst": 13},
]


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory, onnx_encoder) -> EmbeddedEngine:
    return engine_over(tmp_path_factory.mktemp("archive"), onnx_encoder, SCHEMA, NODES, EDGES)


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


def test_a_question_without_a_type_word_takes_its_target_from_the_verb(engine: EmbeddedEngine) -> None:
    """ "Who maintains libcurl4?": no word names the answer's type; "maintains" shares its stem with the edge
    maintained_by, whose far end from the named package is a maintainer."""
    parsed = parse(engine, "who maintains libcurl4?")
    assert parsed.target_type == "maintainer"
    assert any("name an edge" in w for w in parsed.warnings)
    assert engine.ask("who maintains libcurl4?", strategy="af").items[0].node_id == 7


def test_a_type_word_joined_to_a_name_by_the_verb_stays_the_target(engine: EmbeddedEngine) -> None:
    """ "packages maintained by Ada Lovelace", after an opener that keeps "packages" from heading the question:
    the verb's edge joins the mentioned type to the named maintainer, so the packages are what is asked for."""
    parsed = parse(engine, "In this archive, packages maintained by Ada Lovelace?")
    assert parsed.target_type == "package"


def test_of_two_types_the_earliest_word_decides_and_no_word_decides_nothing() -> None:
    from skbqa.skb.schema import Schema
    from skbqa.stages.parse.edge_word_target import EdgeWordTarget
    from skbqa.stages.parse.question_text import QuestionText

    words = EdgeWordTarget(Schema.from_dict(SCHEMA))
    # "tagged" (→ tag) comes before "maintained" (→ maintainer): the main verb
    assert (
        words.target(QuestionText.of("what is tagged or maintained with jq?"), {"package"}, set(), set()) == "tag"
    )
    assert (
        words.target(QuestionText.of("who maintains the programs tagged x?"), {"tag"}, {"package"}, set()) is None
    )
    assert words.target(QuestionText.of("what is jq about?"), {"package"}, set(), set()) is None


def test_a_name_the_schema_uses_for_the_answer_type_qualifies_it(engine: EmbeddedEngine) -> None:
    """ "which deb packages …": the schema describes packages as debs, so the tag named "deb" says what the answer
    is, not a node it must be tagged with."""
    parsed = parse(engine, "which deb packages depend on jq?")
    assert constants(parsed) == {"c1": ("package", ("jq",))}
    assert any("describes the answer's type" in w for w in parsed.warnings)
    assert engine.ask("which deb packages depend on jq?", strategy="af").items[0].node_id == 3


def test_a_typo_in_a_name_takes_in_the_shorter_name_inside_it(engine: EmbeddedEngine) -> None:
    """ "sharred library": "library" alone is a name too, but the corrected "shared library" is the longer one."""
    parsed = parse(engine, "which packages are tagged sharred library?")
    assert [names for _, names in constants(parsed).values()] == [("shared library",)]


def test_the_last_plural_noun_of_a_compound_heads_it(engine: EmbeddedEngine) -> None:
    """ "games packages …": "games" (a tag's name, and a plural noun) qualifies; "packages" is what is asked for."""
    parsed = parse(engine, "games packages that depend on jq")
    assert parsed.target_type == "package"


def test_a_passive_agent_after_the_name_is_the_answer(engine: EmbeddedEngine) -> None:
    """ "jq is depended on by what?": what depends on jq, not what jq depends on."""
    parsed = parse(engine, "jq is depended on by what?")
    assert edges(parsed) == {("y", "depends", "c1")}
    assert engine.ask("jq is depended on by what?", strategy="af").items[0].node_id == 3


def test_a_verb_ends_the_compound_that_heads_the_question(engine: EmbeddedEngine) -> None:
    """ "which packages require tags …": the verb ends the answer's noun phrase, so "tags" does not head it."""
    assert parse(engine, "which packages require tags like library?").target_type == "package"


def test_involved_says_participates() -> None:
    from skbqa.skb.schema import Schema
    from skbqa.stages.parse.edge_word_target import EdgeWordTarget
    from skbqa.stages.parse.question_text import QuestionText

    schema = Schema.from_dict(
        {
            "name": "cells",
            "description": "genes and processes",
            "node_types": [
                {"name": "gene", "description": "a gene"},
                {"name": "process", "description": "a process"},
            ],
            "edge_types": [
                {"name": "participates_in", "source": "gene", "target": "process", "description": "takes part"},
            ],
        }
    )
    words = EdgeWordTarget(schema)
    assert words.target(QuestionText.of("What is NGLY1 involved in?"), {"gene"}, set(), set()) == "process"
