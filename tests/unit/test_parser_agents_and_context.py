"""Readings that come from how a schema describes itself, on a small library schema of its own: "who" asks for the
one type of persons, "where" for the one type of places, a noun several descriptions use belongs to the one whose opening phrase names its type with
it, and a place named by the knowledge base's own description ("… in Northshire") is where every answer is."""

from __future__ import annotations

import pytest

from skbqa.engine.embedded import EmbeddedEngine
from skbqa.skb.schema import Schema
from skbqa.stages.parse.type_descriptions import agent_types, description_heads, place_types
from tests.helpers import engine_over
from tests.unit.test_encoder_parser import edges, parse

SCHEMA = {
    "name": "northshire-libraries",
    "description": "The lending libraries of Northshire: their books, the writers of the books and the shelves.",
    "node_types": [
        {
            "name": "book",
            "description": "A printed volume (also called a title or tome) that a library lends, as listed in the"
            " NLC catalogue.",
        },
        {
            "name": "writer",
            "description": "A writer (also called an author or person) credited on books; the books list them.",
        },
        {"name": "shelf", "description": "A shelf of a library that holds printed volumes and a title card."},
        {"name": "town", "description": "A town of the county, such as Northshire's capital."},
    ],
    "edge_types": [
        {"name": "written_by", "source": "book", "target": "writer", "description": "who wrote the book"},
        {"name": "on_shelf", "source": "book", "target": "shelf", "description": "where the book is kept"},
        {"name": "lives_in", "source": "writer", "target": "town", "description": "the writer's home town"},
        {"name": "cites", "source": "book", "target": "book", "description": "the book quotes the other"},
    ],
}
NODES = [
    {
        "id": 1,
        "type": "book",
        "name": "Salt Roads",
        "text": "a novel",
        "attrs": {"homepage": "https://www.tide.org/s"},
    },
    {
        "id": 2,
        "type": "book",
        "name": "Iron Bells",
        "text": "a history",
        "attrs": {"homepage": "http://forge.net/i"},
    },
    {
        "id": 3,
        "type": "book",
        "name": "Quiet Orchards",
        "text": "poems",
        "attrs": {"homepage": "https://tide.org"},
    },
    {"id": 4, "type": "writer", "name": "Ada Voss", "text": "a novelist"},
    {"id": 5, "type": "writer", "name": "Tom Reed", "text": "a historian"},
    {"id": 6, "type": "shelf", "name": "Shelf A", "text": "fiction"},
    {"id": 9, "type": "shelf", "name": "NLC", "text": "the reference shelf"},
    {"id": 10, "type": "shelf", "name": "Quiet Orchards", "text": "the poetry shelf"},
    {"id": 11, "type": "town", "name": "tome", "text": "a hamlet"},
    {"id": 12, "type": "book", "name": "Authored", "text": "a memoir"},
    {"id": 13, "type": "book", "name": "Quote", "text": "an anthology"},
    {"id": 7, "type": "town", "name": "Northshire", "text": "the capital"},
    {"id": 8, "type": "town", "name": "Elmbridge", "text": "a village"},
]
EDGES = [
    {"src": 1, "type": "written_by", "dst": 4},
    {"src": 2, "type": "written_by", "dst": 5},
    {"src": 3, "type": "written_by", "dst": 4},
    {"src": 1, "type": "on_shelf", "dst": 6},
    {"src": 4, "type": "lives_in", "dst": 7},
    {"src": 5, "type": "lives_in", "dst": 8},
    {"src": 1, "type": "cites", "dst": 2},
    {"src": 3, "type": "cites", "dst": 1},
    {"src": 3, "type": "cites", "dst": 2},
]


@pytest.fixture(scope="module")
def schema() -> Schema:
    return Schema.from_dict(SCHEMA)


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory, onnx_encoder) -> EmbeddedEngine:
    return engine_over(tmp_path_factory.mktemp("library"), onnx_encoder, SCHEMA, NODES, EDGES)


def test_only_a_description_that_names_its_own_nodes_so_makes_an_agent(schema: Schema) -> None:
    # the book's description mentions no person; "the writers of the books" in the KB's description is no type's
    assert agent_types(schema) == {"writer"}


def test_a_description_that_calls_its_nodes_places_makes_a_place_type(schema: Schema) -> None:
    # "A town of the county": a place; the shelf's "holds printed volumes" says nothing of one
    assert place_types(schema) == {"town"}


def test_where_asks_for_the_one_type_of_places_an_edge_reaches(engine: EmbeddedEngine) -> None:
    parsed = parse(engine, "where is Ada Voss from?")
    assert parsed.target_type == "town"
    assert any("'where' asks for" in w for w in parsed.warnings)
    # no edge joins books to towns: "where" does not make a town the answer about a book
    assert parse(engine, "where is Salt Roads?").target_type != "town"


def test_a_participle_joined_to_a_name_by_a_hyphen_relates_it(engine: EmbeddedEngine) -> None:
    # a book is called "Authored"; in "Ada Voss-authored books" the word relates the writer to the books
    parsed = parse(engine, "Ada Voss-authored books")
    assert [s.names for s in parsed.constants] == [("Ada Voss",)]
    assert edges(parsed) == {("y", "written_by", "c1")}
    assert [s.names for s in parse(engine, "books citing Authored").constants] == [("Authored",)]


def test_a_verb_right_after_a_relative_pronoun_is_the_clauses_verb(engine: EmbeddedEngine) -> None:
    # a book is called "Quote": before a preposition it is the relative clause's verb, before a verb its subject
    assert [s.names for s in parse(engine, "books that quote from Salt Roads").constants] == [("Salt Roads",)]
    assert [s.names for s in parse(engine, "books that quote cites").constants] == [("quote",)]


def test_a_descriptions_opening_phrase_names_its_type(schema: Schema) -> None:
    heads = description_heads(schema)
    assert heads["volumes"] == {"book"}  # the shelf's description uses it further on
    assert "title" not in heads  # inside the parenthesis, not the opening phrase
    assert heads["shelf"] == {"shelf"}


def test_who_asks_for_the_one_type_of_persons(engine: EmbeddedEngine) -> None:
    parsed = parse(engine, "who wrote Iron Bells?")
    assert parsed.target_type == "writer"
    assert any("'who' asks for" in w for w in parsed.warnings)
    assert engine.ask("who wrote Iron Bells?", strategy="af").items[0].node_id == 5
    # a relative "who" after a noun asks nothing: the head noun does
    assert parse(engine, "books by writers who live in Elmbridge").target_type == "book"


def test_a_noun_several_descriptions_use_goes_to_the_one_that_opens_with_it(engine: EmbeddedEngine) -> None:
    question = "Which volumes did Ada Voss write?"
    parsed = parse(engine, question)
    assert parsed.target_type == "book"
    assert "target type 'book' read from 'volumes'" in parsed.warnings
    assert {item.node_id for item in engine.ask(question, strategy="af").items[:2]} == {1, 3}


def test_the_knowledge_bases_own_place_is_no_constraint(engine: EmbeddedEngine) -> None:
    parsed = parse(engine, "which books did Ada Voss write in Northshire?")
    assert [names for s in parsed.symbols.values() if (names := s.names)] == [("Ada Voss",)]
    assert any("names the knowledge base itself" in w for w in parsed.warnings)
    # a town that is not the knowledge base's own stays a constraint
    parsed = parse(engine, "which writers live in Elmbridge?")
    assert ("Elmbridge",) in [s.names for s in parsed.symbols.values()]


@pytest.mark.parametrize(
    "question",
    [
        "books that are cited by the book Salt Roads",  # the type word does not hide the passive's "by"
        "books that the book Salt Roads cites",  # nor is it a node on the way
        "Salt Roads: which books are cited by it?",  # the pronoun stands for the name
    ],
)
def test_the_named_book_cites_the_answer(engine: EmbeddedEngine, question: str) -> None:
    parsed = parse(engine, question)
    assert edges(parsed) == {("c1", "cites", "y")}
    assert engine.ask(question, strategy="af").items[0].node_id == 2


def test_a_site_names_the_addresses_on_it(engine: EmbeddedEngine) -> None:
    question = "books by Ada Voss with a homepage on tide.org"
    parsed = parse(engine, question)
    assert [(c.attribute, c.op) for c in parsed.constraints] == [("homepage", "=~")]
    assert "homepage" not in " ".join(parsed.text_constraints)
    assert {item.node_id for item in engine.ask(question, strategy="af").items[:2]} == {1, 3}
    # a site no address is on constrains nothing
    assert not parse(engine, "books by Ada Voss on example.com").constraints


def test_a_source_the_descriptions_cite_is_no_constraint(engine: EmbeddedEngine) -> None:
    for question in (
        "which books did Ada Voss write in NLC?",
        "What NLC books did Ada Voss write?",
        "NLC books written by Ada Voss",  # at the question's start
        "anything in NLC that Ada Voss wrote?",  # a relative clause after it
        "which books did Ada Voss write in the NLC?",  # an article between
    ):
        parsed = parse(engine, question)
        assert [names for s in parsed.symbols.values() if (names := s.names)] == [("Ada Voss",)], question
    # a shelf the descriptions do not cite stays a constraint in the same place
    assert ("Shelf A",) in [
        s.names for s in parse(engine, "which books did Ada Voss write in Shelf A?").symbols.values()
    ]


@pytest.mark.parametrize(
    "question",
    [
        "who wrote the Quiet Orchards book?",  # a shelf has that name too: the type word after it says which
        "who wrote the Salt Roads tome?",  # "tome" is the book's description word, though a town is called so
    ],
)
def test_a_type_word_after_a_name_types_it(engine: EmbeddedEngine, question: str) -> None:
    parsed = parse(engine, question)
    named = [s.type for s in parsed.symbols.values() if s.names]
    assert named == ["book"]
    assert engine.ask(question, strategy="af").items[0].node_id == 4


def test_coordinated_names_stand_in_one_relation(engine: EmbeddedEngine) -> None:
    # "Quiet Orchards" has no words of its own: it is cited as "Salt Roads" is, not citing
    question = "books cited by both Salt Roads and Quiet Orchards"
    parsed = parse(engine, question)
    assert edges(parsed) == {("c1", "cites", "y"), ("c2", "cites", "y")}
    assert engine.ask(question, strategy="af").items[0].node_id == 2


@pytest.mark.parametrize(
    ("question", "answer_type", "top"),
    [
        ("where is Salt Roads kept?", "shelf", 6),  # "kept" shares no stem with on_shelf, but means it
        ("where does Tom Reed make his home?", "town", 8),
    ],
)
def test_words_that_mean_an_edge_give_its_far_end(
    engine: EmbeddedEngine, question: str, answer_type: str, top: int
) -> None:
    parsed = parse(engine, question)
    assert parsed.target_type == answer_type
    assert any("mean an edge" in w for w in parsed.warnings)
    assert engine.ask(question, strategy="af").items[0].node_id == top


def test_what_do_asks_for_the_object_of_the_last_verb(engine: EmbeddedEngine) -> None:
    # "the books" is the subject of "cite", on the way to the answer; the answer is what they cite
    question = "What do the books that Ada Voss wrote cite?"
    parsed = parse(engine, question)
    assert parsed.target_type == "book"
    assert edges(parsed) == {
        ("m1", "written_by", "c1"),
        ("m1", "cites", "y"),
    }
    assert {item.node_id for item in engine.ask(question, strategy="af").items[:2]} == {1, 2}


def test_a_closing_wh_word_asks_whatever_the_question_opens_with(engine: EmbeddedEngine) -> None:
    question = "the books cited by Quiet Orchards were written by whom?"
    parsed = parse(engine, question)
    assert parsed.target_type == "writer"
    assert ("c1", "cites", "m1") in edges(parsed) and ("m1", "written_by", "y") in edges(parsed)
    assert {item.node_id for item in engine.ask(question, strategy="af").items[:2]} == {4, 5}


@pytest.mark.parametrize(
    "question", ["anything that cites Iron Bells", "is there anything that cites Iron Bells?"]
)
def test_a_placeholder_that_opens_the_question_is_the_answer(engine: EmbeddedEngine, question: str) -> None:
    # "anything" here is the answer itself, not an unnamed node between the answer and Iron Bells
    parsed = parse(engine, question)
    assert edges(parsed) == {("y", "cites", "c1")}


def test_a_second_name_after_and_also_stands_where_the_first_does(engine: EmbeddedEngine) -> None:
    question = "books that cite Iron Bells and also Salt Roads"
    parsed = parse(engine, question)
    assert edges(parsed) == {("y", "cites", "c1"), ("y", "cites", "c2")}
    assert engine.ask(question, strategy="af").items[0].node_id == 3


def test_the_name_in_a_relative_clause_is_its_verbs_subject(engine: EmbeddedEngine) -> None:
    # "the books that Quiet Orchards cites": Quiet Orchards cites them (Salt Roads, Iron Bells), not the reverse
    question = "which shelves are the books that Quiet Orchards cites kept on"
    parsed = parse(engine, question)
    assert ("c1", "cites", "m1") in edges(parsed)
    assert engine.ask(question, strategy="af").items[0].node_id == 6


def test_a_function_word_of_the_knowledge_bases_description_is_no_context(engine: EmbeddedEngine) -> None:
    # the description says "… the books and the shelves": "and" after "on" still joins two clauses
    parsed = parse(engine, "books that Ada Voss relies on and that cite Iron Bells")
    assert not any("names the knowledge base itself" in w for w in parsed.warnings)
