"""Abbreviations of the schema's own words, on a schema written for this test: read when the dictionary does not
know them, they name no node, stand on their own and abbreviate exactly one word of a type's or edge's name."""

from __future__ import annotations

import pytest

from skbqa.skb.schema import Schema
from skbqa.stages.parse.abbreviations import Abbreviations

SCHEMA = Schema.from_dict(
    {
        "name": "archive",
        "description": "software packages",
        "node_types": [
            {"name": "package", "description": "an installable unit"},
            {"name": "source_package", "description": "what packages are built from"},
            {"name": "maintainer", "description": "a person or team"},
            {"name": "process", "description": "a build process"},
        ],
        "edge_types": [
            {"name": "depends", "source": "package", "target": "package", "description": "needs at run time"},
            {"name": "recommends", "source": "package", "target": "package", "description": "should be there"},
            {"name": "built_from", "source": "package", "target": "source_package", "description": "its source"},
            {"name": "maintained_by", "source": "source_package", "target": "maintainer", "description": "who"},
            {"name": "runs", "source": "package", "target": "process", "description": "a process it runs"},
        ],
    }
)
NAMES = {"libs", "xz"}


@pytest.fixture(scope="module")
def abbreviations() -> Abbreviations:
    return Abbreviations(SCHEMA, lambda token: token in NAMES)


@pytest.mark.parametrize(
    ("short", "word"),
    [
        ("pkg", "package"),
        ("pkgs", "packages"),
        ("deps", "depends"),  # a verb keeps its own -s
        ("recs", "recommends"),
        ("src", "source"),
        ("procs", "processes"),
    ],
)
def test_an_abbreviation_reads_as_the_one_word_it_shortens(
    abbreviations: Abbreviations, short: str, word: str
) -> None:
    assert abbreviations.word_for(short) == word


@pytest.mark.parametrize(
    "token",
    [
        "maint",  # maintainer or maintained: two words, left as written
        "libs",  # a node's name
        "xz",  # too short
        "runs",  # the schema's own word
        "sect",  # English knows it
        "qqq",  # abbreviates nothing
    ],
)
def test_what_is_not_read_as_an_abbreviation(abbreviations: Abbreviations, token: str) -> None:
    assert abbreviations.word_for(token) is None


def test_only_words_that_stand_on_their_own_are_written_out(abbreviations: Abbreviations) -> None:
    expanded, done = abbreviations.expand("which pkgs have libfoo-dev and src-pkg deps?")
    assert expanded == "which packages have libfoo-dev and src-pkg depends?"
    assert done == [("pkgs", "packages"), ("deps", "depends")]


def test_contractions_typed_without_an_apostrophe_are_written_out(abbreviations: Abbreviations) -> None:
    assert abbreviations.expand("whats in the news section")[0] == "what is in the news section"
    assert abbreviations.expand("whos maintaining xz") == ("who is maintaining xz", [("whos", "who is")])


@pytest.mark.parametrize(
    ("question", "written"),
    [
        ("packages with installed size > 100000 KiB", "packages with installed size  above 100000 KiB"),
        ("size>=5", "size at least 5"),
        ("size <= -2", "size  at most -2"),
        ("a <b> tag", "a <b> tag"),  # no number after it: no comparison
    ],
)
def test_comparison_signs_before_a_number_are_read_as_words(
    abbreviations: Abbreviations, question: str, written: str
) -> None:
    assert abbreviations.expand(question)[0].replace("  ", " ").strip() == written.replace("  ", " ").strip()


def test_after_a_possessive_a_short_form_is_read_even_where_a_node_has_it() -> None:
    named = Abbreviations(SCHEMA, lambda token: token in {"deps", "xz"})
    assert named.expand("which deps are there")[0] == "which deps are there"  # a node's name
    assert named.expand("list xz's deps")[0] == "list xz's depends"  # what of xz is asked
    assert named.expand("list xz's hard deps")[0] == "list xz's hard depends"
