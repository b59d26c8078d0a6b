"""How people tie the parts of a question together, on a code-modules schema of its own (nothing here is in any
question set): a noun made from an edge's verb ("the imports of X", "the importers of X"), a relative clause with
or without "that" ("the modules X imports"), two names that share one verb after both, a second sentence that
refers back to a set the first describes, "who" asking through a type word, an idiom that names nothing, the
siblings of a named node, an aside that sets the named node aside, a plural type word before a verb and another
plural, and the plain edge between two types when a hop has no words of its own."""

from __future__ import annotations

import pytest

from skbqa.engine.embedded import EmbeddedEngine
from skbqa.stages.parse.chain_words import nominal_subject
from skbqa.stages.parse.sentence_joins import drop_restated_aside, join_sentences
from tests.helpers import engine_over
from tests.unit.test_encoder_parser import edges, parse

SCHEMA = {
    "name": "modules",
    "description": "code modules, who writes them and under which licences they ship",
    "node_types": [
        {"name": "module", "description": "a unit of code that other modules can import"},
        {"name": "author", "description": "a person who writes modules"},
        {"name": "license", "description": "the terms a module is distributed under"},
    ],
    "edge_types": [
        {
            "name": "imports",
            "source": "module",
            "target": "module",
            "description": "the module imports the target",
        },
        {"name": "written_by", "source": "module", "target": "author", "description": "who wrote the module"},
        {"name": "module_has_license", "source": "module", "target": "license", "description": "its licence"},
        {
            "name": "incompatible_with",
            "source": "module",
            "target": "license",
            "description": "a licence the module cannot be combined with",
        },
    ],
}
NODES = [
    {
        "id": 1,
        "type": "module",
        "name": "alpha-core",
        "attrs": {"is_deprecated": False},
        "text": "the core runtime",
    },
    {"id": 2, "type": "module", "name": "beta-net", "attrs": {"is_deprecated": True}, "text": "network sockets"},
    {
        "id": 3,
        "type": "module",
        "name": "gamma-ui",
        "attrs": {"is_deprecated": False},
        "text": "widgets for windows",
    },
    {
        "id": 4,
        "type": "module",
        "name": "delta-log",
        "attrs": {"is_deprecated": True},
        "text": "structured logging",
    },
    {
        "id": 5,
        "type": "module",
        "name": "epsilon-db",
        "attrs": {"is_deprecated": False},
        "text": "a database driver",
    },
    {"id": 6, "type": "author", "name": "Ines Park", "text": "writes networking code"},
    {"id": 7, "type": "author", "name": "Tomas Berg", "text": "writes user interfaces"},
    {"id": 8, "type": "license", "name": "Permissive-2", "text": "a permissive licence"},
    {"id": 9, "type": "license", "name": "Copyleft-3", "text": "a copyleft licence"},
]
EDGES = [
    {"src": 2, "type": "imports", "dst": 1},
    {"src": 3, "type": "imports", "dst": 1},
    {"src": 3, "type": "imports", "dst": 2},
    {"src": 4, "type": "imports", "dst": 2},
    {"src": 5, "type": "imports", "dst": 4},
    {"src": 1, "type": "written_by", "dst": 6},
    {"src": 2, "type": "written_by", "dst": 6},
    {"src": 3, "type": "written_by", "dst": 7},
    {"src": 4, "type": "written_by", "dst": 7},
    {"src": 5, "type": "written_by", "dst": 6},
    {"src": 1, "type": "module_has_license", "dst": 8},
    {"src": 2, "type": "module_has_license", "dst": 8},
    {"src": 3, "type": "module_has_license", "dst": 9},
    {"src": 4, "type": "module_has_license", "dst": 8},
    {"src": 5, "type": "module_has_license", "dst": 9},
    {"src": 1, "type": "incompatible_with", "dst": 9},
    {"src": 2, "type": "incompatible_with", "dst": 9},
]


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory, onnx_encoder) -> EmbeddedEngine:
    return engine_over(tmp_path_factory.mktemp("modules"), onnx_encoder, SCHEMA, NODES, EDGES)


def top(engine: EmbeddedEngine, question: str, k: int) -> set[int]:
    return {item.node_id for item in engine.ask(question, strategy="af").items[:k]}


@pytest.mark.parametrize(
    ("words", "subject"),
    [
        (["the", "imports", "of"], True),  # X imports them
        (["the", "reverse", "imports", "of"], False),
        (["the", "importers", "of"], False),  # an agent noun: they import X
        (["the", "subtypes", "of"], None),  # a level of a hierarchy is read elsewhere
        (["modules", "near"], None),
    ],
)
def test_a_noun_made_from_an_edges_verb_says_which_end_the_name_is(words: list[str], subject: bool | None) -> None:
    assert nominal_subject(words, lambda word: word.startswith("import")) is subject


def test_the_imports_of_a_module_are_what_it_imports(engine: EmbeddedEngine) -> None:
    assert edges(parse(engine, "what are the direct imports of gamma-ui")) == {("c1", "imports", "y")}
    assert edges(parse(engine, "list the importers of alpha-core")) == {("y", "imports", "c1")}


@pytest.mark.parametrize(
    "question",
    ["authors of the modules that gamma-ui imports", "authors of the modules gamma-ui imports"],
)
def test_a_relative_clause_makes_the_name_its_verbs_subject(engine: EmbeddedEngine, question: str) -> None:
    assert edges(parse(engine, question)) == {("c1", "imports", "m1"), ("m1", "written_by", "y")}
    assert top(engine, question, 1) == {6}  # alpha-core and beta-net are both by Ines Park


def test_who_asks_through_a_type_word_the_name_does_not_reach(engine: EmbeddedEngine) -> None:
    # no edge joins licences to authors: "who" reaches Permissive-2 through the modules
    question = "who writes the modules that have Permissive-2"
    parsed = parse(engine, question)
    assert parsed.target_type == "author"
    assert ("m1", "written_by", "y") in edges(parsed)


def test_two_names_before_one_verb_both_take_it(engine: EmbeddedEngine) -> None:
    parsed = parse(engine, "which modules do gamma-ui and delta-log both import")
    assert edges(parsed) == {("c1", "imports", "y"), ("c2", "imports", "y")}
    assert top(engine, "which modules do gamma-ui and delta-log both import", 1) == {2}


def test_a_second_sentence_refers_to_the_set_the_first_describes(engine: EmbeddedEngine) -> None:
    assert join_sentences("gamma-ui imports some modules. who wrote them") == (
        "who wrote the modules that gamma-ui imports"
    )
    assert join_sentences("whatever gamma-ui imports - what licenses do those modules have") == (
        "what licenses do the modules that gamma-ui imports have"
    )
    assert join_sentences("several modules import beta-net; who wrote them?") == (
        "who wrote the modules that import beta-net?"
    )
    assert join_sentences("what imports beta-net? list those") is None  # the first part asks; nothing to join
    parsed = parse(engine, "gamma-ui imports some modules. who wrote them")
    assert parsed.target_type == "author"
    assert edges(parsed) == {("c1", "imports", "m1"), ("m1", "written_by", "y")}


def test_an_idiom_names_nothing(engine: EmbeddedEngine) -> None:
    parsed = parse(engine, "modules that import alpha-core and beta-net at the same time")
    assert [s.names for s in parsed.constants] == [("alpha-core",), ("beta-net",)]
    assert top(engine, "modules that import alpha-core and beta-net at the same time", 1) == {3}


def test_what_else_asks_for_the_siblings_of_the_named_node(engine: EmbeddedEngine) -> None:
    question = "what else ships under the same license as gamma-ui"
    parsed = parse(engine, question)
    assert parsed.target_type == "module"
    assert top(engine, question, 1) == {5}  # epsilon-db, gamma-ui itself left out


def test_an_aside_that_sets_the_named_node_aside_is_dropped(engine: EmbeddedEngine) -> None:
    assert drop_restated_aside("Apart from X itself, which share a Y with X?") == "which share a Y with X?"
    assert drop_restated_aside("Apart from X, which modules import Z?") is None  # a real exclusion: kept
    parsed = parse(engine, "Apart from gamma-ui itself, which modules share a license with gamma-ui?")
    assert parsed.target_type == "module"
    assert not parsed.symbols["y"].names
    assert top(engine, "Apart from gamma-ui itself, which modules share a license with gamma-ui?", 1) == {5}


def test_a_plural_type_word_before_a_verb_heads_the_question(engine: EmbeddedEngine) -> None:
    assert parse(engine, "which authors write modules that import alpha-core").target_type == "author"


def test_a_hop_without_words_is_the_edge_named_by_its_two_types(engine: EmbeddedEngine) -> None:
    parsed = parse(engine, "licenses of the modules that import beta-net")
    assert ("m1", "module_has_license", "y") in edges(parsed)


def test_a_reference_before_a_verb_is_the_pronoun_alone() -> None:
    assert join_sentences("gamma-ui imports a bunch of modules; what licenses are those shipped under?") == (
        "what licenses are the modules that gamma-ui imports shipped under?"
    )
    # a first part that asks is the question itself, whatever follows
    assert join_sentences("are there modules with a number of imports? list them") is None


def test_a_passive_relative_clause_makes_the_nearer_node_the_agent(engine: EmbeddedEngine) -> None:
    parsed = parse(engine, "authors of the modules that alpha-core is imported by")
    assert edges(parsed) == {("m1", "imports", "c1"), ("m1", "written_by", "y")}


def test_who_with_a_copula_asks_for_a_person_whatever_the_noun(engine: EmbeddedEngine) -> None:
    assert parse(engine, "who are the coders of the modules gamma-ui imports").target_type == "author"


def test_having_a_name_listed_under_an_edge_makes_the_answer_its_subject(engine: EmbeddedEngine) -> None:
    assert edges(parse(engine, "which modules have beta-net listed under imports")) == {("y", "imports", "c1")}


def test_trailing_pluses_belong_to_the_word() -> None:
    from skbqa.stages.parse.question_text import QuestionText

    assert [t.text for t in QuestionText.of("packages that g++ and libstdc++6 need").tokens] == [
        "packages", "that", "g++", "and", "libstdc", "6", "need",
    ]  # fmt: skip


def test_a_topic_before_a_question_about_its_possessions_is_joined() -> None:
    from skbqa.stages.parse.sentence_joins import join_topic

    assert join_topic("gamma-ui modules - where do their authors live?") == (
        "where do the authors of gamma-ui modules live?"
    )
    assert join_topic("gamma-ui: what are its direct imports") == "what are the direct imports of gamma-ui"
    assert join_topic("gamma-ui imports beta-net: what are its licenses") is None  # the first part is a statement


def test_an_aside_may_be_named_again_as_it() -> None:
    assert drop_restated_aside("Other than Foo, type B itself, which modules share a license with it?") == (
        "which modules share a license with Foo, type B?"
    )


def test_a_request_first_then_a_question_about_those() -> None:
    assert join_sentences("First find the modules that import alpha-core; then who wrote those?") == (
        "who wrote the modules that import alpha-core?"
    )


def test_someone_stands_for_an_unnamed_node(engine: EmbeddedEngine) -> None:
    parsed = parse(engine, "which modules are written by someone who also wrote epsilon-db")
    assert edges(parsed) == {("c1", "written_by", "m1"), ("y", "written_by", "m1")}


def test_a_type_word_after_a_name_does_not_break_a_coordination(engine: EmbeddedEngine) -> None:
    parsed = parse(engine, "which modules do the gamma-ui module and the delta-log module both import")
    assert edges(parsed) == {("c1", "imports", "y"), ("c2", "imports", "y")}


def test_what_a_name_has_several_of_is_its_n() -> None:
    assert join_sentences("gamma-ui has several direct imports. who wrote them?") == (
        "who wrote the direct imports of gamma-ui?"
    )


def test_whoever_inside_a_question_is_someone_who(engine: EmbeddedEngine) -> None:
    parsed = parse(engine, "which modules are written by whoever wrote epsilon-db")
    assert parsed.target_type == "module"
    assert edges(parsed) == {("c1", "written_by", "m1"), ("y", "written_by", "m1")}


def test_a_yes_or_no_attribute_named_by_its_word_and_negated(engine: EmbeddedEngine) -> None:
    def flags(question: str) -> list[tuple[str, str, object]]:
        return [(c.attribute, c.op, c.value) for c in parse(engine, question).constraints]

    assert flags("deprecated modules that import alpha-core") == [("is_deprecated", "=", "true")]
    assert flags("modules importing alpha-core that are not deprecated") == [("is_deprecated", "=", "false")]
    assert top(engine, "modules importing alpha-core that are not deprecated", 1) == {3}


def test_a_start_or_end_of_a_name_said_outright(engine: EmbeddedEngine) -> None:
    parsed = parse(engine, "which modules whose name starts with delta import beta-net")
    assert [(c.attribute, c.op, c.value) for c in parsed.constraints] == [("name", "STARTS WITH", "delta")]
    assert edges(parsed) == {("y", "imports", "c1")}
    assert top(engine, "modules whose name ends with -ui", 1) == {3}


def test_a_word_glued_into_an_identifier_is_no_value_of_its_own() -> None:
    from skbqa.stages.parse.attribute_mentions import _part_of_an_identifier
    from skbqa.stages.parse.question_text import QuestionText

    text = QuestionText.of("packages tagged hardware::power:acpi in the hardware facet")
    assert _part_of_an_identifier(text, 2, 3)  # "hardware" of the tag's name
    assert not _part_of_an_identifier(text, 8, 9)  # "the hardware facet"


def test_a_question_in_capitals_reads_no_family_from_its_capitals(engine: EmbeddedEngine) -> None:
    from skbqa.stages.parse.family_prefixes import _shouted
    from skbqa.stages.parse.question_text import QuestionText

    assert _shouted(QuestionText.of("WHICH MODULES IMPORT ALPHA-CORE"))
    assert not _shouted(QuestionText.of("which TLR genes are linked to asthma"))
    parsed = parse(engine, "WHICH MODULES IMPORT ALPHA-CORE")
    assert not parsed.constraints
    assert edges(parsed) == {("y", "imports", "c1")}
