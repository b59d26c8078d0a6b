"""Names as users type them in a schema of qualified names: the last part of "pkg.streams.StreamReader" names it
(an alias, when that part reads as an identifier and ends few names), an owner picks among a name's nodes
("pkg's StreamReader": the one in pkg, not codecs'), a verb of speaking before "about" puts a name in the
answer's text ("say something about whitespace"), and a verb whose subject an edge's description makes the target
turns the edge ("what is dough made of": the target of `substance_of`). A schema of its own; nothing here is in
any question set."""

from __future__ import annotations

import pytest

from skbqa.engine.embedded import EmbeddedEngine
from skbqa.skb.schema import EdgeType
from skbqa.stages.parse.cues import claim_text_cues
from skbqa.stages.parse.question_text import QuestionText
from skbqa.stages.parse.relations import _verbs_of_the_target
from skbqa.stores.lexicon import NameLexicon
from tests.helpers import engine_over
from tests.unit.test_encoder_parser import constants, edges, parse

SCHEMA = {
    "name": "library",
    "description": "a code library: modules, their classes and the classes' methods",
    "node_types": [
        {"name": "module", "description": "A module of the library.", "name_attr": "name"},
        {"name": "class", "description": "A class defined in a module.", "name_attr": "name"},
        {"name": "method", "description": "A function defined in a class body.", "name_attr": "name"},
    ],
    "edge_types": [
        {
            "name": "defined_in",
            "source": "class",
            "target": "module",
            "description": "The class is defined in it.",
        },
        {"name": "method_of", "source": "method", "target": "class", "description": "The method belongs to it."},
    ],
}
MODULES = [(1, "pkg"), (2, "pkg.streams"), (3, "codecs"), (4, "mail.errors"), (5, "whitespace")]
CLASSES = [(10, "pkg.streams.StreamReader", "pkg.streams"), (11, "codecs.StreamReader", "codecs")]
METHODS = [
    (20, "pkg.streams.StreamReader.readline", "Read one line from the stream.", 10),
    (21, "pkg.streams.StreamReader.feed", "Feed bytes into the stream buffer.", 10),
    (22, "codecs.StreamReader.readline", "Decode one line from the stream.", 11),
    (23, "codecs.StreamReader.reset", "Reset the decoder and drop whitespace from the buffer.", 11),
    (24, "codecs.StreamReader.strip_blank", "Strip whitespace around decoded text.", 11),
]
# six methods end in "do_work": a last part of that many names names no one thing
WORKERS = [(30 + k, f"worker{k}.do_work", "Do the work.", 11) for k in range(6)]
NODES = (
    [{"id": i, "type": "module", "name": n, "text": f"The {n} module."} for i, n in MODULES]
    + [
        {"id": i, "type": "class", "name": n, "attrs": {"module": m}, "text": "Reads a stream."}
        for i, n, m in CLASSES
    ]
    + [{"id": i, "type": "method", "name": n, "text": t} for i, n, t, _ in METHODS + WORKERS]
)
EDGES = [{"src": 10, "type": "defined_in", "dst": 2}, {"src": 11, "type": "defined_in", "dst": 3}] + [
    {"src": i, "type": "method_of", "dst": c} for i, _, _, c in METHODS + WORKERS
]


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory, onnx_encoder) -> EmbeddedEngine:
    return engine_over(tmp_path_factory.mktemp("qualified"), onnx_encoder, SCHEMA, NODES, EDGES)


def _ids(engine: EmbeddedEngine, lexicon: NameLexicon, text: str) -> set[int]:
    return {int(engine.stores.nodes.ids[p]) for p in lexicon.positions(text, original=text)}


def test_the_last_part_of_a_qualified_name_names_it_when_it_reads_as_an_identifier(engine: EmbeddedEngine) -> None:
    lexicon = NameLexicon.build_from(engine.stores.nodes)
    assert _ids(engine, lexicon, "StreamReader") == {10, 11}
    assert _ids(engine, lexicon, "strip_blank") == {24}
    assert _ids(engine, lexicon, "errors") == set()  # a word, not an identifier: "which errors …"
    assert _ids(engine, lexicon, "readline") == set()  # all lower case, no underscore: may be a word
    assert _ids(engine, lexicon, "do_work") == set()  # the last part of six names
    assert _ids(engine, lexicon, "whitespace") == {5}  # a node's own name is no other node's alias


def test_an_owner_that_is_part_of_the_name_picks_its_node(engine: EmbeddedEngine) -> None:
    question = "which methods of pkg's StreamReader are there?"
    parsed = parse(engine, question)
    assert len(parsed.constants) == 1  # the owner is no constant of its own
    assert edges(parsed) == {("y", "method_of", "c1")}
    assert {item.node_id for item in engine.ask(question, strategy="af").items[:2]} == {20, 21}


def test_an_owner_that_is_no_part_of_the_name_stays_a_constant(engine: EmbeddedEngine) -> None:
    parsed = parse(engine, "which methods of whitespace's StreamReader are there?")
    assert {names for _, names in constants(parsed).values()} >= {("StreamReader",)}
    assert len(parsed.constants) == 2


@pytest.mark.parametrize(
    "question",
    [
        "which StreamReader methods say something about whitespace?",
        "what do the methods tell us about whitespace",
        "methods that talk a lot about whitespace",
    ],
)
def test_a_verb_of_speaking_before_about_puts_a_name_in_the_text(question: str) -> None:
    text = QuestionText.of(question)
    cues = claim_text_cues(text, lambda _: False)
    assert [(cue.text, cue.weak) for cue in cues] == [("whitespace", False)]


def test_a_bare_about_stays_weak() -> None:
    cues = claim_text_cues(QuestionText.of("methods about whitespace"), lambda _: False)
    assert [(cue.text, cue.weak) for cue in cues] == [("whitespace", True)]


MATERIALS = {
    "name": "materials",
    "description": "things and what they are made of",
    "node_types": [{"name": "thing", "description": "A thing or material.", "name_attr": "name"}],
    "edge_types": [
        {
            "name": "substance_of",
            "source": "thing",
            "target": "thing",
            "description": "the thing is a material of which the target thing is made (flour -> dough)",
        }
    ],
}
STUFF = [
    (1, "flour", "a powder of ground grain"),
    (2, "dough", "a thick mixture for baking"),
    (3, "bread", "food"),
]
MADE = [{"src": 1, "type": "substance_of", "dst": 2}, {"src": 2, "type": "substance_of", "dst": 3}]


def test_the_verb_the_description_says_of_the_target_is_read_off_it() -> None:
    edge = EdgeType(**MATERIALS["edge_types"][0])  # type: ignore[arg-type]
    assert _verbs_of_the_target(edge) == frozenset({"made"})
    said_of_the_source = EdgeType("entails", "act", "act", "the target is implied by it; the act entails it")
    assert _verbs_of_the_target(said_of_the_source) == frozenset()  # a passive with its agent says the agent's act


@pytest.mark.parametrize(
    ("question", "expected"),
    [("what is dough made of?", 1), ("which things are made from dough?", 3), ("what is made with flour?", 2)],
)
def test_a_verb_of_the_target_turns_the_edge(
    tmp_path_factory: pytest.TempPathFactory, onnx_encoder, question: str, expected: int
) -> None:
    nodes = [{"id": i, "type": "thing", "name": n, "text": t} for i, n, t in STUFF]
    engine = engine_over(tmp_path_factory.mktemp("materials"), onnx_encoder, MATERIALS, nodes, MADE)
    assert engine.ask(question, strategy="af").items[0].node_id == expected
