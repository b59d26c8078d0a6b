from __future__ import annotations

from pathlib import Path

import numpy as np

from skbqa.stores.text.bm25 import Bm25Index

DOCS = [
    "gene on chromosome 7 involved in dna repair",
    "gene on chromosome 17 regulating apoptosis",
    "disease with dna repair deficiency",
    "phenotype: short stature",
]
TYPES = np.array([0, 0, 1, 2], np.int16)


def test_ranks_by_shared_rare_terms_and_keeps_single_character_tokens() -> None:
    index = Bm25Index.build(DOCS, TYPES)
    hits = index.search("chromosome 7", 4)
    assert hits.keys[0] == 0  # "7" must count: the default bm25s pattern would drop it
    assert set(index.search("dna repair", 2).keys.tolist()) == {0, 2}


def test_filters_by_type_and_key_and_drops_zero_scores() -> None:
    index = Bm25Index.build(DOCS, TYPES)
    assert index.search("dna repair", 10, node_types=[1]).keys.tolist() == [2]
    assert index.search("dna repair", 10, keys=np.array([0, 3])).keys.tolist() == [0]
    assert len(index.search("zebrafish", 10)) == 0  # no known token: no hits, not arbitrary ones


def test_save_load_round_trip(tmp_path: Path) -> None:
    index = Bm25Index.build(DOCS, TYPES)
    index.save(tmp_path)
    loaded = Bm25Index.load(tmp_path)
    np.testing.assert_allclose(loaded.scores("apoptosis gene"), index.scores("apoptosis gene"))


def test_fast_words_agree_with_the_index_tokenizer() -> None:
    from skbqa.stores.text.bm25 import tokenize, words

    texts = ["The BRCA1 gene, on chromosome 17 (band q21.31), is a DNA-repair gene!", "", "a an the"]
    assert [words(t) for t in texts] == tokenize(texts)
