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


def _corpus(n: int, seed: int = 0) -> list[str]:
    rng = np.random.default_rng(seed)
    vocab = [f"w{i}" for i in range(300)] + ["the", "a", "7", "x"]
    weights = 1.0 / np.arange(1, len(vocab) + 1)
    weights /= weights.sum()
    return [" ".join(rng.choice(vocab, rng.integers(0, 30), p=weights)) for _ in range(n)]


def test_scores_equal_bm25s_and_do_not_depend_on_chunking() -> None:
    import bm25s

    from skbqa.stores.text.bm25 import tokenize, words

    docs = _corpus(400)
    types = np.zeros(len(docs), np.int16)
    whole = Bm25Index.build(docs, types)
    chunked = Bm25Index.build_chunks((docs[i : i + 37] for i in range(0, len(docs), 37)), types)
    reference = bm25s.BM25()
    reference.index(tokenize(docs), show_progress=False)
    for query in ("w1 w2 w250", "w3 w3 x", "7", "nothing here", "w299 the"):
        known = [t for t in words(query) if t in reference.vocab_dict]
        expected = np.asarray(reference.get_scores(known), np.float32) if known else np.zeros(len(docs))
        np.testing.assert_allclose(whole.scores(query), expected, rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(chunked.scores(query), whole.scores(query))


def test_sparse_and_dense_query_scores_agree(monkeypatch) -> None:
    from skbqa.stores.text.bm25 import QueryScores

    docs = _corpus(500, seed=1)
    types = (np.arange(len(docs)) % 3).astype(np.int16)
    index = Bm25Index.build(docs, types)
    keys = np.array([0, 5, 5, 499, 250, 17])
    for query in ("w280 w290", "w1 w2 w3", "w150"):
        sparse = index.query(query)
        monkeypatch.setattr(QueryScores, "SPARSE_SHARE", 0.0)  # force the dense form
        dense = index.query(query)
        monkeypatch.undo()
        np.testing.assert_array_equal(sparse.dense(), dense.dense())
        np.testing.assert_array_equal(sparse.at(keys), dense.at(keys))
        for node_types in (None, [1], [0, 2]):
            top_sparse, top_dense = sparse.top(20, node_types), dense.top(20, node_types)
            assert sorted(sparse.dense()[top_sparse].tolist()) == sorted(dense.dense()[top_dense].tolist())
            assert (sparse.dense()[top_sparse] > 0).all()
            if node_types is not None:
                assert set(types[top_sparse].tolist()) <= set(node_types)
