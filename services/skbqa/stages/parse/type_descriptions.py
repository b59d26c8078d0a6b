"""The nouns a schema's type descriptions use, per type: a curator who writes "a source package (also called a
source, upstream project or codebase)" or "a phenotypic abnormality, mode of inheritance …" names what users call
that type. Read by the head-noun synonyms (`type_synonyms`) and by the type words that introduce an unnamed node
("… maintain *a source* that X is built from", `type_mentions`).
"""

from __future__ import annotations

import re

from skbqa.skb.schema import Schema
from skbqa.stages.parse.question_text import FUNCTION_WORDS
from skbqa.stages.parse.schema_examples import without_examples
from skbqa.stages.parse.type_mentions import is_unknown_word, noun_forms, noun_lemma, unknown_word_lemma

MIN_NOUN_CHARS = 3  # "I'm looking for …": a letter or a contraction's tail is no noun
GENERIC_NOUNS = frozenset(
    {"entity", "entities", "thing", "things", "item", "items", "one", "ones", "entry", "entries", "node", "nodes",
     "result", "results", "answer", "answers", "record", "records", "object", "objects", "kind", "kinds", "type",
     "types", "option", "options", "idea", "ideas", "more", "most", "less", "least", "many", "few", "several",
     "other", "others", "all", "some", "any", "each", "every", "both", "none", "number", "list", "lot", "lots"}
)  # fmt: skip
_TOKEN = re.compile(r"[a-z][a-z0-9:_/.-]*[a-z0-9]|[a-z]")


def description_nouns(schema: Schema) -> dict[str, set[str]]:
    """The types whose descriptions use each noun, in every inflection, for nouns that some but not all
    descriptions use ("term", "node" say nothing). Examples of the type's nodes ("such as *dog* / domestic dog")
    are not words for the type, so they are left out; identifiers quoted elsewhere ("role::program") are not
    words a user calls a type by, so compound tokens are skipped."""
    per_type = []
    for node_type in schema.node_types:
        lemmas: set[str] = set()
        for token in _TOKEN.findall(without_examples(node_type.description).lower()):
            if any(c in token for c in "-:_/.") or token in FUNCTION_WORDS or len(token) < MIN_NOUN_CHARS:
                continue
            lemma = noun_lemma(token) or unknown_word_lemma(token) or (token if is_unknown_word(token) else None)
            if lemma is None or lemma in GENERIC_NOUNS:  # "one *or more* …" names no type
                continue
            # Every form of the noun: "a person" in a description is what "which *people* …" asks for.
            lemmas.update(noun_forms(lemma))
        per_type.append(lemmas)
    by_word: dict[str, set[str]] = {}
    for node_type, lemmas in zip(schema.node_types, per_type, strict=True):
        for lemma in lemmas:
            by_word.setdefault(lemma, set()).add(node_type.name)
    return {lemma: types for lemma, types in by_word.items() if len(types) < len(per_type)}


# Where a description's opening phrase ends: "A binary package (a .deb …", "Gene Ontology term from …", "Human gene
# from NCBI …". What comes before is the curator's own name for the type.
_OPENING_END = re.compile(r"[(,:;.]|\s(?:from|of|in|that|which|with|as|for|by|is|are)\s")


def description_heads(schema: Schema) -> dict[str, set[str]]:
    """The types whose description opens with each noun ("A *binary* package …", "An archive *section* …"), in
    every inflection: of several descriptions that use a noun, the one that names its type with it."""
    by_word: dict[str, set[str]] = {}
    for node_type in schema.node_types:
        description = node_type.description.lower()
        match = _OPENING_END.search(description)
        opening = description[: match.start()] if match else description
        for token in _TOKEN.findall(opening):
            if any(c in token for c in "-:_/.") or token in FUNCTION_WORDS or len(token) < MIN_NOUN_CHARS:
                continue
            lemma = noun_lemma(token) or unknown_word_lemma(token) or (token if is_unknown_word(token) else None)
            if lemma is None or lemma in GENERIC_NOUNS:
                continue
            for form in noun_forms(lemma):
                by_word.setdefault(form, set()).add(node_type.name)
    return by_word


# Nouns for someone who acts, in English: "who …" asks for the type whose description calls its nodes so.
AGENT_NOUNS = frozenset(
    {"person", "people", "individual", "team", "developer", "author", "maintainer", "packager", "organization",
     "organisation", "company", "contributor", "researcher", "user", "member", "editor", "creator", "owner",
     "performer", "artist", "writer", "publisher", "employee", "staff", "investigator"}
)  # fmt: skip


def agent_types(schema: Schema) -> set[str]:
    """The types whose name or description's own naming of them (its opening phrase, with the parenthesis right
    after it: "A maintainer (also called a team, developer …)") calls their nodes persons, teams or companies; not
    a type whose description only mentions one further on ("… the domain of its maintainer's e-mail address")."""
    found: set[str] = set()
    for node_type in schema.node_types:
        description = node_type.description.lower()
        match = _OPENING_END.search(description)
        end = match.start() if match else len(description)
        if match and description[end] == "(":
            end = description.find(")", end) + 1 or len(description)
        words = _TOKEN.findall(f"{node_type.name.replace('_', ' ')} {description[:end]}")
        if any((noun_lemma(w) or w) in AGENT_NOUNS for w in words):
            found.add(node_type.name)
    return found


# Nouns for a place, in English: "where …" asks for the type whose description calls its nodes so.
PLACE_NOUNS = frozenset(
    {"location", "place", "site", "compartment", "locale", "area", "region", "town", "city", "country", "village",
     "venue", "address"}
)  # fmt: skip


def place_types(schema: Schema) -> set[str]:
    """The types whose description calls their nodes places ("a location or complex in or around a cell", "also
    called a category or area"): the noun with an article at most three words before it, so that a description
    listing attributes ("… gene type and location") names none."""
    found: set[str] = set()
    for node_type in schema.node_types:
        words = _TOKEN.findall(node_type.description.lower())
        for k, word in enumerate(words):
            if (noun_lemma(word) or word) in PLACE_NOUNS and {"a", "an"} & set(words[max(0, k - 3) : k]):
                found.add(node_type.name)
    return found


# "(… *also called* a noun, word, term, concept, thing or kind)": where a curator lists what users call a type's nodes
_CALLED = re.compile(r"\b(?:also called|also known as|a\.k\.a\.|aka)\b(?P<list>[^):;]*)")


def called_nouns(schema: Schema) -> set[str]:
    """Every form of the nouns a description says a type's nodes are called ("also called a program, library …"):
    words for what is asked about, whatever node may also bear them as a name."""
    found: set[str] = set()
    for node_type in schema.node_types:
        for match in _CALLED.finditer(node_type.description.lower()):
            for token in _TOKEN.findall(match.group("list")):
                lemma = noun_lemma(token) or unknown_word_lemma(token)
                if lemma is not None and token not in FUNCTION_WORDS:
                    found.update(noun_forms(lemma))
    return found
