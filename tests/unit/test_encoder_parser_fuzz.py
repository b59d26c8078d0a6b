"""The encoder parser reads untrusted text: whatever the question, it returns a structured query, never raises."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from skbqa.engine.embedded import EmbeddedEngine
from skbqa.query.context import QueryContext

WORDS = st.sampled_from(
    [
        "genes",
        "gene",
        "diseases",
        "which",
        "that",
        "of",
        "is",
        "a",
        "kind",
        "subtypes",
        "parents",
        "mention",
        "related",
        "to",
        "on",
        "chromosome",
        "17",
        "X",
        "above",
        "6.5",
        "after",
        "2015",
        "methylation",
        "HAS2",
        "Autosomal",
        "dominant",
        "inheritance",
        "the",
        "and",
        "or",
        ",",
        "?",
        '"',
        "'",
        "(",
        ")",
        "3-kinase",
        "binding",
    ]
)
QUESTIONS = st.one_of(
    st.text(min_size=1, max_size=300),
    st.lists(WORDS, min_size=1, max_size=40).map(" ".join),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(question=QUESTIONS)
def test_encoder_parser_never_raises(biomed_sample_engine: EmbeddedEngine, question: str) -> None:
    af = biomed_sample_engine.strategies["af"]
    parsed = af.parser.parse(QueryContext(question, biomed_sample_engine.encoder))  # type: ignore[attr-defined]
    assert parsed.target == "y"
    names = set(parsed.symbols)
    assert all(t.head in names and t.tail in names for t in parsed.triplets)
    assert all(c.symbol in names for c in parsed.constraints)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(question=st.lists(WORDS, min_size=1, max_size=30).map(" ".join))
def test_af_answers_any_question(biomed_sample_engine: EmbeddedEngine, question: str) -> None:
    result = biomed_sample_engine.ask(question, strategy="af", k=10)
    assert len(result.items) <= 10 and len({i.node_id for i in result.items}) == len(result.items)
