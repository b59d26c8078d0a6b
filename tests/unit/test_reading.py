"""The encoder parser's reading of phrasings beyond the first type word and single edges: the head noun phrase,
type synonyms, chains through an unnamed node (both kinds), typos in names, and the parse's confidence with the
strands' blend. Each switch turned off gives the older reading, so every test also shows what the switch changes."""

from __future__ import annotations

import numpy as np
import pytest

from skbqa.engine.embedded import EmbeddedEngine
from skbqa.query.context import Candidate, QueryContext
from skbqa.query.structured import StructuredQuery
from skbqa.skb.schema import Schema
from skbqa.stages.parse.base import Reading
from skbqa.stages.parse.relations import RelationChooser
from skbqa.stages.ranking.step import blend
from skbqa.strategies.af import AfStrategy

OFF = Reading(head_noun=False, chains=False, typos=False)


def parse(engine: EmbeddedEngine, question: str, reading: Reading | None = None) -> StructuredQuery:
    af = engine.strategies["af"]
    assert isinstance(af, AfStrategy)
    return af.parse.encoder_parser.parse(QueryContext(question, engine.encoder), reading)


def edges(parsed: StructuredQuery) -> set[tuple[str, str | None, str]]:
    return {(t.head, t.edge, t.tail) for t in parsed.triplets}


def test_the_answer_type_is_the_head_noun_whatever_the_word_order(biomed_sample_engine: EmbeddedEngine) -> None:
    question = "For the gene BRCA1, which diseases are associated with it?"
    assert parse(biomed_sample_engine, question).target_type == "disease"
    assert parse(biomed_sample_engine, question, OFF).target_type == "gene"  # the first type word


def test_a_type_synonym_names_the_answer_type(biomed_sample_engine: EmbeddedEngine) -> None:
    parsed = parse(biomed_sample_engine, "which disorders are linked to BRCA1?")
    assert parsed.target_type == "disease"
    assert {s.names for s in parsed.constants} == {("BRCA1",)}
    assert edges(parsed) == {("c1", "gene_associated_with_disease", "y")}


def test_an_intermediate_type_word_makes_a_chain(biomed_sample_engine: EmbeddedEngine) -> None:
    question = "Which genes are associated with a disease that presents with seizures?"
    parsed = parse(biomed_sample_engine, question)
    assert parsed.symbols["m1"].type == "disease"
    assert edges(parsed) == {("m1", "disease_has_phenotype", "c1"), ("y", "gene_associated_with_disease", "m1")}
    assert parsed.symbols["c1"].type == "phenotype"


def test_hierarchy_words_next_to_a_name_make_a_chain(biomed_sample_engine: EmbeddedEngine) -> None:
    parsed = parse(biomed_sample_engine, "What genes are located in a part of the mitochondrion?")
    assert parsed.symbols["m1"].type == "cellular_component"
    assert edges(parsed) == {("m1", "part_of", "c1"), ("y", "gene_located_in_cellular_component", "m1")}
    single = parse(biomed_sample_engine, "What genes are located in a part of the mitochondrion?", OFF)
    assert "m1" not in single.symbols  # the single edge: genes located in the mitochondrion itself


def test_a_passive_agent_is_the_source_of_a_chain_hop(biomed_sample_engine: EmbeddedEngine) -> None:
    parsed = parse(biomed_sample_engine, "Which genes are associated with a disease that presents with seizures?")
    # the chain's second hop runs from the intermediate disease to the named phenotype, as the schema has it
    assert ("m1", "disease_has_phenotype", "c1") in edges(parsed)


def test_a_name_with_one_typo_is_linked(biomed_sample_engine: EmbeddedEngine) -> None:
    parsed = parse(biomed_sample_engine, "wich genes are asociated with preeclampsai")
    assert {s.names for s in parsed.constants} == {("preeclampsia",)}
    assert not parse(biomed_sample_engine, "wich genes are asociated with preeclampsai", OFF).constants


def test_confidence_is_high_for_a_parse_that_explains_the_question(biomed_sample_engine: EmbeddedEngine) -> None:
    sure = parse(biomed_sample_engine, "Which genes are associated with preeclampsia?")
    unsure = parse(biomed_sample_engine, "Anything about tiny glowing sea creatures near reefs?")
    assert sure.confidence is not None and unsure.confidence is not None
    assert sure.confidence >= 0.9 > 0.3 > unsure.confidence


def candidates(prefix: str, n: int) -> list[Candidate]:
    return [Candidate(i, 1.0, prefix, {}, {}) for i in range(n)]


@pytest.mark.parametrize(
    ("confidence", "first_sources"),
    [
        (0.9, ["grounded", "grounded", "grounded"]),
        (0.5, ["grounded", "vss", "grounded"]),
        (0.2, ["vss", "vss", "vss"]),
    ],
)
def test_blend_weighs_the_strands_by_confidence(confidence: float, first_sources: list[str]) -> None:
    merged = blend(candidates("grounded", 5), candidates("vss", 5), confidence)
    assert [c.source for c in merged[:3]] == first_sources
    assert len(merged) == 10


def test_every_switch_off_is_accepted_per_request(biomed_sample_engine: EmbeddedEngine) -> None:
    options = {"head_noun": False, "chains": False, "typos": False, "blend": False, "relax": False}
    answer = biomed_sample_engine.ask(
        "Which genes are associated with preeclampsia?", strategy="af", options=options
    )
    assert answer.items


def test_a_head_noun_before_a_type_word_names_the_answer(biomed_sample_engine: EmbeddedEngine) -> None:
    """ "conditions" is no type word, "genes" is: the head noun still decides, and "genes" becomes the node on
    the way (the synonym comes from how the disease nodes describe themselves and the encoder, together)."""
    parsed = parse(biomed_sample_engine, "Conditions connected to genes involved in kidney development?")
    assert parsed.target_type == "disease"
    assert (
        parse(
            biomed_sample_engine, "Conditions connected to genes involved in kidney development?", OFF
        ).target_type
        == "gene"
    )


def test_an_opener_does_not_hide_the_head_noun(biomed_sample_engine: EmbeddedEngine) -> None:
    parsed = parse(biomed_sample_engine, "I'm looking for the genes involved in kidney development.")
    assert parsed.target_type == "gene"
    assert edges(parsed) == {("y", "gene_participates_in_biological_process", "c1")}


def test_a_chain_between_nodes_of_the_answers_own_type(biomed_sample_engine: EmbeddedEngine) -> None:
    """Process → process → process: "something that is part of X" is an unnamed node one part_of hop from X."""
    parsed = parse(
        biomed_sample_engine, "processes that negatively regulate something that is part of nephron development"
    )
    assert edges(parsed) == {("m1", "part_of", "c1"), ("y", "negatively_regulates", "m1")}
    plain = parse(biomed_sample_engine, "which processes are part of nephron development?")
    assert edges(plain) == {("y", "part_of", "c1")}  # no unnamed node where the words name none


def test_a_sub_prefixed_noun_is_a_hierarchy_hop(biomed_sample_engine: EmbeddedEngine) -> None:
    parsed = parse(biomed_sample_engine, "diseases showing a subtype of hypogonadism")
    assert parsed.symbols["m1"].type == "phenotype"
    assert ("m1", "is_a", "c1") in edges(parsed)


def test_a_phrase_after_the_constant_does_not_turn_the_edge_around(biomed_sample_engine: EmbeddedEngine) -> None:
    parsed = parse(biomed_sample_engine, "list the direct subtypes of Hypogonadism in HPO")
    assert edges(parsed) == {("y", "is_a", "c1")}


def test_two_type_words_on_the_way_make_a_chain_through_two_nodes(biomed_sample_engine: EmbeddedEngine) -> None:
    """phenotype ← disease ← gene → component: no schema path of one or two hops joins the ends."""
    parsed = parse(
        biomed_sample_engine, "Which phenotypes appear in diseases tied to genes found in the Golgi membrane?"
    )
    assert parsed.target_type == "phenotype"
    types = {name: symbol.type for name, symbol in parsed.symbols.items()}
    assert types == {"y": "phenotype", "c1": "cellular_component", "m1": "gene", "m1_2": "disease"}
    assert {(t.head, t.tail) for t in parsed.triplets} == {("m1", "c1"), ("m1", "m1_2"), ("m1_2", "y")}


def test_a_name_of_the_answers_own_type_is_the_answer(biomed_sample_engine: EmbeddedEngine) -> None:
    """No edge joins two genes: "which gene is also called ACTSA" asks for that gene, not a detour."""
    parsed = parse(biomed_sample_engine, "which gene is also called ACTSA?")
    assert parsed.triplets == []
    assert parsed.symbols["y"].names == ("ACTSA",)
    top = biomed_sample_engine.ask("which gene is also called ACTSA?", strategy="af", k=3).items[0]
    assert top.name == "actin alpha 2, smooth muscle"


def test_kinds_of_a_name_are_narrower_nodes_of_its_type(biomed_sample_engine: EmbeddedEngine) -> None:
    parsed = parse(biomed_sample_engine, "what kinds of hypogonadism are recorded?")
    assert parsed.target_type == "phenotype"
    assert edges(parsed) == {("y", "is_a", "c1")}


@pytest.mark.parametrize(
    ("question", "op", "value"),
    [
        ("which have EC 3.6.-.- please", "STARTS WITH", "3.6."),
        ("which ones have EC numbers starting with 2.7.11", "STARTS WITH", "2.7.11."),
        ("anything with EC 2.7.x.x?", "STARTS WITH", "2.7."),
        ("the gene with EC 3.6.3.14", "=", "3.6.3.14"),
    ],
)
def test_codes_with_wildcards_are_prefixes(
    biomed_sample_engine: EmbeddedEngine, question: str, op: str, value: str
) -> None:
    """A code column is found from its values (dotted numbers); the type it belongs to is the answer's when no
    word names one."""
    parsed = parse(biomed_sample_engine, question)
    assert parsed.target_type == "gene"
    assert [(c.attribute, c.op, c.value) for c in parsed.constraints] == [("ec_numbers", op, value)]


def test_a_value_before_its_attribute_name(biomed_sample_engine: EmbeddedEngine) -> None:
    parsed = parse(biomed_sample_engine, "X-chromosome genes involved in kidney development")
    assert [(c.attribute, c.value) for c in parsed.constraints] == [("chromosome", "X")]


def test_a_quoted_name_is_a_constant_and_other_quotes_are_text(biomed_sample_engine: EmbeddedEngine) -> None:
    parsed = parse(biomed_sample_engine, "which genes take part in 'kidney development'?")
    assert edges(parsed) == {("y", "gene_participates_in_biological_process", "c1")}
    assert "kidney development" not in parsed.text_constraints
    other = parse(biomed_sample_engine, "which genes mention 'zinc finger binding motif xyz'?")
    assert "zinc finger binding motif xyz" in other.text_constraints


def test_a_type_word_after_a_name_of_its_type_types_that_name(biomed_sample_engine: EmbeddedEngine) -> None:
    """ "For the Hypogonadism phenotype, which diseases …": "phenotype" types the name before it."""
    parsed = parse(biomed_sample_engine, "For the Hypogonadism phenotype, which diseases are annotated with it?")
    assert parsed.target_type == "disease"


@pytest.mark.parametrize("preposition", ["of", "in", "for"])
def test_a_noun_of_a_disease_is_no_disease_when_no_edge_joins_diseases(
    biomed_sample_engine: EmbeddedEngine, preposition: str
) -> None:
    # "symptoms" reads as a disease word on its own (diseases' texts speak of symptoms); "the symptoms in X" cannot
    # be diseases when X is one and no edge joins two diseases
    parsed = parse(biomed_sample_engine, f"What are the symptoms {preposition} preeclampsia?")
    assert parsed.target_type == "phenotype"
    assert {s.names for s in parsed.constants} == {("preeclampsia",)}


@pytest.mark.parametrize("some", ["at least one", "some", "any", "a"])
def test_a_type_word_after_an_existential_word_requires_such_a_neighbour(
    biomed_sample_engine: EmbeddedEngine, some: str
) -> None:
    question = f"Which genes on chromosome 8 are associated with {some} disease?"
    parsed = parse(biomed_sample_engine, question)
    assert edges(parsed) == {("y", "gene_associated_with_disease", "e1")}
    assert parsed.symbols["e1"].type == "disease" and not parsed.symbols["e1"].is_constant
    answer = biomed_sample_engine.ask(question, strategy="af", k=5)
    graph, nodes = biomed_sample_engine.stores.graph, biomed_sample_engine.stores.nodes
    grounded = [i for i in answer.items if i.source == "grounded"]
    assert grounded, answer.notes.get("scope")
    for item in grounded:  # every grounded answer is on chromosome 8 and has a disease
        position = int(nodes.positions([item.node_id])[0])
        assert "8" in str(nodes.attrs[position].get("chromosome")).split(",")
        assert int(graph.degree(np.asarray([position]), "gene_associated_with_disease", "out").sum()) > 0
    # a type word that names the answer's own kind or types a name adds nothing
    assert "e1" not in parse(biomed_sample_engine, "What is a disease associated with BRCA1?").symbols


def test_a_hop_the_edge_names_tell_apart_takes_the_edge_whose_words_are_said(
    biomed_sample_engine: EmbeddedEngine,
) -> None:
    # three edges join diseases to phenotypes; "phenotypic features of" leaves "clinical" and "mode of
    # inheritance" unsaid, which the other two edges' names add
    parsed = parse(biomed_sample_engine, "phenotypic features of BRCA1-associated diseases")
    assert parsed.target_type == "phenotype"
    assert edges(parsed) == {("c1", "gene_associated_with_disease", "m1"), ("m1", "disease_has_phenotype", "y")}


class _ZeroEncoder:
    """Every text the same vector: the options are scored by their words alone."""

    def encode(self, texts: list[str]) -> np.ndarray:
        return np.zeros((len(texts), 4), np.float32)


def test_a_hop_the_words_do_not_tell_apart_accepts_any_edge() -> None:
    schema = Schema.from_dict(
        {
            "name": "s",
            "node_types": [{"name": n} for n in ("gene", "disease", "trait")],
            "edge_types": [
                {"name": "gene_linked_to_disease", "source": "gene", "target": "disease"},
                {"name": "disease_shows_trait", "source": "disease", "target": "trait"},
                {"name": "disease_lists_trait", "source": "disease", "target": "trait"},
            ],
        }
    )
    chooser = RelationChooser(schema, _ZeroEncoder())  # type: ignore[arg-type]
    options = chooser.options("gene", "trait", constant_is_subject=True)
    best = chooser.rank(options, "traits of diseases linked to", np.zeros(4, np.float32))[0]
    assert best.hops[0].edge.name == "gene_linked_to_disease"
    assert not best.hops[0].any_edge and best.hops[1].any_edge  # the words name the way, not the last edge


def test_a_name_beside_another_takes_its_type_when_it_has_it(biomed_sample_engine: EmbeddedEngine) -> None:
    # osteoporosis names a disease and a phenotype; after the phenotype azoospermia it is the phenotype
    parsed = parse(
        biomed_sample_engine, "Which diseases have both azoospermia and osteoporosis among their features?"
    )
    assert parsed.target_type == "disease"
    assert {(s.type, s.names) for s in parsed.constants} == {
        ("phenotype", ("azoospermia",)),
        ("phenotype", ("osteoporosis",)),
    }
