"""Attribute constraints spotted in a question (encoder parser): values the SKB really has for the answer's type.

- A small-vocabulary attribute named in the question and followed by one of its values: "located on *chromosome
  17*" → chromosome = "17"; "with *gene type* ncRNA".
- A distinctive value on its own (not a number, at least MIN_BARE_VALUE_CHARS long or an upper-case acronym
  written as stored, of an attribute with few values): "written in *English*" → language = "English", "*OMIM*
  diseases" → source = "OMIM".
- A family of codes: "*TLR* genes" → symbol STARTS WITH "TLR" (`family_prefixes`).
- A numeric or date attribute named with a comparison and a number: "a *rating above 6.5*" → rating > 6.5,
  "*year* before 2010", "more than 10 *pages*".
Attribute names and values come from the `AttributeCatalog`; only the comparison words are English.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from skbqa.query.structured import AttributeConstraint, Operator
from skbqa.stages.english import is_english
from skbqa.stages.parse.abbreviations import abbreviates
from skbqa.stages.parse.boolean_values import BooleanSpotter
from skbqa.stages.parse.code_values import CodeValueSpotter
from skbqa.stages.parse.family_prefixes import FamilyPrefixSpotter
from skbqa.stages.parse.list_counts import OTHER_NAME_WORDS, counted_lists
from skbqa.stages.parse.question_text import QuestionText, is_discourse_word
from skbqa.stages.parse.spotted import SpottedConstraint
from skbqa.stages.parse.stated_affixes import AffixSpotter
from skbqa.stages.parse.type_mentions import plural
from skbqa.stages.parse.units import family_of, in_stated_unit, unit_label
from skbqa.stages.parse.url_hosts import UrlHostSpotter
from skbqa.stages.parse.written_numbers import count_before, number_at
from skbqa.stores.attributes.catalog import AttributeCatalog
from skbqa.stores.attributes.values import humanise, loose

MIN_BARE_VALUE_CHARS = 5
MIN_SPELT_ACRONYM_CHARS = 5
MAX_BARE_VOCABULARY = 100
MAX_VALUE_WORDS = 3
VALUE_WINDOW = 3  # words between an attribute's name and its value ("chromosome number 17" still reads)
_TEMPORAL = frozenset({"after", "before", "since", "until", "in"})
_NUMBER = re.compile(r"^[+-]?\d+(\.\d+)?$")
_GLUED = re.compile(r"^([a-z]{2,4})(\d+[a-z]?|[xy])$")  # "chr11", "chrX": letters, then a short value

_COMPARISON_WORDS: list[tuple[str, Operator]] = [
    ("above", ">"),
    ("over", ">"),
    ("greater than", ">"),
    ("more than", ">"),
    ("higher than", ">"),
    ("larger than", ">"),
    ("bigger than", ">"),
    ("exceeding", ">"),
    ("after", ">"),
    ("at least", ">="),
    ("no less than", ">="),
    ("since", ">="),
    ("below", "<"),
    ("under", "<"),
    ("less than", "<"),
    ("fewer than", "<"),
    ("lower than", "<"),
    ("smaller than", "<"),
    ("before", "<"),
    ("at most", "<="),
    ("no more than", "<="),
    ("until", "<="),
    ("of", "="),
    ("in", "="),
    ("equal to", "="),
    ("exactly", "="),
]
COMPARISONS: tuple[tuple[tuple[str, ...], Operator], ...] = tuple(
    (tuple(words.split()), op) for words, op in sorted(_COMPARISON_WORDS, key=lambda item: -len(item[0].split()))
)


COUNT_WORDS = frozenset({"count", "counts", "number", "num", "total", "n"})


def count_labels(label: tuple[str, ...], nouns: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """How a question names a count attribute by what it counts: `binary_count` / `num_binaries` / `n_binary` →
    "binaries" ("building fewer than 6 *binaries*") and "number of binaries"; with `nouns` (the plurals of the
    schema's type words), also as a modifier of one: "number of *binary packages*"."""
    if len(label) < 2:
        return []
    if label[-1] in COUNT_WORDS:
        counted = label[:-1]
    elif label[0] in COUNT_WORDS:
        counted = label[1:] if label[1] != "of" else label[2:]
    else:
        return []
    if not counted:
        return []
    many = (*counted[:-1], counted[-1] if counted[-1].endswith("s") else plural(counted[-1]))
    modified = [(*counted, noun) for noun in nouns if noun not in counted and noun not in many]
    # the singular after a count of one: "more than one *word*", "at least one *binary*"
    one = [counted] if counted != many else []
    return [*(form for phrase in [many, *modified] for form in (phrase, ("number", "of", *phrase))), *one]


def _range_labels(key: str, description: str, nouns: tuple[str, ...]) -> list[tuple[str, ...]]:
    label = tuple(humanise(key).split())
    unit = unit_label(label, description)  # with every unit of its kind ("kib": "mb", "gigabytes")
    labels = [
        label,
        *count_labels(label, nouns),
        *([unit] if unit else []),
        *((u,) for u in family_of(unit[0] if unit else None)),
    ]
    return sorted(labels, key=len, reverse=True)  # "number of binary packages" before "binary packages"


@dataclass(frozen=True)
class _Vocabulary:
    key: str
    label: tuple[str, ...]
    values: dict[str, str]  # loose spelling → stored spelling
    bare: bool  # small enough for values to be recognised without the attribute's name


class AttributeSpotter:
    def __init__(
        self, catalog: AttributeCatalog, symbol: str = "y", *, is_name: Callable[[str], bool] | None = None
    ) -> None:
        """`is_name`: whether a phrase is some node's name or alias (a family prefix never starts one)."""
        self._catalog = catalog
        self._symbol = symbol
        self._vocabularies: dict[str, list[_Vocabulary]] = {}  # per node type, prepared once
        # (key, a label, what to add to a count said with it): numeric and date attributes by their names
        self._ranges: dict[str, list[tuple[str, tuple[str, ...], int]]] = {}
        self._units: dict[str, dict[str, str]] = {}  # per type: the unit the description gives an attribute in
        self._year_key: dict[str, str | None] = {}  # the one year-valued (or date) attribute of a type, if unique
        self._codes = CodeValueSpotter(catalog, symbol)
        self._hosts = UrlHostSpotter(catalog, symbol)
        self._booleans = BooleanSpotter(catalog, symbol, is_name)
        self._affixes = AffixSpotter(catalog, symbol)
        self._families = FamilyPrefixSpotter(catalog, symbol, is_name)

    def prepare(self, node_type: str) -> None:
        """Build a type's vocabularies now (a few hundred ms for large list-valued columns) instead of on the
        first question about that type."""
        self._prepare(node_type)

    def _prepare(self, node_type: str) -> None:
        if node_type in self._vocabularies:
            return
        self._vocabularies[node_type] = [
            _Vocabulary(
                m.key,
                tuple(m.label.split()),
                {loose(v): v for v in m.values},
                len(m.values) <= MAX_BARE_VOCABULARY,
            )
            for m in self._catalog.value_mentions(node_type)
        ]
        schema = self._catalog.nodes.schema
        description = (
            schema.node_types[schema.node_code(node_type)].description if schema.has_node_type(node_type) else ""
        )
        nouns = tuple(plural(t.name.replace("_", " ").split()[-1]) for t in schema.node_types)
        ranges: list[tuple[str, tuple[str, ...], int]] = []
        descriptions = " ".join(t.description for t in schema.node_types)  # a list's gloss holds for every type
        for counted in counted_lists(self._catalog, node_type, descriptions):
            for noun in counted.nouns:  # "over 4 *lemmas*", "at least one *synonym*" (the name itself is none)
                offset = 1 if counted.holds_name and noun in OTHER_NAME_WORDS else 0
                ranges += [(counted.count_key, label, offset) for label in count_labels((noun, "count"), nouns)]
        ranges += [  # after what a list counts: "words with more than 2 *synonyms*" counts synonyms
            (c.key, label, 0)
            for c in self._catalog.columns(node_type)
            if c.kind in ("numeric", "date")
            for label in _range_labels(c.key, description, nouns)
        ]
        self._ranges[node_type] = sorted(ranges, key=lambda item: len(item[1]), reverse=True)
        units = {
            c.key: unit_label(tuple(humanise(c.key).split()), description)
            for c in self._catalog.columns(node_type)
        }
        self._units[node_type] = {key: unit[0] for key, unit in units.items() if unit}
        years = [
            c.key
            for c in self._catalog.columns(node_type)
            if c.kind == "date" or (c.numeric is not None and c.numeric.years_like)
        ]
        self._year_key[node_type] = years[0] if len(years) == 1 else None
        self._codes.columns(node_type)
        self._hosts.columns(node_type)
        self._booleans.columns(node_type)
        self._affixes.labels(node_type)
        self._families.columns(node_type)

    def __call__(self, text: QuestionText, node_type: str, *, bare: bool = True) -> list[AttributeConstraint]:
        """`bare`: whether a value written without its attribute's name counts ("written in *English*")."""
        self._prepare(node_type)
        found: list[SpottedConstraint] = []
        # before the vocabularies: "EC 2.7.10" is no stored "2.7.-.-", "metacpan.org" no stored address
        spans = [(m.constraint, m.start, m.end) for m in self._codes(text, node_type)]
        spans += [(m.constraint, m.start, m.end) for m in self._hosts(text, node_type)]
        spans += [(m.constraint, m.start, m.end) for m in self._booleans(text, node_type)]
        spans += [(m.constraint, m.start, m.end) for m in self._affixes(text, node_type)]
        for constraint, start, end in spans:
            found.append(SpottedConstraint(constraint, start, end))
            text.claim(start, end, "attribute")
        for vocabulary in self._vocabularies[node_type]:
            hit = self._labelled_value(text, vocabulary.label, vocabulary.values, vocabulary.key)
            hit = hit or self._glued_value(text, vocabulary.label, vocabulary.values, vocabulary.key)
            if hit is None and vocabulary.bare and bare:
                hit = self._bare_value(text, vocabulary.values, vocabulary.key)
            if hit is not None:
                found.append(hit)
                text.claim(hit.start, hit.end, "attribute")
        for family in self._families(text, node_type):  # "*TLR* genes", after the values ("*OMIM* diseases")
            found.append(SpottedConstraint(family.constraint, family.start, family.end))
            text.claim(family.start, family.end, "attribute")
        for key, label, offset in self._ranges[node_type]:
            if any(f.constraint.attribute == key for f in found):
                continue
            hit = self._comparison(text, label, key, offset)
            if hit is not None:
                hit = in_stated_unit(hit, text, self._units[node_type].get(key))
                found.append(hit)
                text.claim(hit.start, hit.end, "attribute")
        year_key = self._year_key[node_type]
        if year_key is not None and not any(f.constraint.attribute == year_key for f in found):
            hit = self._bare_year(text, year_key)
            if hit is not None:
                found.append(hit)
                text.claim(hit.start, hit.end, "attribute")
        return [f.constraint for f in found]

    def _bare_year(self, text: QuestionText, key: str) -> SpottedConstraint | None:
        """ "… published after 2009": a year with a temporal comparison refers to the type's only year/date."""
        words = [t.lower for t in text.tokens]
        for index in range(len(words)):
            hit = self._compare_at(text, words, index)
            if hit is None:
                continue
            op, number, end = hit
            temporal = words[index] in _TEMPORAL
            if temporal and isinstance(number, int) and 1000 <= number <= 2999:
                return SpottedConstraint(AttributeConstraint(self._symbol, key, op, number), index, end)
        return None

    def _labels(self, text: QuestionText, label: tuple[str, ...]) -> list[int]:
        """Start indexes of the attribute's name (or its plural) in free tokens."""
        words = [t.lower for t in text.tokens]
        forms = {label, (*label[:-1], label[-1] + "s")}
        return [
            i
            for i in range(len(words))
            if any(tuple(words[i : i + len(f)]) == f and text.free(i, i + len(f)) for f in forms)
        ]

    def _labelled_value(
        self, text: QuestionText, label: tuple[str, ...], values: dict[str, str], key: str
    ) -> SpottedConstraint | None:
        for start in self._labels(text, label):
            for n in range(min(MAX_VALUE_WORDS, start), 0, -1):  # the value right before: "*X*-chromosome genes"
                if text.free(start - n, start) and not text.boundary_before(start):
                    value = values.get(loose(text.span_text(start - n, start)))
                    if value is not None:
                        return SpottedConstraint(
                            AttributeConstraint(self._symbol, key, "=", value), start - n, start + len(label)
                        )
            after = start + len(label)
            for offset in range(VALUE_WINDOW + 1):
                for n in range(MAX_VALUE_WORDS, 0, -1):
                    lo, hi = after + offset, after + offset + n
                    if hi > len(text) or not text.free(lo, hi):
                        continue
                    value = values.get(loose(text.span_text(lo, hi)))
                    if value is not None:
                        return SpottedConstraint(AttributeConstraint(self._symbol, key, "=", value), start, hi)
        return None

    def _glued_value(
        self, text: QuestionText, label: tuple[str, ...], values: dict[str, str], key: str
    ) -> SpottedConstraint | None:
        """ "*chr11* genes": a short form of the attribute's one-word name glued to one of its values (the short
        form starts the name and keeps its letters in order)."""
        if len(label) != 1:
            return None
        name = label[0]
        for index, token in enumerate(text.tokens):
            match = _GLUED.match(token.lower)
            if match is None or not text.free(index, index + 1):
                continue
            short, rest = match.groups()
            value = values.get(loose(rest))
            if value is not None and len(short) < len(name) and abbreviates(short, name):
                return SpottedConstraint(AttributeConstraint(self._symbol, key, "=", value), index, index + 1)
        return None

    def _bare_value(self, text: QuestionText, values: dict[str, str], key: str) -> SpottedConstraint | None:
        for start in range(len(text)):
            for n in range(MAX_VALUE_WORDS, 0, -1):
                end = start + n
                if end > len(text) or not text.free(start, end):
                    continue
                surface = text.span_text(start, end)
                value = values.get(loose(surface))
                if (
                    value is not None
                    and (len(surface) >= MIN_BARE_VALUE_CHARS or _acronym_as_stored(surface, value))
                    and not _NUMBER.match(surface)
                    and not (n == 1 and is_discourse_word(text.tokens[start].lower))  # "*Other* than X, …"
                    and not _part_of_an_identifier(text, start, end)
                ):
                    return SpottedConstraint(AttributeConstraint(self._symbol, key, "=", value), start, end)
                if n == 1 and text.free(start, end) and (value := _acronym_spelt_out(surface, values)) is not None:
                    return SpottedConstraint(AttributeConstraint(self._symbol, key, "=", value), start, end)
        return None

    def _comparison(
        self, text: QuestionText, label: tuple[str, ...], key: str, offset: int = 0
    ) -> SpottedConstraint | None:
        hit = self._compared(text, label, key)
        if hit is None or not offset or not isinstance(value := hit.constraint.value, (int, float)):
            return hit
        shifted = AttributeConstraint(self._symbol, key, hit.constraint.op, value + offset)
        return SpottedConstraint(shifted, hit.start, hit.end)

    def _compared(self, text: QuestionText, label: tuple[str, ...], key: str) -> SpottedConstraint | None:
        words = [t.lower for t in text.tokens]
        for start in self._labels(text, label):
            # "<name> above 6.5" / "<name> of 2015" / "<name> 17" (a number right after the name: equality)
            after = start + len(label)
            if after < len(words) and text.free(after, after + 1):
                direct = number_at(text, after)
                if direct is not None:
                    value, stop = direct
                    return SpottedConstraint(AttributeConstraint(self._symbol, key, "=", value), start, stop)
            for offset in range(VALUE_WINDOW):
                hit = self._compare_at(text, words, after + offset)
                if hit is not None:
                    op, number, end = hit
                    return SpottedConstraint(AttributeConstraint(self._symbol, key, op, number), start, end)
            # "more than 10 <name>"
            for begin in range(max(0, start - 4), start):
                hit = self._compare_at(text, words, begin)
                if hit is not None and hit[2] == start:
                    op, number, _ = hit
                    return SpottedConstraint(
                        AttributeConstraint(self._symbol, key, op, number), begin, start + len(label)
                    )
            # "a single <name>", "two <name>", "a nonzero <name>"
            if (bare := count_before(text, start)) is not None:
                bare_op, count, begin = bare
                return SpottedConstraint(
                    AttributeConstraint(self._symbol, key, bare_op, count), begin, start + len(label)
                )
        return None

    def _compare_at(
        self, text: QuestionText, words: list[str], index: int
    ) -> tuple[Operator, float | int, int] | None:
        for phrase, op in COMPARISONS:
            end = index + len(phrase)
            if tuple(words[index:end]) == phrase and end < len(words) and text.free(index, end + 1):
                number = number_at(text, end)
                if number is not None:
                    value, stop = number
                    return op, value, stop
        return None


def _acronym_spelt_out(surface: str, values: dict[str, str]) -> str | None:
    """ "*Orphanet* entries" → source = "ORPHA": a capitalised word English does not know that starts with a stored
    upper-case acronym of five letters or more, and says more."""
    low = surface.lower()
    if not (surface[:1].isupper() and surface.isalpha() and not is_english(low)):
        return None
    found = [
        v
        for v in values.values()
        if len(v) >= MIN_SPELT_ACRONYM_CHARS
        and v.isupper()
        and v.isalpha()
        and low.startswith(v.lower())
        and low != v.lower()
    ]
    return found[0] if len(found) == 1 else None


def _part_of_an_identifier(text: QuestionText, start: int, end: int) -> bool:
    """ "*hardware*::power:acpi", "works-with::audio": glued by a colon, slash or dot to the tokens around it, the
    words are a piece of one name or code, not a value of their own."""
    glue = (text.gap_before(start) if start > 0 else "", text.gap_before(end) if end < len(text) else "")
    return any(g and not g.isspace() and any(c in g for c in ":/.") for g in glue)


def _acronym_as_stored(surface: str, value: str) -> bool:
    """A short value that is an upper-case acronym, written exactly so ("OMIM"): no English word in disguise."""
    return surface == value and len(surface) >= 3 and surface.isupper() and surface.isalpha()
