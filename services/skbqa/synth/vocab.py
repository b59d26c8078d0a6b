"""Fixed word and syllable tables for the synthetic SKB generator.

Every string here is plain ASCII without quotes or backslashes, so generated names and texts can be written as
JSON strings without escaping (`check_tables` asserts it). Topic nouns are grouped by theme (20 per theme, in
order), so a window of neighbouring nouns is thematically related; nouns, modifiers, area words and the words of
the sentence templates are pairwise disjoint, so a keyword question about a noun is never answered by filler.
"""

from __future__ import annotations

import re

_THEMES = """
entropy plasma photon lattice spin boson quark neutrino magnet superconductor
laser soliton vortex turbulence viscosity diffraction polarization resonance oscillator gravitation
catalyst polymer enzyme solvent ligand isomer oxidation crystal electrolyte membrane
colloid peptide alloy nanoparticle zeolite hydrogel adsorption titration reagent precipitate
genome protein neuron mitochondria ribosome antibody pathogen microbiome chromosome metabolism
receptor embryo virus bacteria phenotype transcription mutation synapse hormone plasmid
tumor vaccine diabetes cardiology inflammation therapy diagnosis surgery anesthesia dementia
epidemic obesity insulin fracture asthma stroke sepsis allergy biopsy prognosis
algorithm compiler database network cache kernel scheduler encryption blockchain transformer
embedding retrieval clustering regression classifier recommender parser simulation robotics quantization
topology manifold polynomial matrix eigenvalue graph integral tensor prime fractal
homology symmetry geometry combinatorics probability martingale permutation convexity lemma knot
earthquake glacier volcano sediment aquifer monsoon drought erosion permafrost tsunami
hurricane aerosol ozone wetland estuary coral forest wildfire rainfall landslide
inflation market auction taxation tariff pricing labor wage credit portfolio
volatility equity mortgage subsidy trade currency poverty tourism insurance logistics
turbine bridge engine propeller battery semiconductor antenna sensor actuator gearbox
welding concrete asphalt pipeline reactor transistor circuit drone satellite radar
education migration democracy urbanization literacy gender religion media identity community
housing crime policy elections welfare childhood aging ethics citizenship diaspora
galaxy quasar pulsar nebula exoplanet supernova asteroid comet telescope cosmology
redshift magnetar accretion orbit eclipse meteorite starlight corona heliosphere spectroscopy
soil irrigation fertilizer harvest wheat maize rice livestock pesticide greenhouse
orchard grazing compost seedling pollination dairy aquaculture vineyard tillage crop
syntax semantics phonology morphology dialect grammar translation lexicon poetry narrative
rhetoric manuscript archaeology folklore museum painting sculpture architecture theatre music
photovoltaic hydrogen wind biofuel grid nuclear fusion fission geothermal coal
storage electrolysis efficiency emissions carbon methane combustion microgrid hydropower biomass
"""

NOUNS: list[str] = _THEMES.split()
THEME_SIZE = 20

MODIFIERS: list[str] = [
    "applied",
    "computational",
    "quantum",
    "statistical",
    "molecular",
    "theoretical",
    "experimental",
    "clinical",
    "environmental",
    "structural",
    "dynamic",
    "adaptive",
    "robust",
    "scalable",
    "distributed",
    "nonlinear",
    "stochastic",
    "spatial",
    "temporal",
    "comparative",
    "integrative",
    "sustainable",
    "digital",
    "industrial",
    "cognitive",
    "evolutionary",
    "cellular",
    "organic",
    "inorganic",
    "numerical",
    "algebraic",
    "analytical",
    "empirical",
    "regional",
    "global",
    "urban",
    "marine",
    "thermal",
    "optical",
    "acoustic",
    "seismic",
    "genetic",
    "synthetic",
    "modular",
    "hybrid",
    "neural",
    "probabilistic",
    "sparse",
    "efficient",
    "interactive",
]

AREAS: list[str] = ["Theory", "Systems", "Dynamics", "Analysis", "Engineering", "Modeling", "Methods", "Science"]

# Body sentences of node texts: exactly two `%s` slots, each filled with one topic noun.
BODY_TEMPLATES: list[str] = [
    "We study %s in relation to %s.",
    "The role of %s in %s is examined.",
    "Results on %s suggest links to %s.",
    "This work connects %s with %s.",
    "A careful look at %s reveals new %s effects.",
    "Evidence from %s informs %s research.",
    "Further sections discuss %s and %s.",
    "Prior reports on %s often ignore %s.",
    "Observations of %s motivate fresh views on %s.",
    "Both %s and %s receive attention.",
    "Key questions about %s concern %s.",
    "Data on %s and %s are reported.",
]
BODY_MIN_WORDS = min(t.count(" ") + 1 for t in BODY_TEMPLATES)
BODY_MAX_WORDS = max(t.count(" ") + 1 for t in BODY_TEMPLATES)

# Paper titles: `{C}` is a coined name, `{M}` a modifier, `{A}`/`{B}` two different nouns (all title-cased).
TITLE_TEMPLATES: list[str] = [
    "{C}: {M} {A} for {B}",
    "{C}: {M} {A} and {B}",
    "{C}: On {M} {A} in {B}",
    "{C}: {A} Meets {M} {B}",
    "{C}: Rethinking {A} with {M} {B}",
    "{C}: Towards {M} {A} under {B}",
]

# Venue names: (pattern, kind); `{M}` a modifier and `{A}` a noun, title-cased.
VENUE_TEMPLATES: list[tuple[str, str]] = [
    ("Journal of {M} {A}", "journal"),
    ("Transactions on {M} {A}", "journal"),
    ("{M} {A} Letters", "journal"),
    ("International Conference on {M} {A}", "conference"),
    ("Symposium on {M} {A}", "conference"),
    ("Workshop on {M} {A}", "workshop"),
]

INSTITUTION_TEMPLATES: list[str] = [
    "University of {P}",
    "{P} Institute of Technology",
    "{P} Research Center",
    "{P} State University",
    "{P} College",
]
PLACE_ENDINGS: list[str] = ["ville", "burg", "ton", "ford", "heim", "ria", "stad", "port", "field"]

# Syllables are one onset (a consonant or a cluster) plus exactly one vowel, so a concatenation of syllables
# splits back uniquely at its vowels: different syllable sequences give different words.
ONSETS: list[str] = ["b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "br", "dr", "tr", "st"]
VOWELS: list[str] = ["a", "e", "i", "o", "u"]
FIRST_ENDINGS: list[str] = ["", "n", "l", "ra", "na", "lia", "ren", "sa"]
LAST_ENDINGS: list[str] = ["", "n", "r", "s", "l", "ski", "berg", "des"]
COINED_ENDINGS: list[str] = ["", "n", "x", "r", "s"]

COUNTRIES: list[str] = [
    "United States",
    "China",
    "Germany",
    "United Kingdom",
    "Japan",
    "France",
    "India",
    "Canada",
    "Italy",
    "South Korea",
    "Australia",
    "Spain",
    "Netherlands",
    "Brazil",
    "Switzerland",
    "Sweden",
    "Poland",
    "Israel",
    "Singapore",
    "Mexico",
]
LANGUAGES: list[str] = ["English", "Chinese", "German", "French", "Spanish", "Japanese", "Russian", "Portuguese"]
LANGUAGE_WEIGHTS: list[float] = [0.72, 0.09, 0.05, 0.04, 0.04, 0.03, 0.02, 0.01]

_SAFE = re.compile(r"[A-Za-z0-9 .,:;%{}()-]*")


def check_tables() -> None:
    """The invariants the generator relies on (JSON-safe strings, unique and disjoint word lists)."""
    tables: list[list[str]] = [
        NOUNS,
        MODIFIERS,
        AREAS,
        BODY_TEMPLATES,
        TITLE_TEMPLATES,
        [v for v, _ in VENUE_TEMPLATES],
        INSTITUTION_TEMPLATES,
        PLACE_ENDINGS,
        ONSETS,
        VOWELS,
        FIRST_ENDINGS,
        LAST_ENDINGS,
        COINED_ENDINGS,
        COUNTRIES,
        LANGUAGES,
    ]
    for table in tables:
        for s in table:
            if not _SAFE.fullmatch(s):
                raise AssertionError(f"unsafe table string {s!r}")
    if len(NOUNS) % THEME_SIZE or len(set(NOUNS)) != len(NOUNS):
        raise AssertionError("nouns must be unique and come in whole themes")
    if not all(n.isalpha() and n.islower() for n in NOUNS):
        raise AssertionError("nouns must be single lowercase words")
    filler = {w.strip(".,").lower() for t in BODY_TEMPLATES for w in t.split()}
    groups = [set(NOUNS), set(MODIFIERS), {a.lower() for a in AREAS}, filler]
    for i, a in enumerate(groups):
        for b in groups[i + 1 :]:
            if a & b:
                raise AssertionError(f"word tables overlap: {sorted(a & b)}")
    if len(LANGUAGE_WEIGHTS) != len(LANGUAGES):
        raise AssertionError("one weight per language")
