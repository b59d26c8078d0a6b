"""A parse the graph has no answer to is read again without its least name-like constant: an English word some node
bears ("defined *using* …") goes before a name written as names are ("Canidae") or a multi-word one ("mammal
genus"); the dropped constant's triplets go with it, and so does what only they linked to the answer. Over a small
knowledge base of its own, through the af steps with a scripted parse."""

from __future__ import annotations

import numpy as np
import pytest

from skbqa.engine.embedded import EmbeddedEngine
from skbqa.query.context import QueryContext
from skbqa.query.structured import StructuredQuery, Symbol, Triplet
from skbqa.stages.grounding.relax import name_likeness, relaxations, without
from skbqa.strategies.af import AfStrategy
from tests.helpers import engine_over
from tests.unit.test_af_strategy import ScriptedParser

SCHEMA = {
    "name": "taxa",
    "description": "animal taxa",
    "node_types": [
        {"name": "taxon", "description": "A taxon: a group of organisms."},
        {"name": "habitat", "description": "A place where organisms live."},
    ],
    "edge_types": [
        {
            "name": "kind_of",
            "source": "taxon",
            "target": "taxon",
            "description": "the taxon is a kind of the target",
        },
        {
            "name": "member_of",
            "source": "taxon",
            "target": "taxon",
            "description": "the taxon belongs to the target",
        },
    ],
}
TAXA = ["Canidae", "Canis", "Vulpes", "mammal genus", "using", "Felis"]
NODES = [
    *({"id": i, "type": "taxon", "name": n, "text": f"the taxon {n}", "attrs": {}} for i, n in enumerate(TAXA)),
    {"id": 10, "type": "habitat", "name": "forest", "text": "a forest: woodland where wolves and foxes live"},
]
EDGES = [
    *({"src": i, "type": "kind_of", "dst": 3} for i in (1, 2, 5)),
    *({"src": i, "type": "member_of", "dst": 0} for i in (1, 2)),
]


def parse_with(using: bool) -> StructuredQuery:
    symbols = {
        "y": Symbol("y", "taxon"),
        "c1": Symbol("c1", "taxon", ("mammal genus",)),
        "c2": Symbol("c2", "taxon", ("Canidae",)),
    }
    triplets = [Triplet("y", "kind_of", "c1"), Triplet("y", "member_of", "c2")]
    if using:  # "… defined *using* …": a word some node bears, read as a constant with an edge it does not have
        symbols["c3"] = Symbol("c3", "taxon", ("using",))
        triplets.append(Triplet("c3", "kind_of", "y"))
    return StructuredQuery("y", symbols, triplets, confidence=0.85, type_named=True)


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory, onnx_encoder) -> EmbeddedEngine:
    return engine_over(tmp_path_factory.mktemp("taxa"), onnx_encoder, SCHEMA, NODES, EDGES)


def grounded_names(engine: EmbeddedEngine, parsed: StructuredQuery, **options: object) -> tuple[set[str], dict]:
    strategy = AfStrategy(engine.stores, parser=ScriptedParser(parsed))
    query = QueryContext("which taxa", engine.encoder, options=dict(options))
    found = strategy.retrieve(query, 5)
    names = engine.stores.nodes.names
    return {names[c.position] for c in found if c.source == "grounded"}, query.notes


def test_an_english_word_goes_before_names() -> None:
    parsed = parse_with(using=True)
    assert (
        name_likeness(parsed.symbols["c3"])
        < name_likeness(parsed.symbols["c1"])
        < name_likeness(parsed.symbols["c2"])
    )
    assert [dropped for dropped, _ in relaxations(parsed)] == ["c3", "c1", "c2"]
    assert name_likeness(Symbol("c", "taxon", ("using",), sense=("a way",))) > name_likeness(parsed.symbols["c2"])


def test_what_only_the_dropped_constant_linked_goes_with_it() -> None:
    symbols = {
        "y": Symbol("y"),
        "m": Symbol("m"),
        "c1": Symbol("c1", None, ("a",)),
        "c2": Symbol("c2", None, ("b",)),
    }
    parsed = StructuredQuery(
        "y", symbols, [Triplet("y", "r", "c1"), Triplet("c1", "r", "m"), Triplet("y", "r", "c2")], confidence=0.8
    )
    reading = without(parsed, "c1")  # m was linked to the answer through c1 only
    assert reading.triplets == [Triplet("y", "r", "c2")] and set(reading.symbols) == {"y", "c2"}
    assert reading.confidence is not None and reading.confidence < 0.8
    assert relaxations(without(parsed, "c2")) == []  # one constant left: nothing to relax


def test_the_graph_answers_the_parse_without_the_english_word(engine: EmbeddedEngine) -> None:
    answers, notes = grounded_names(engine, parse_with(using=True))
    assert answers == {"Canis", "Vulpes"}
    assert notes["relaxed"] == {"dropped": ["using"]}
    # as the parse without it grounds
    assert grounded_names(engine, parse_with(using=False))[0] == {"Canis", "Vulpes"}
    # and with the switch off, the graph answers nothing
    answers, notes = grounded_names(engine, parse_with(using=True), relax=False)
    assert answers == set() and "relaxed" not in notes


def test_the_stages_read_the_relaxed_parse_as_the_engine_does(engine: EmbeddedEngine) -> None:
    """The grounding stage sends the reading the graph answered on to ranking and reranking: the five stage cores
    chained give the embedded answer."""
    from skbqa.serving.stages.core import ROLES, AnswerEnvelope, StageRuntime
    from skbqa.serving.stages.registry import build_stage, run_stage
    from skbqa.v1 import api_pb2
    from tests.unit.test_stage_service import request

    strategies = {
        **engine.strategies,
        "af": AfStrategy(engine.stores, parser=ScriptedParser(parse_with(using=True))),
    }
    runtime = StageRuntime(engine.stores, engine.encoder, strategies)
    cores = {role: build_stage(role, runtime) for role in ROLES}
    current, answers = request("which taxa", k=5), []
    for role in ROLES:
        output = run_stage(cores[role], current)
        answers += output.answers
        if output.forward is None:
            break
        current = output.forward
    final = [api_pb2.AskResponse.FromString(a.answer) for a in answers if a.kind == AnswerEnvelope.FINAL]
    embedded = strategies["af"].retrieve(QueryContext("which taxa", engine.encoder), 5)
    assert [i.node_id for i in final[0].items] == [int(engine.stores.nodes.ids[c.position]) for c in embedded[:5]]
    grounded = {i.name for i in final[0].items if i.source == "grounded"}
    assert grounded == {"Canis", "Vulpes"}  # found by the graph, through the relaxed reading


def test_among_equally_name_like_constants_the_reading_that_fits_the_graph_best_is_kept(
    engine: EmbeddedEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two dictionary words, neither more name-like: the reading its constant's best-ranked nodes ground (found at
    scope 1) beats one that needed the scope widened to 100, whichever was said first."""
    from skbqa.query.grounded import ScopeResult
    from skbqa.stages.config import AfConfig
    from skbqa.stages.grounding.step import GroundStep

    symbols = {
        "y": Symbol("y", "taxon"),
        "c1": Symbol("c1", "taxon", ("using",)),
        "c2": Symbol("c2", "taxon", ("genus",)),
    }
    parsed = StructuredQuery("y", symbols, [Triplet("c1", "kind_of", "y"), Triplet("y", "kind_of", "c2")])
    found = {  # the kept constant → the scope the graph answered at (nothing for the parse as given)
        frozenset({"y", "c1", "c2"}): [(1.0, 0), (100.0, 0)],
        frozenset({"y", "c2"}): [(1.0, 0), (100.0, 2)],  # without "using": only at the widest scope
        frozenset({"y", "c1"}): [(1.0, 3)],  # without "genus": at once
    }

    def expand(self: GroundStep, reading: StructuredQuery, ranked: object, config: AfConfig) -> ScopeResult:
        iterations = found[frozenset(reading.symbols)]
        size = iterations[-1][1]
        return ScopeResult(True, np.arange(size, dtype=np.int64), iterations[-1][0], 1, iterations, None)

    monkeypatch.setattr(GroundStep, "_expand", expand)
    query = QueryContext("which taxa", engine.encoder)
    scope = GroundStep(engine.stores, {"taxon": 0}).run(query, parsed, {}, AfConfig())
    assert scope.relaxed is not None and set(scope.relaxed.symbols) == {"y", "c1"}
    assert query.notes["relaxed"] == {"dropped": ["genus"]}


def test_a_type_read_off_a_refuted_parse_does_not_restrict_the_vector_strand(engine: EmbeddedEngine) -> None:
    """The graph has no answer to the parse (no taxon is a member of a forest): a target type the question did
    not name is no better than a guess, so the vector strand searches every type; a named one still holds."""
    types = engine.stores.nodes

    def fill_types(type_named: bool) -> tuple[set[str], dict]:
        parsed = StructuredQuery(
            "y",
            {"y": Symbol("y", "taxon"), "c1": Symbol("c1", "habitat", ("forest",))},
            [Triplet("y", "member_of", "c1")],
            confidence=0.85,
            type_named=type_named,
        )
        strategy = AfStrategy(engine.stores, parser=ScriptedParser(parsed))
        query = QueryContext("forest where wolves live", engine.encoder)
        found = strategy.retrieve(query, 7)
        return {types.type_name(c.position) for c in found}, query.notes

    guessed, notes = fill_types(type_named=False)
    assert "habitat" in guessed and "every type" in notes["refuted"]
    named, notes = fill_types(type_named=True)
    assert named == {"taxon"} and "every type" not in notes["refuted"]
