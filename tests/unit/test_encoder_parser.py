"""The encoder parser (AF steps 1–3 without an LLM) on the bundled real sample, and on a second schema."""

from __future__ import annotations

import pytest

from skbqa.engine.embedded import EmbeddedEngine
from skbqa.query.context import QueryContext
from skbqa.query.structured import StructuredQuery


def parse(engine: EmbeddedEngine, question: str) -> StructuredQuery:
    return engine.strategies["af"].parser.parse(QueryContext(question, engine.encoder))  # type: ignore[attr-defined]


def constants(parsed: StructuredQuery) -> dict[str, tuple[str | None, tuple[str, ...]]]:
    return {s.name: (s.type, s.names) for s in parsed.constants}


def edges(parsed: StructuredQuery) -> set[tuple[str, str | None, str]]:
    return {(t.head, t.edge, t.tail) for t in parsed.triplets}


def test_target_type_relation_and_attribute_value(biomed_sample_engine: EmbeddedEngine) -> None:
    parsed = parse(
        biomed_sample_engine, "What genes participating in methylation and located on chromosome 8 are there?"
    )
    assert parsed.target_type == "gene"
    assert constants(parsed) == {"c1": ("biological_process", ("methylation",))}
    assert edges(parsed) == {("y", "gene_participates_in_biological_process", "c1")}  # the schema's direction
    [constraint] = parsed.constraints
    assert (constraint.symbol, constraint.attribute, constraint.op, constraint.value) == (
        "y",
        "chromosome",
        "=",
        "8",
    )
    # "chromosome" is also a cellular component's name: the attribute pass claimed it first.
    assert all("chromosome" not in names for _, names in constants(parsed).values())


def test_names_match_whatever_the_case(biomed_sample_engine: EmbeddedEngine) -> None:
    parsed = parse(biomed_sample_engine, "What genes participating in METHYLATION are there?")
    assert constants(parsed) == {"c1": ("biological_process", ("METHYLATION",))}


def test_a_relation_label_before_a_name_is_not_a_constant(biomed_sample_engine: EmbeddedEngine) -> None:
    parsed = parse(
        biomed_sample_engine,
        "Which are the diseases with the mode of inheritance Autosomal dominant inheritance and related to preeclampsia?",
    )
    assert parsed.target_type == "disease"
    assert constants(parsed) == {"c1": ("phenotype", ("Autosomal dominant inheritance",))}
    assert edges(parsed) == {("y", "disease_has_mode_of_inheritance", "c1")}
    # "related to" a node that several relations could mean stays a keyword on the answer's text.
    assert "preeclampsia" in parsed.text_constraints


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        # "of which X is a subtype": X is the subject; "that are a kind of Y": the answer is.
        (
            "Name the phenotypes of which Type II transferrin isoform profile is a subtype and that are a kind of "
            "Abnormal protein N-linked glycosylation.",
            {("c1", "is_a", "y"), ("y", "is_a", "c2")},
        ),
        # "parents of X" turns the hierarchy around.
        ("Which cellular components are parents of cytoplasm?", {("c1", "is_a", "y")}),
        ("Which cellular components are subtypes of cytoplasm?", {("y", "is_a", "c1")}),
        # "that have X as a part": content words after X make X the subject.
        (
            "Name the cellular components that have proton-transporting ATP synthase, stator stalk as a part.",
            {("c1", "part_of", "y")},
        ),
    ],
)
def test_direction_of_same_type_relations(
    biomed_sample_engine: EmbeddedEngine, question: str, expected: set[tuple[str, str, str]]
) -> None:
    assert edges(parse(biomed_sample_engine, question)) == expected


def test_gene_symbols_link_through_the_alias_columns(biomed_sample_engine: EmbeddedEngine) -> None:
    parsed = parse(
        biomed_sample_engine,
        "Which are the biological processes that the gene HAS2 participates in and whose description mentions nephron?",
    )
    assert constants(parsed) == {"c1": ("gene", ("HAS2",))}
    assert edges(parsed) == {("c1", "gene_participates_in_biological_process", "y")}
    assert parsed.text_constraints == ["nephron"]


def test_quoted_text_is_a_text_constraint_not_a_constant(biomed_sample_engine: EmbeddedEngine) -> None:
    parsed = parse(
        biomed_sample_engine,
        'Find the cellular component described by the phrase "that surround a chromoplast and form the".',
    )
    assert parsed.target_type == "cellular_component"
    assert not parsed.constants and not parsed.triplets
    assert parsed.text_constraints == ["that surround a chromoplast and form the"]


def test_without_a_type_word_the_target_type_is_read_from_the_verb(biomed_sample_engine: EmbeddedEngine) -> None:
    parsed = parse(biomed_sample_engine, "hyaluronan synthase 2 participates in what?")
    assert parsed.target_type == "biological_process"
    assert edges(parsed) == {("c1", "gene_participates_in_biological_process", "y")}
    assert any("name an edge" in w for w in parsed.warnings)


def test_without_a_type_word_or_an_edge_word_the_target_type_is_guessed(
    biomed_sample_engine: EmbeddedEngine,
) -> None:
    parsed = parse(biomed_sample_engine, "what does hyaluronan synthase 2 do?")
    assert parsed.target_type is not None
    assert any("guessed" in w for w in parsed.warnings)


def test_a_phrase_with_no_node_is_left_as_text(biomed_sample_engine: EmbeddedEngine) -> None:
    parsed = parse(biomed_sample_engine, "Which genes are about quantum chromodynamics lattice simulations?")
    assert parsed.target_type == "gene" and not parsed.constants
    assert any("chromodynamics" in t for t in parsed.text_constraints)


def test_another_schema_two_hops_numbers_and_years(tmp_path, onnx_encoder) -> None:
    """Nothing biomedical is built in: the synthetic papers/authors schema parses with the same code."""
    from skbqa.ingest.builder import ingest
    from skbqa.synth.generator import generate

    generate(tmp_path / "bundle", nodes=400, seed=3, questions=5)
    ingest(tmp_path / "bundle", tmp_path / "index", onnx_encoder, progress=False)
    engine = EmbeddedEngine.open(tmp_path / "index", encoder=onnx_encoder)
    nodes = engine.stores.nodes
    institution = next(
        n for n, p in zip(nodes.names, range(len(nodes)), strict=True) if nodes.type_name(p) == "institution"
    )
    venue = next(n for n, p in zip(nodes.names, range(len(nodes)), strict=True) if nodes.type_name(p) == "venue")
    paper = next(n for n, p in zip(nodes.names, range(len(nodes)), strict=True) if nodes.type_name(p) == "paper")

    parsed = parse(engine, f"Which authors affiliated with {institution} wrote a paper published in {venue}?")
    assert parsed.target_type == "author"
    assert {s.type for s in parsed.constants} == {"institution", "venue"}
    assert {t.edge for t in parsed.triplets} == {"affiliated_with", "writes", "published_in"}
    assert any(s.type == "paper" and not s.is_constant for s in parsed.symbols.values())  # the two-hop variable

    parsed = parse(engine, f"Which papers that cite {paper} have a rating above 6.5?")
    assert edges(parsed) == {("y", "cites", "c1")}
    assert [(c.attribute, c.op, c.value) for c in parsed.constraints] == [("rating", ">", 6.5)]

    parsed = parse(engine, f"Which papers published in {venue} appeared after 2015?")
    assert [(c.attribute, c.op, c.value) for c in parsed.constraints] == [("year", ">", 2015)]


def test_an_acronym_stored_as_one_types_value_gives_the_answers_type(biomed_sample_engine: EmbeddedEngine) -> None:
    # no type word: "ORPHA" is a value of the diseases' source attribute only, so the entries are diseases
    parsed = parse(biomed_sample_engine, "ORPHA entries that list Seizure")
    assert parsed.target_type == "disease"
    assert [(c.attribute, c.value) for c in parsed.constraints] == [("source", "ORPHA")]
