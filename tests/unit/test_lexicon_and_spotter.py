"""The name lexicon (aliases inferred from the data) and the attribute spotter, on small hand-built tables."""

from __future__ import annotations

import numpy as np

from skbqa.skb.schema import NodeType, Schema
from skbqa.stages.parse.attribute_mentions import AttributeSpotter
from skbqa.stages.parse.question_text import QuestionText
from skbqa.stores.attributes.catalog import AttributeCatalog
from skbqa.stores.lexicon import ALIAS, NAME, NameLexicon
from skbqa.stores.nodes import NodeTable


def table(rows: list[tuple[str, str, dict]]) -> NodeTable:
    types = sorted({t for t, _, _ in rows})
    schema = Schema("t", "", [NodeType(t) for t in types], [])
    return NodeTable(
        schema,
        np.arange(len(rows), dtype=np.int64),
        np.asarray([types.index(t) for t, _, _ in rows], np.int16),
        [n for _, n, _ in rows],
        ["" for _ in rows],
        [a for _, _, a in rows],
    )


def genes() -> NodeTable:
    rows = []
    for i in range(40):
        rows.append(
            (
                "gene",
                f"synthetic gene {i}",
                {"symbol": f"SG{i}", "aliases": f"ALT{i}, alternative gene {i}", "chromosome": str(i % 5 + 1)},
            )
        )
    rows.append(("gene", "Wiskott protein", {"symbol": "WAS", "aliases": "IMD2, THC", "chromosome": "X"}))
    rows.append(("term", "chromosome, centromeric region", {"synonyms": "centromere; chromosome, centric region"}))
    rows.append(("term", "binding", {"synonyms": "ligand binding; general binding"}))
    return table(rows)


def test_aliases_come_from_mostly_distinct_string_columns() -> None:
    nodes = genes()
    lexicon = NameLexicon.build(nodes)
    keys = {(nodes.schema.node_types[c].name, k) for c, k, _ in lexicon.alias_keys}
    assert ("gene", "symbol") in keys and ("gene", "aliases") in keys
    assert ("gene", "chromosome") not in keys  # a small vocabulary of categories, not names
    assert lexicon.positions("SG7").tolist() == [7]
    assert lexicon.positions("alternative gene 7").tolist() == [7]
    assert [e.kind for e in lexicon.lookup("synthetic gene 7")] == [NAME]
    assert [e.kind for e in lexicon.lookup("alternative gene 7")] == [ALIAS]


def test_semicolon_lists_keep_commas_inside_items() -> None:
    lexicon = NameLexicon.build(genes())
    term = 41
    assert term in lexicon.positions("chromosome, centric region").tolist()
    assert lexicon.positions("chromosome").size == 0  # not an item of its own
    assert lexicon.positions("Centromere").tolist() == [term]  # case and punctuation do not matter for words


def test_short_upper_case_aliases_must_match_their_case() -> None:
    lexicon = NameLexicon.build(genes())
    assert lexicon.positions("WAS", original="WAS").tolist() == [40]
    assert lexicon.positions("was", original="was").size == 0  # the English word
    assert lexicon.positions("Sg7", original="Sg7").tolist() == [7]  # digits make it unambiguous


def test_spotter_reads_labelled_values_comparisons_and_years() -> None:
    chromosomes = ["1", "2", "3", "X"]  # a letter among the values makes the column categorical, as in real data
    rows = [
        ("gene", f"g{i}", {"chromosome": chromosomes[i % 4], "gene_type": ["protein-coding", "ncRNA"][i % 2]})
        for i in range(30)
    ]
    rows += [
        ("paper", f"p{i}", {"year": 2000 + i, "rating": 1.5 + i / 4, "language": ["English", "French"][i % 2]})
        for i in range(30)
    ]
    spotter = AttributeSpotter(AttributeCatalog.build(table(rows)))

    def spot(question: str, node_type: str) -> list[tuple[str, str, object]]:
        return [(c.attribute, c.op, c.value) for c in spotter(QuestionText.of(question), node_type)]

    assert spot("Which genes are located on chromosome 2?", "gene") == [("chromosome", "=", "2")]
    assert spot("Which genes located on chromosome 7 are there?", "gene") == []  # no such value in the SKB
    assert spot("genes on chromosome x", "gene") == [("chromosome", "=", "X")]  # the stored spelling
    assert spot("List ncRNA genes", "gene") == [("gene_type", "=", "ncRNA")]
    assert spot("Which papers have a rating above 6.5?", "paper") == [("rating", ">", 6.5)]
    assert spot("papers with a rating of at least 3", "paper") == [("rating", ">=", 3)]
    assert spot("Which papers were published before 2010 and written in French?", "paper") == [
        ("language", "=", "French"),
        ("year", "<", 2010),
    ]


def test_a_numeric_attribute_followed_by_a_number_is_an_equality() -> None:
    rows = [("gene", f"g{i}", {"chromosome": str(i % 3 + 1)}) for i in range(30)]
    spotter = AttributeSpotter(AttributeCatalog.build(table(rows)))
    found = spotter(QuestionText.of("genes on chromosome 3"), "gene")
    assert [(c.attribute, c.op, c.value) for c in found] == [("chromosome", "=", 3)]


def test_spotted_words_are_claimed() -> None:
    rows = [("gene", f"g{i}", {"chromosome": str(i % 3 + 1)}) for i in range(30)]
    spotter = AttributeSpotter(AttributeCatalog.build(table(rows)))
    text = QuestionText.of("genes on chromosome 3 in the nucleus")
    spotter(text, "gene")
    claimed = [t.text for t, c in zip(text.tokens, text.claimed, strict=True) if c == "attribute"]
    assert claimed == ["chromosome", "3"]


def test_saved_lexicon_is_read_back_for_its_table_only(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from skbqa.stores.lexicon import LEXICON_FILE

    nodes = genes()
    built = NameLexicon.build(nodes)
    built.save(tmp_path / LEXICON_FILE, nodes=len(nodes))
    nodes.directory = tmp_path
    loaded = NameLexicon.build(nodes)  # reads the file
    assert loaded.alias_keys == built.alias_keys and len(loaded) == len(built)
    assert loaded.max_words == built.max_words
    for text in ("SG7", "WAS", "was", "chromosome, centric region", "Wiskott protein", "unknown"):
        assert loaded.positions(text, original=text).tolist() == built.positions(text, original=text).tolist()
        assert loaded.lookup(text) == built.lookup(text)
    other = table([("gene", "only one", {})])
    other.directory = tmp_path  # a file saved for another table is not trusted
    assert NameLexicon.build(other).positions("only one").tolist() == [0]


def test_a_short_acronym_value_counts_alone_only_as_stored() -> None:
    rows = [
        ("disease", f"d{i}", {"source": ["OMIM", "ORPHA", "DECIPHER"][i % 3], "mood": "sad"}) for i in range(30)
    ]
    spotter = AttributeSpotter(AttributeCatalog.build(table(rows)))

    def spot(question: str) -> list[tuple[str, str, object]]:
        return [(c.attribute, c.op, c.value) for c in spotter(QuestionText.of(question), "disease")]

    assert spot("What OMIM diseases are linked to CFTR?") == [("source", "=", "OMIM")]
    assert spot("diseases with omim ids") == []  # lower case: too short to tell from a word
    assert spot("Which diseases make you sad?") == []  # a short lower-case value is an English word
    # a capitalised word English does not know that spells out a stored acronym of five letters or more
    assert spot("Which Orphanet entries list a cough?") == [("source", "=", "ORPHA")]
    assert spot("Which Omimology diseases?") == []  # "OMIM" is too short to be read from a longer word
    assert spot("Which Orphan diseases?") == []  # an English word


def test_a_capitalised_start_of_many_codes_before_the_type_word_is_a_family() -> None:
    symbols = [f"TLR{i}" for i in range(1, 6)] + ["SLC1A1", "SLC2A4", "SLC7A9", "BRCA1", "DNAH1", "DNAJ2", "DNAK7"]
    symbols += ["TLR10", "TLR11", "TLR12"] + [f"GN{i}" for i in range(60)]  # families are a minority
    rows = [("gene", f"gene {s}", {"symbol": s, "chromosome": str(i % 3 + 1)}) for i, s in enumerate(symbols)]
    names = {"dna repair"}
    spotter = AttributeSpotter(AttributeCatalog.build(table(rows)), is_name=lambda phrase: phrase.lower() in names)

    def spot(question: str) -> list[tuple[str, str, object]]:
        return [(c.attribute, c.op, c.value) for c in spotter(QuestionText.of(question), "gene")]

    assert spot("Which TLR genes are on chromosome 2?") == [
        ("symbol", "STARTS WITH", "TLR"),
        ("chromosome", "=", 2),
    ]
    assert spot("the SLC transporter genes") == [("symbol", "STARTS WITH", "SLC")]  # one word between

    def families(question: str) -> list[tuple[str, str, object]]:
        return [found for found in spot(question) if found[1] == "STARTS WITH"]

    assert families("BRCA1 genes") == []  # one value: a name, not a family
    assert families("DNA repair genes") == []  # the start of a longer name
    assert families("tlr genes") == [] and families("genes like TLR") == []  # lower case; not before the type
    assert families("the TLR5 gene") == [] and families("TLR1 genes") == []  # a code of its own, one gene
    assert families("Which GN genes are there?") == []  # a start most codes share says nothing
    assert families("non-coding TLR genes") == []  # a word of a longer kind, qualified before it
    assert families("List TLR genes") == [("symbol", "STARTS WITH", "TLR")]  # the request is no qualifier


def test_a_short_form_of_the_attributes_name_glued_to_a_value_is_that_value() -> None:
    rows = [("gene", f"g{i}", {"chromosome": ["11", "X", "2"][i % 3]}) for i in range(30)]
    spotter = AttributeSpotter(AttributeCatalog.build(table(rows)))

    def spot(question: str) -> list[tuple[str, str, object]]:
        return [(c.attribute, c.op, c.value) for c in spotter(QuestionText.of(question), "gene")]

    assert spot("Which chr11 genes mediate viral entry?") == [("chromosome", "=", "11")]
    assert spot("chrX genes") == [("chromosome", "=", "X")]
    assert spot("abc11 genes") == []  # not a short form of "chromosome"
    assert spot("chr12 genes") == []  # no such value
