"""Round trips of the pipeline's objects through the skbqa.v1 messages (what the stages send each other)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from skbqa.query.context import Candidate
from skbqa.query.grounded import GroundingResult, ScopeResult, TripletEvidence
from skbqa.query.structured import AttributeConstraint, StructuredQuery, Symbol, Triplet
from skbqa.serving import codec
from skbqa.v1 import stages_pb2


def _query() -> StructuredQuery:
    inner = StructuredQuery("x", {"x": Symbol("x", "gene")})
    return StructuredQuery(
        target="g",
        symbols={
            "g": Symbol("g", "gene"),
            "d": Symbol("d", "disease", ("asthma", "Asthma (severe)"), ("severe", "airway")),
            "v": Symbol("v"),
        },
        triplets=[Triplet("g", "associated_with", "d"), Triplet("g", None, "v", "undirected", 1, 3)],
        constraints=[
            AttributeConstraint("g", "chromosome", "=", "8"),
            AttributeConstraint("g", "start", ">=", 1000),
            AttributeConstraint("g", "score", "<", 0.5),
            AttributeConstraint("g", "flag", "=", True),
            AttributeConstraint("g", "symbol", "IN", ("A", "B"), case_insensitive=True),
        ],
        text_constraints=["within the nucleus"],
        alternatives=[inner],
        warnings=["dropped a clause"],
        predicted_type="gene",
    )


def test_structured_query_round_trip() -> None:
    query = _query()
    wire = stages_pb2.StructuredQuery.FromString(codec.query_to_proto(query).SerializeToString())
    assert codec.query_from_proto(wire) == query


def test_absent_optionals_stay_absent() -> None:
    query = StructuredQuery("t", {"t": Symbol("t")}, [Triplet("t", None, "t")])
    back = codec.query_from_proto(codec.query_to_proto(query))
    assert back.predicted_type is None and back.symbols["t"].type is None and back.triplets[0].edge is None


def test_scope_round_trip_keeps_evidence_and_levels() -> None:
    query = _query()
    evidence = [TripletEvidence(0, query.triplets[0], "d", np.array([3, 3, 7]), np.array([10, 11, 12]))]
    result = GroundingResult("g", np.array([3, 7]), {}, 2, True, evidence)
    scope = ScopeResult(True, np.array([3, 7]), 2.34, 2, [(1.0, 1), (1.5, 2)], result, "", np.array([1, 2]))
    back = codec.scope_from_proto(codec.scope_to_proto(scope), query)
    assert back.grounded and back.candidates.tolist() == [3, 7] and back.levels.tolist() == [1, 2]
    assert back.iterations == [(1.0, 1), (1.5, 2)] and back.per_constant == 2
    assert back.result is not None and back.result.evidence_for(3)[0].tolist() == [10, 11]
    assert back.result.evidence_for(7)[0].tolist() == [12]


def test_ungrounded_scope_has_no_result() -> None:
    scope = ScopeResult(False, np.zeros(0, np.int64), 0.0, 0, [], None, "the query has no triplet")
    back = codec.scope_from_proto(codec.scope_to_proto(scope), _query())
    assert not back.grounded and back.result is None and back.reason == "the query has no triplet"


def test_candidates_keep_int_ids_in_evidence() -> None:
    candidate = Candidate(5, 0.75, "grounded", {"cosine": 0.5}, {"through": [{"id": np.int64(123456789012)}]})
    back = codec.candidates_from_proto(codec.candidates_to_proto([candidate]))[0]
    assert back.evidence["through"][0]["id"] == 123456789012
    assert isinstance(back.evidence["through"][0]["id"], int)
    assert (back.position, back.score, back.source, back.scores) == (5, 0.75, "grounded", {"cosine": 0.5})


def test_embedding_round_trip_is_exact() -> None:
    vector = np.random.default_rng(0).standard_normal(384).astype(np.float32)
    assert np.array_equal(codec.embedding_from_bytes(codec.embedding_to_bytes(vector)), vector)
    assert codec.embedding_from_bytes(b"") is None


@settings(max_examples=60, deadline=None)
@given(
    names=st.lists(st.text(min_size=1, max_size=20), min_size=1, max_size=3),
    value=st.one_of(st.text(max_size=10), st.integers(-(2**62), 2**62), st.booleans(), st.floats(allow_nan=False)),
)
def test_constants_and_values_survive_any_text(names: list[str], value: object) -> None:
    query = StructuredQuery(
        "a",
        {"a": Symbol("a", "t"), "b": Symbol("b", "u", tuple(names))},
        [Triplet("a", "e", "b")],
        [AttributeConstraint("a", "x", "=", value)],  # type: ignore[arg-type]
    )
    assert codec.query_from_proto(codec.query_to_proto(query)) == query
