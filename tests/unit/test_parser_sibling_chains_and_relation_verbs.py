"""The glossary schema of `test_parser_compounds_and_text_fields`, with more nodes named by common English words (as
every word is in a dictionary): a chain is chosen by the type words it explains, not by the unnamed nodes it adds
("subtypes of *a term* that is a broader kind of X" is no detour through a field); the schema's own word for its
nodes after a type word still introduces an unnamed node ("a noun *sense* that …"), though a node is named "sense";
and a verb the schema states its relations with is the clause's verb, not a node ("nouns *formed* from X")."""

from __future__ import annotations

import pytest

from skbqa.engine.embedded import EmbeddedEngine
from skbqa.skb.schema import EdgeType, Schema
from skbqa.stages.parse.assemble import _longer_or_better
from skbqa.stages.parse.modifier_words import compared
from skbqa.stages.parse.question_text import QuestionText
from skbqa.stages.parse.relation_verbs import relates, stated_stems, states_a_relation
from skbqa.stages.parse.relations import Hop, RelationOption
from skbqa.stages.parse.type_mentions import TypeMention, on_the_way
from skbqa.stages.parse.type_synonyms import same_root
from skbqa.stages.parse.way_nodes import with_head_nouns
from tests.helpers import engine_over
from tests.unit.test_encoder_parser import edges, parse
from tests.unit.test_parser_compounds_and_text_fields import EDGES, NODES
from tests.unit.test_parser_compounds_and_text_fields import SCHEMA as GLOSSARY

# A field is also called a category, as a dictionary's files are: "a broader *category* of X" then reads as a
# field as well as a broader sense.
SCHEMA = {
    **GLOSSARY,
    "node_types": [
        {
            **t,
            "description": t["description"].replace(
                "A field grouping", "A field (also called a category) grouping"
            ),
        }
        for t in GLOSSARY["node_types"]
    ],
}

MORE = [
    (30, "noun_item", "sense", "the meaning of a word or expression"),
    (31, "noun_item", "formed", "a shape given to something"),
    (32, "noun_item", "used", "a thing that has been owned before"),
]
MORE_NODES = [
    {"id": i, "type": t, "name": n, "text": g, "attrs": {"word_count": len(n.split())}} for i, t, n, g in MORE
]
MORE_EDGES = [{"src": n, "type": "filed_in", "dst": 6} for n, *_ in MORE]


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory, onnx_encoder) -> EmbeddedEngine:
    return engine_over(
        tmp_path_factory.mktemp("glossary-more"), onnx_encoder, SCHEMA, NODES + MORE_NODES, EDGES + MORE_EDGES
    )


def test_a_chain_is_chosen_by_the_type_words_it_explains() -> None:
    """ "subtypes of *a term* that is a broader category of X": read through a field, the chain adds a node of its
    own for "a broader category of"; that node is no word of the question, so the better-scored reading through a
    noun sense stays."""
    sense = Hop(EdgeType("kind_of", "noun_item", "noun_item", ""), True)
    filed = Hop(EdgeType("filed_in", "noun_item", "field", ""), True)
    term = (TypeMention("noun_item", 4, 5),)
    through_a_sense = RelationOption((sense, sense), ("noun_item",), 0.5)
    through_a_field = RelationOption((sense, filed, filed), ("noun_item", "field"), 0.3)
    assert not _longer_or_better(
        through_a_field, (TypeMention("field", 4, 5),), (0.5, "noun_item", through_a_sense, term)
    )
    # two type words explained beat one, whatever the scores
    two = (TypeMention("noun_item", 4, 5), TypeMention("field", 7, 8))
    assert _longer_or_better(through_a_field, two, (0.5, "noun_item", through_a_sense, term))


def test_the_schemas_word_after_a_type_word_is_the_unnamed_node(engine: EmbeddedEngine) -> None:
    """ "a noun *sense* that …": the type word and the noun it modifies are one mention, though a node is named
    "sense"; "a noun *sense* of X" is not qualified by what follows and stays as it is."""
    text = QuestionText.of("kinds of a noun sense that is a broader category of lookout")
    assert with_head_nouns(text, [TypeMention("noun_item", 3, 4)]) == [TypeMention("noun_item", 3, 5)]
    text = QuestionText.of("kinds of a noun sense of lookout")
    assert with_head_nouns(text, [TypeMention("noun_item", 3, 4)]) == [TypeMention("noun_item", 3, 4)]
    parsed = parse(
        engine, "list the other noun senses that are kinds of a noun sense that is a broader category of lookout"
    )
    assert not any(s.names == ("sense",) for s in parsed.constants)


def test_a_verb_of_the_schemas_relations_is_no_name(engine: EmbeddedEngine) -> None:
    question = "which nouns are formed from stroll?"
    parsed = parse(engine, question)
    assert [s.names for s in parsed.constants] == [("stroll",)]
    assert {edge for _, edge, _ in edges(parsed)} == {"derivationally_related"}  # recorded both ways
    assert engine.ask(question, strategy="af").items[0].node_id == 16


def test_relates_reads_the_verbs_place_and_the_schemas_words() -> None:
    schema = Schema.from_dict(SCHEMA)
    own = stated_stems(schema.edge_types)
    assert "snore" not in own  # an example in parentheses is a node, not the relation's words

    def at(question: str, word: str) -> bool:
        text = QuestionText.of(question)
        return relates(text, [t.lower for t in text.tokens].index(word), own)

    assert at("nouns formed from stroll", "formed")  # a verb of the schema, before a preposition
    assert at("which senses are filed under verb.motion", "filed")  # after a copula
    assert not at("nouns and formed words", "formed")  # neither: a modifier
    assert not at("which verbs are snore", "snore")  # only in an example
    assert not at("nouns that are Formed from X", "formed")  # capitalised: a name


def test_a_word_of_one_relation_before_another_is_no_name() -> None:
    """ "*member* meronyms of X": both words are the schema's words for its relations (a dictionary also has a node
    named "member"); and a word written as the schema writes a relation is no misspelt name ("meronyms")."""
    schema = Schema.from_dict(
        {
            "name": "parts",
            "node_types": [{"name": "sense", "description": "a sense"}],
            "edge_types": [
                {"name": "part_of", "source": "sense", "target": "sense", "description": "Part meronymy: a part"},
                {"name": "member_of", "source": "sense", "target": "sense", "description": "Member meronymy"},
            ],
        }
    )
    own = stated_stems(schema.edge_types)
    text = QuestionText.of("member meronyms of a thing that is a member of Priacanthidae")
    assert relates(text, 0, own)
    assert not relates(
        text, 9, own
    )  # "a member of X": after an article, before "of", no verb: left to the spotter
    assert states_a_relation("meronyms", own) and not states_a_relation("Priacanthidae", own)


def test_a_type_word_on_the_way_gives_the_answers_type_and_stays_free() -> None:
    text = QuestionText.of("which words are hypernyms of a noun that belongs to the topic anthropology")
    assert on_the_way(text, TypeMention("noun_item", 6, 7))
    # "looking for any noun senses that …" asks for them: "for" there is part of the asking
    assert not on_the_way(
        QuestionText.of("looking for any noun senses that are kinds of herb"), TypeMention("n", 3, 4)
    )


def test_a_modifier_of_the_same_root_as_one_types_noun_names_that_type(onnx_encoder, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Every type is "also called a word"; only the adjective sense is "also called a description": "*describing*
    words" asks for adjective senses. Words that only share their first letters by chance do not count."""
    schema = {
        "name": "senses",
        "node_types": [
            {"name": "noun_item", "description": "A noun sense (also called a word or term)."},
            {"name": "adjective_item", "description": "An adjective sense (also called a description or word)."},
        ],
        "edge_types": [
            {"name": "related_to", "source": "adjective_item", "target": "noun_item", "description": "related"}
        ],
    }
    nodes = [
        {"id": 1, "type": "noun_item", "name": "calm", "text": "a state of peace", "attrs": {}},
        {"id": 2, "type": "adjective_item", "name": "calm", "text": "not agitated", "attrs": {}},
        {"id": 3, "type": "adjective_item", "name": "peaceful", "text": "not disturbed", "attrs": {}},
    ]
    engine = engine_over(tmp_path, onnx_encoder, schema, nodes, [{"src": 3, "type": "related_to", "dst": 1}])
    parsed = parse(engine, "which describing words are related to calm?")
    assert parsed.target_type == "adjective_item"
    assert same_root("description", "describing") and not same_root("form", "formal")


def test_the_respect_of_a_comparison_is_no_name_and_its_adjective_the_relation() -> None:
    """ "similar in *meaning* to X": "meaning" says in what respect (a dictionary has a node "meaning"), and
    "similar … to X" is the relation's own words."""
    schema = Schema.from_dict(
        {
            "name": "senses",
            "node_types": [{"name": "sense", "description": "a sense"}],
            "edge_types": [
                {"name": "similar_to", "source": "sense", "target": "sense", "description": "similar in meaning"}
            ],
        }
    )
    text = QuestionText.of("adjectives similar in meaning to proud")
    assert compared(text, 3) and not compared(QuestionText.of("words in meaning of life"), 2)
    assert relates(text, 1, stated_stems(schema.edge_types))
