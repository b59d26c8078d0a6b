"""A glossary's SKB (a schema of its own, nothing here is in any question set): a head noun every description uses
is told apart by the noun before it ("*noun* senses" where each type is "A noun/verb sense …" and a domain groups
"the senses"); a phrase naming the answer's own text ("in their *definition*", "whose *gloss*") is no node, and
what the text is to contain is a keyword even when some node bears it as a name; the vector strand puts the nodes
the question names after the others; the words of asking ("I'm *looking for*") and of a relation ("specific
*ways* to") are no constants, though nodes bear them as names."""

from __future__ import annotations

import pytest

from skbqa.engine.embedded import EmbeddedEngine
from skbqa.query.context import Candidate
from skbqa.query.structured import StructuredQuery, Symbol
from skbqa.skb.schema import Schema
from skbqa.stages.parse.chains import ChainReader
from skbqa.stages.parse.question_text import QuestionText
from skbqa.stages.parse.text_fields import claim_text_fields, text_nouns
from skbqa.stages.parse.written_numbers import count_before, number_at
from skbqa.stages.ranking.step import RankStep
from tests.helpers import engine_over
from tests.unit.test_encoder_parser import edges, parse

SCHEMA = {
    "name": "glossary",
    "description": "senses of English words, their kinds and the fields they are filed in",
    "node_types": [
        {"name": "noun_item", "description": "A noun sense (also called a word or term): one meaning of a noun. "
                                              "Text is the gloss."},
        {"name": "verb_item", "description": "A verb sense (also called a word or action): one meaning of a verb. "
                                              "Text is the gloss."},
        {"name": "field", "description": "A field grouping the senses of one part of speech by subject, such as "
                                         "noun.artifact or verb.motion."},
    ],
    "edge_types": [
        {"name": "kind_of", "source": "noun_item", "target": "noun_item",
         "description": "the sense is a kind of the target sense"},
        {"name": "kind_of", "source": "verb_item", "target": "verb_item",
         "description": "the sense is a kind of the target sense; for verbs a particular way of doing it"},
        {"name": "derivationally_related", "source": "noun_item", "target": "verb_item",
         "description": "the sense is a form of the same word root as the target sense, of another part of speech"},
        {"name": "derivationally_related", "source": "verb_item", "target": "noun_item",
         "description": "the sense is a form of the same word root as the target sense, of another part of speech"},
        {"name": "entails", "source": "verb_item", "target": "verb_item",
         "description": "doing the verb entails doing the target verb (snore -> sleep)"},
        {"name": "filed_in", "source": "noun_item", "target": "field",
         "description": "the sense is filed in the target field"},
        {"name": "filed_in", "source": "verb_item", "target": "field",
         "description": "the sense is filed in the target field"},
    ],
}  # fmt: skip
SENSES = [
    (1, "noun_item", "lookout", "a structure commanding a wide view of its surroundings"),
    (2, "noun_item", "observation dome", "lookout consisting of a dome-shaped observatory"),
    (3, "noun_item", "crow's nest", "lookout platform high on a mast"),
    (4, "noun_item", "observatory", "a building designed and equipped to observe astronomical phenomena"),
    (5, "noun_item", "definition", "a concise explanation of the meaning of a word"),
    (6, "field", "noun.artifact", "nouns denoting man-made objects"),
    (7, "field", "verb.motion", "verbs of walking, flying, swimming"),
    (8, "verb_item", "stroll", "walk leisurely and with no apparent aim"),
    (9, "verb_item", "walk", "use one's feet to advance"),
    (10, "noun_item", "watchtower", "an observation tower for a lookout to watch over prisoners"),
    (11, "verb_item", "looking for", "try to locate or discover"),
    (12, "noun_item", "specific", "a fact about some part"),
    (13, "noun_item", "ways", "a structure sloping down to the water"),
    (14, "verb_item", "tread", "put down or press the foot, place the foot"),
    (15, "noun_item", "walker", "a person who travels by foot"),
    (16, "noun_item", "stroller", "someone who walks at a leisurely pace"),
    (17, "noun_item", "general", "a general officer of high rank"),
    (18, "verb_item", "share", "have in common"),
]
NODES = [
    {"id": i, "type": t, "name": n, "text": g, "attrs": {"word_count": len(n.split())} if t != "field" else {}}
    for i, t, n, g in SENSES
]
EDGES = [
    {"src": 2, "type": "kind_of", "dst": 1},
    {"src": 3, "type": "kind_of", "dst": 1},
    {"src": 10, "type": "kind_of", "dst": 1},
    *({"src": n, "type": "filed_in", "dst": 6} for n in (1, 2, 3, 4, 5, 10, 12, 13, 15, 16, 17)),
    {"src": 8, "type": "kind_of", "dst": 9},
    {"src": 9, "type": "derivationally_related", "dst": 15},
    {"src": 15, "type": "derivationally_related", "dst": 9},
    {"src": 8, "type": "derivationally_related", "dst": 16},
    {"src": 16, "type": "derivationally_related", "dst": 8},
    {"src": 9, "type": "entails", "dst": 14},
    {"src": 14, "type": "entails", "dst": 9},
    *({"src": n, "type": "filed_in", "dst": 7} for n in (8, 9, 11, 14, 18)),
]


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory, onnx_encoder) -> EmbeddedEngine:
    return engine_over(tmp_path_factory.mktemp("glossary"), onnx_encoder, SCHEMA, NODES, EDGES)


@pytest.mark.parametrize(
    ("question", "target"),
    [
        ("noun senses that are a kind of 'lookout' and that are in the field noun.artifact", "noun_item"),
        ("what are the verb senses that are filed under the verb.motion field and defined using the word walk?",
         "verb_item"),
    ],
)  # fmt: skip
def test_the_noun_before_a_shared_head_noun_tells_the_types_apart(
    engine: EmbeddedEngine, question: str, target: str
) -> None:
    """Every description uses "sense" and a field is named further on: "noun" is the first word of one type's
    name whose suffix every type shares, and "senses" a word of its description, so "noun senses" names a noun
    item (not a guess, not a field) and leaves no word for ranking."""
    parsed = parse(engine, question)
    assert parsed.target_type == target
    assert not {"noun", "verb", "senses"} & {w for t in parsed.text_constraints for w in t.split()}


@pytest.mark.parametrize(
    "question",
    [
        "Which noun senses are kinds of lookout and have 'observatory' in their definition?",
        "noun senses that are kinds of lookout with observatory in their gloss",
        "kinds of lookout whose definition mentions observatory",
    ],
)
def test_the_answers_own_text_is_no_node_and_its_keyword_no_constant(
    engine: EmbeddedEngine, question: str
) -> None:
    parsed = parse(engine, question)
    assert [s.names for s in parsed.constants] == [("lookout",)]  # not "definition", not "observatory"
    assert edges(parsed) == {("y", "kind_of", "c1")}
    assert "observatory" in " ".join(parsed.text_constraints)
    assert engine.ask(question, strategy="af").items[0].node_id == 2


def test_text_nouns_come_from_english_and_from_the_schemas_own_words() -> None:
    schema = Schema.from_dict(
        {
            "name": "s",
            "node_types": [
                {"name": "paper", "description": "A paper. Text is the CORD abstract and its synopsis."}
            ],
            "edge_types": [],
        }
    )
    nouns = text_nouns(schema)
    assert {"abstract", "abstracts", "definition", "summary"} <= nouns
    text = QuestionText.of("papers citing X with sepsis in their CORD abstract")
    assert claim_text_fields(text, nouns) == [(5, 9)]  # "in their CORD abstract"
    assert text.quotes == ["sepsis"] and text.claimed[4] == "text"
    # no owner, no preposition with an article: the noun may be a node's name ("a definition of X")
    assert claim_text_fields(QuestionText.of("papers about a definition of sepsis"), nouns) == []


def test_the_vector_strand_puts_the_named_nodes_last(engine: EmbeddedEngine) -> None:
    step = RankStep(engine.stores, {})
    parsed = StructuredQuery(
        symbols={"y": Symbol("y", "noun_item"), "c1": Symbol("c1", "noun_item", ("Lookout",))},
        triplets=[],
        target="y",
    )
    fill = [Candidate(p, 1.0 - p / 10, "vss") for p in (0, 1, 2, 9)]  # positions: lookout first
    ranked = step._named_last(fill, parsed)
    assert [c.position for c in ranked] == [1, 2, 9, 0]
    assert step._named_last(fill, StructuredQuery(symbols={"y": Symbol("y")}, triplets=[], target="y")) == fill


@pytest.mark.parametrize(
    ("question", "answers"),
    [
        ("I'm looking for noun senses that are kinds of lookout", {2, 3, 10}),  # "looking for": how one asks
        ("I am looking for verb senses that are kinds of walk", {8}),
        ("which verb senses are specific ways to walk?", {8}),  # the words some nodes bear say the relation
    ],
)
def test_words_of_asking_and_of_the_relation_are_no_constants(
    engine: EmbeddedEngine, question: str, answers: set[int]
) -> None:
    parsed = parse(engine, question)
    assert len(parsed.constants) == 1
    assert edges(parsed) == {("y", "kind_of", "c1")}
    assert {item.node_id for item in engine.ask(question, strategy="af").items[: len(answers)]} == answers


def test_the_taxonomy_is_the_edge_whose_words_and_meaning_read_as_one(onnx_encoder) -> None:
    """Of two edges among one type's nodes, "a kind of … a more specific meaning" is its taxonomy, not "an instance
    of … a specific named individual of that class", whichever the encoder alone puts nearer."""
    schema = Schema.from_dict(
        {
            "name": "s",
            "node_types": [{"name": "concept", "description": "a concept"}],
            "edge_types": [
                {"name": "kind_of", "source": "concept", "target": "concept",
                 "description": "Hypernymy: the concept is a kind of the target concept, a more specific meaning of "
                                "it (dog -> canine; for verbs a particular way of doing it, stroll -> walk)."},
                {"name": "instance_of", "source": "concept", "target": "concept",
                 "description": "Instance hypernymy: the concept is an instance of the target concept, a specific "
                                "named individual of that class (Paris -> national capital, Einstein -> physicist)."},
            ],
        }
    )  # fmt: skip
    assert ChainReader(schema, onnx_encoder).taxonomy("concept") == "kind_of"


def test_a_count_of_one_is_a_number_word_and_a_singular(engine: EmbeddedEngine) -> None:
    """ "more than *one word*": the count attribute `word_count` named by what it counts, in the singular after a
    number written as a word."""
    question = "noun senses that are kinds of lookout and have more than one word"
    parsed = parse(engine, question)
    assert [(c.attribute, c.op, c.value) for c in parsed.constraints] == [("word_count", ">", 1)]
    assert [s.names for s in parsed.constants] == [("lookout",)]
    assert {item.node_id for item in engine.ask(question, strategy="af").items[:2]} == {2, 3}


@pytest.mark.parametrize(("name", "answer"), [("walker", 9), ("stroller", 8), ("walk", 15)])
def test_with_no_word_for_the_answer_the_graph_says_where_the_named_edge_leads(
    engine: EmbeddedEngine, name: str, answer: int
) -> None:
    """ "things that share a word root with X": the edge joins nouns and verbs both ways, so no word says the
    answer's type; X's own neighbours over it do (a noun's are verbs, a verb's nouns)."""
    question = f"things that share a word root with {name}"
    parsed = parse(engine, question)
    assert parsed.target_type == engine.stores.nodes.type_name(int(engine.stores.nodes.positions([answer])[0]))
    assert engine.ask(question, strategy="af").items[0].node_id == answer


@pytest.mark.parametrize(
    "question",
    [
        "Identify all the senses that are more general senses for 'observation dome'.",
        "what is observation dome a kind of?",
    ],
)
def test_a_compared_adjective_is_no_name_and_more_general_is_broader(
    engine: EmbeddedEngine, question: str
) -> None:
    """ "more *general* senses for X": a node is called "general", but a compared adjective names none, and "more
    general" asks for the broader end of the taxonomy."""
    parsed = parse(engine, question)
    assert [s.names for s in parsed.constants] == [("observation dome",)]
    assert edges(parsed) == {("c1", "kind_of", "y")}
    assert engine.ask(question, strategy="af").items[0].node_id == 1


def test_a_verb_right_after_the_answers_noun_is_its_relation(engine: EmbeddedEngine) -> None:
    """ "which noun items *share* a word root with walk": a verb is called "share", and no edge says "share", but
    right after the answer's noun it is the answer's verb."""
    question = "which noun items share a word root with walk"
    parsed = parse(engine, question)
    assert [s.names for s in parsed.constants] == [("walk",)]
    assert edges(parsed) == {("y", "derivationally_related", "c1")}
    assert engine.ask(question, strategy="af").items[0].node_id == 15


@pytest.mark.parametrize(
    ("phrase", "constraint"),
    [("have a single word", ("=", 1)), ("with two words", ("=", 2)), ("have a nonzero word count", (">", 0))],
)
def test_a_count_said_without_a_comparison(engine: EmbeddedEngine, phrase: str, constraint: tuple) -> None:  # type: ignore[type-arg]
    parsed = parse(engine, f"noun senses that are kinds of lookout and {phrase}")
    assert [(c.attribute, c.op, c.value) for c in parsed.constraints] == [("word_count", *constraint)]
    assert [s.names for s in parsed.constants] == [("lookout",)]


def test_written_numbers() -> None:
    text = QuestionText.of("Out of these, a single word, two binaries, a non-zero corpus frequency and 6.5 or one")
    words = [t.lower for t in text.tokens]
    assert number_at(text, words.index("6")) == (6.5, words.index("5") + 1)
    assert number_at(text, len(words) - 1) == (1, len(words))
    assert count_before(text, words.index("word")) == ("=", 1, words.index("single") - 1)
    assert count_before(text, words.index("binaries")) == ("=", 2, words.index("two"))
    assert count_before(text, words.index("frequency")) == (">", 0, words.index("non"))
    assert count_before(text, words.index("these")) is None


def test_a_scale_word_multiplies_the_number_before_it() -> None:
    text = QuestionText.of("over 2.5 million people, under one billion, 40 thousand or 7 bn")
    words = [t.lower for t in text.tokens]
    assert number_at(text, words.index("2")) == (2_500_000, words.index("million") + 1)
    assert number_at(text, words.index("one")) == (1_000_000_000, words.index("billion") + 1)
    assert number_at(text, words.index("40")) == (40_000, words.index("thousand") + 1)
    assert number_at(text, words.index("7")) == (7_000_000_000, len(words))


def test_a_name_before_a_second_clause_is_no_category_of_the_next(engine: EmbeddedEngine) -> None:
    """ "kinds of lookout *and are* kinds of observation dome": the observation dome is below the lookout, but
    "and" begins a second clause of the answer's, so the lookout is a constant, not a category label."""
    parsed = parse(engine, "which noun items are kinds of lookout and are kinds of observation dome?")
    assert [s.names for s in parsed.constants] == [("lookout",), ("observation dome",)]
    assert edges(parsed) == {("y", "kind_of", "c1"), ("y", "kind_of", "c2")}
