"""Where users put the answer's noun and how they say a node is shared, on the music schema of
`test_parser_head_nouns` (nothing here is in the development data): a head noun before a later type word, a
wh-word at the end ("…: which singers?"), a relative "whose" that asks nothing, a short last part that is the
request ("…: albums please"), a node two answers share ("tracks that share an album with X", X itself left out),
and ontology wording for a narrower node ("a child term of")."""

from __future__ import annotations

import pytest

from skbqa.engine.embedded import EmbeddedEngine
from skbqa.query.structured import AttributeConstraint
from skbqa.stages.parse.attribute_mentions import count_labels
from skbqa.stages.parse.chain_words import names_narrower, narrower_tail
from skbqa.stages.parse.question_text import QuestionText
from skbqa.stages.parse.spotted import SpottedConstraint
from skbqa.stages.parse.type_mentions import noun_forms
from skbqa.stages.parse.units import in_stated_unit, unit_label
from tests.helpers import engine_over
from tests.unit.test_encoder_parser import parse
from tests.unit.test_parser_head_nouns import EDGES, NODES, SCHEMA


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory, onnx_encoder) -> EmbeddedEngine:
    return engine_over(tmp_path_factory.mktemp("music-shapes"), onnx_encoder, SCHEMA, NODES, EDGES)


def triplets(question: str, engine: EmbeddedEngine) -> set[tuple[str, str | None, str]]:
    return {(t.head, t.edge, t.tail) for t in parse(engine, question).triplets}


def test_a_head_noun_before_a_later_type_word_names_the_answer(engine: EmbeddedEngine) -> None:
    # "tracks" is a type word and comes after a question word, but "singers" heads the question
    question = "which singers perform tracks on Blue Hours?"
    assert parse(engine, question).target_type == "artist"
    assert triplets(question, engine) == {("m1", "on_album", "c1"), ("m1", "performed_by", "y")}
    assert {item.node_id for item in engine.ask(question, strategy="af").items[:2]} == {6, 7}


def test_a_wh_word_at_the_end_asks_the_question(engine: EmbeddedEngine) -> None:
    parsed = parse(engine, "a track on Blue Hours: which singers?")
    assert parsed.target_type == "artist"


def test_whose_after_a_noun_is_a_relative_pronoun(engine: EmbeddedEngine) -> None:
    question = "Albums whose tracks are performed by Mara Quist"
    assert parse(engine, question).target_type == "album"
    assert {item.node_id for item in engine.ask(question, strategy="af").items[:2]} == {1, 2}


def test_a_short_last_part_is_the_request(engine: EmbeddedEngine) -> None:
    parsed = parse(engine, "songs by Mara Quist: albums please")
    assert parsed.target_type == "album"
    # without the last part the question's first noun would be the answer
    assert parse(engine, "songs by Mara Quist").target_type == "track"


def test_a_shared_node_relates_both_sides_alike_and_leaves_the_named_one_out(engine: EmbeddedEngine) -> None:
    question = "which tracks share an album with Night Train?"
    parsed = parse(engine, question)
    assert triplets(question, engine) == {("c1", "on_album", "m1"), ("y", "on_album", "m1")}
    assert [(c.attribute, c.op, c.value) for c in parsed.constraints] == [("name", "<>", "Night Train")]
    assert "share" not in " ".join(parsed.text_constraints)
    assert engine.ask(question, strategy="af").items[0].node_id == 4


@pytest.mark.parametrize(
    ("words", "tail"),
    [
        (["see", "an", "immediate", "child", "term", "of"], 5),
        (["show", "a", "subtype", "of"], 3),
        (["any", "direct", "child", "of"], 4),
        (["in", "the", "long", "term", "of"], 0),  # a term noun alone names no narrower node
        (["a", "child", "of", "the"], 0),
    ],
)
def test_a_child_term_of_names_a_narrower_node(words: list[str], tail: int) -> None:
    assert narrower_tail(words) == tail


def test_a_term_noun_needs_a_narrower_noun_before_it() -> None:
    assert names_narrower(["child", "terms"], 1)
    assert not names_narrower(["broad", "terms"], 1)


def test_a_count_is_named_by_what_it_counts_before_a_type_word() -> None:
    forms = count_labels(("binary", "count"), ("packages", "maintainers"))
    assert ("number", "of", "binary", "packages") in forms
    assert ("binary", "maintainers") in forms
    assert ("binaries",) in forms


@pytest.mark.parametrize(
    ("label", "description", "unit"),
    [
        (("installed", "size"), "attributes give its version, installed size in KiB, priority", ("kib",)),
        (("length",), "a track; its length in seconds", ("seconds",)),
        (("installed", "size"), "attributes give its installed size and version", None),
    ],
)
def test_a_unit_the_description_gives_names_the_attribute(
    label: tuple[str, ...], description: str, unit: tuple[str, ...] | None
) -> None:
    assert unit_label(label, description) == unit


@pytest.mark.parametrize(
    ("question", "start", "end", "value", "stated", "converted", "claimed_to"),
    [
        ("installed size under 2 MB please", 0, 4, 2, "kib", 2048, 5),  # the unit right after the span
        ("more than 200 megabytes", 0, 4, 200, "kib", 204800, 4),  # the unit inside it (its label)
        ("longer than 3 km", 0, 3, 3, "m", 3000, 4),
        ("under 90 minutes", 0, 2, 90, "s", 5400, 3),
        ("installed size under 2 kib", 0, 4, 2, "kib", 2, 4),  # the stated unit: as said
        ("size under 2 MB", 0, 3, 2, None, 2, 3),  # no stated unit: nothing to convert to
        ("length under 2 kg", 0, 3, 2, "m", 2, 3),  # another kind of unit
    ],
)
def test_a_number_in_another_unit_of_the_stated_kind_is_converted(
    question: str, start: int, end: int, value: int, stated: str | None, converted: int, claimed_to: int
) -> None:
    text = QuestionText.of(question)
    hit = SpottedConstraint(AttributeConstraint("y", "size", "<", value), start, end)
    out = in_stated_unit(hit, text, stated)
    assert (out.constraint.value, out.end) == (converted, claimed_to)


def test_two_words_for_one_type_are_one_noun(engine: EmbeddedEngine) -> None:
    # "singer" and "band" are both the artist's description words: the "or" does not split the chain's clause
    question = "Which tracks are performed by a singer or band who also performs Night Train?"
    assert triplets(question, engine) == {("c1", "performed_by", "m1"), ("y", "performed_by", "m1")}
    assert engine.ask(question, strategy="af").items[0].node_id == 5


def test_a_noun_that_opens_the_question_outranks_a_later_request_word(engine: EmbeddedEngine) -> None:
    # "any" asks for what follows only when nothing but request words comes before it
    assert parse(engine, "mixtapes that any track performed by Mara Quist appears on").target_type == "album"


def test_people_is_the_plural_of_person() -> None:
    assert "people" in noun_forms("person")
