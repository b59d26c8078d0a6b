"""The words an answer shares with the question, as its reason shows them: the question's terms in order, each
found as a whole word of the node's document (the same words BM25 reads)."""

from __future__ import annotations

from skbqa.engine.embedded import EmbeddedEngine
from skbqa.ingest.documents import document
from skbqa.stores.text.bm25 import words
from skbqa.strategies.explain import MAX_TERMS_SHOWN, matched_terms


def reference(engine: EmbeddedEngine, question: str, position: int) -> list[str]:
    in_document = set(words(document(engine.stores.nodes, position)))
    return [t for t in dict.fromkeys(words(question)) if t in in_document][:MAX_TERMS_SHOWN]


def test_matched_terms_are_the_question_words_the_document_holds(biomed_sample_engine: EmbeddedEngine) -> None:
    nodes = biomed_sample_engine.stores.nodes
    questions = [
        "Which genes are associated with the disease and located in the nucleus?",
        "protein_coding genes on chromosome 11 with kinase activity (EC 2.7)",
        "gene GENE gene: the the of",  # repeats, case and stop words
        "café-au-lait spots",
        "",
    ]
    for question in questions:
        for position in range(0, len(nodes), max(1, len(nodes) // 60)):
            assert matched_terms(biomed_sample_engine.stores, question, position) == reference(
                biomed_sample_engine, question, position
            ), (question, nodes.names[position])


def test_a_word_inside_a_longer_word_is_no_match(biomed_sample_engine: EmbeddedEngine) -> None:
    stores = biomed_sample_engine.stores
    position = next(
        i for i, name in enumerate(stores.nodes.names) if "protein" in document(stores.nodes, i).lower()
    )
    assert "rotein" not in matched_terms(stores, "rotein prote", position)
