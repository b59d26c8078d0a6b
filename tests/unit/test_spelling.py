"""The speller's readings of misspelt name words: spelling variants (British/American, "f" for "ph"), one edit,
and two edits for long words; and the respellings of known words."""

from __future__ import annotations

import pytest

from skbqa.stages.parse.spelling import Speller, spelling_key


class Words:
    def __init__(self, *names: str) -> None:
        self._words = {w for name in names for w in name.split()}

    def words(self) -> set[str]:
        return self._words


def speller(*names: str) -> Speller:
    lexicon = Words(*names)
    return Speller(lambda: lexicon)  # type: ignore[arg-type, return-value]


@pytest.mark.parametrize(
    ("british", "american"),
    [
        ("tumour", "tumor"),
        ("anaemia", "anemia"),
        ("haemoglobin", "hemoglobin"),
        ("oedema", "edema"),
        ("diarrhoea", "diarrhea"),
        ("localisation", "localization"),
        ("hydrolysed", "hydrolyzed"),
        ("centre", "center"),
        ("analogue", "analog"),
        ("signalling", "signaling"),
        ("ageing", "aging"),
        ("programme", "program"),
        ("defence", "defense"),
        ("sulphate", "sulfate"),
        ("leucocyte", "leukocyte"),
        ("behavioural", "behavioral"),
    ],
)
def test_a_british_spelling_and_the_american_share_one_key(british: str, american: str) -> None:
    assert spelling_key(british) == spelling_key(american)


@pytest.mark.parametrize(("one", "other"), [("contour", "contort"), ("analyst", "analyze"), ("colon", "color")])
def test_different_words_keep_different_keys(one: str, other: str) -> None:
    assert spelling_key(one) != spelling_key(other)


def test_a_variant_is_read_even_when_english_knows_the_written_one() -> None:
    names = speller("tumor protein p63", "sulfate transport")
    assert names.readings("tumour") == ["tumor"]
    assert names.readings("Sulphate") == ["sulfate"]
    assert names.readings("colour") == []  # English, and no name word is a spelling of it


def test_an_american_spelling_finds_the_british_name() -> None:
    assert speller("generalised myoclonic seizure").readings("generalized") == ["generalised"]


def test_f_for_ph_is_a_variant() -> None:
    assert speller("posterior staphyloma").readings("stafyloma") == ["staphyloma"]


def test_a_known_word_is_respelt_as_its_variant_or_when_english_does_not_know_it_one_edit_away() -> None:
    names = speller("tumour", "tumor protein p63", "rodrigues blindness", "rodriguez syndrome")
    assert names.readings("tumour") == []  # a name word as written: nothing to read otherwise
    assert names.respellings("tumour") == ["tumor"]
    assert names.respellings("rodriguez") == ["rodrigues"]
    assert names.respellings("protein") == []  # English: not respelt one edit away


def test_one_edit_and_two_edits_for_long_words_only() -> None:
    names = speller("trichothiodystrophy", "melanosome assembly", "glycogen storage")
    assert names.readings("assembley") == ["assembly"]
    assert names.readings("trichotiodistrophy") == ["trichothiodystrophy"]  # two edits, 18 letters
    assert names.readings("glicogan") == []  # two edits in a short word: too many real words that close


def test_every_name_word_one_edit_away_is_a_reading_nearest_first() -> None:
    names = speller("melanosome assembly", "assembled", "assemblies")
    assert names.readings("assembley") == ["assembled", "assembly"]


@pytest.mark.parametrize(
    ("typed", "meant"),
    [
        ("illnesess", "illnesses"),
        ("assosiated", "associated"),
        ("pakage", "package"),
        ("maintaners", "maintainers"),
    ],
)
def test_a_misspelt_english_word_reads_as_the_one_word_one_edit_away(typed: str, meant: str) -> None:
    from skbqa.stages.parse.spelling import english_respelling

    assert english_respelling(typed) == meant


def test_what_is_not_read_as_misspelt_english() -> None:
    from skbqa.stages.parse.spelling import english_respelling

    assert english_respelling("package") is None  # English already
    assert english_respelling("genez") is None  # too short
    assert english_respelling("Pakage") is None  # not lower case: a name's word


def test_a_word_the_knowledge_base_uses_is_never_respelt_as_english() -> None:
    from skbqa.skb.schema import Schema
    from skbqa.stages.parse.abbreviations import Abbreviations

    schema = Schema.from_dict(
        {
            "name": "s",
            "description": "",
            "node_types": [{"name": "disease", "description": "a disease"}],
            "edge_types": [],
        }
    )
    plain = Abbreviations(schema, lambda token: False)
    assert plain.expand("aplasia of the bladder")[0] == "aphasia of the bladder"  # English would say so
    knowing = Abbreviations(schema, lambda token: False, known_word=lambda word: word == "aplasia")
    assert knowing.expand("aplasia of the bladder")[0] == "aplasia of the bladder"


def test_a_long_misspelling_english_tables_know_is_still_respelt() -> None:
    # lemminflect lists "developement" as a noun; ten letters or more, one edit from a name word, it is respelt
    names = speller("lens development in camera-type eye")
    assert names.respellings("developement") == ["development"]
    assert names.respellings("contains") == []  # a shorter English word stays itself


def test_a_plural_english_does_not_know_reads_as_its_singular_first() -> None:
    names = speller("fjeld", "fjelt", "loch", "locus")
    assert names.readings("lochs")[0] == "loch"  # not "locus", one edit away too
    assert names.readings("fjelds") == ["fjeld"]
