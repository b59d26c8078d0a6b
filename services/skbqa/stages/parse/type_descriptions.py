"""The nouns a schema's type descriptions use, per type: a curator who writes "a source package (also called a
source, upstream project or codebase)" or "a phenotypic abnormality, mode of inheritance …" names what users call
that type. Read by the head-noun synonyms (`type_synonyms`) and by the type words that introduce an unnamed node
("… maintain *a source* that X is built from", `type_mentions`).
"""

from __future__ import annotations

import re

from skbqa.skb.schema import Schema
from skbqa.stages.parse.question_text import FUNCTION_WORDS
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
    descriptions use ("term", "node" say nothing). Identifiers quoted as examples ("such as mail-transport-agent",
    "role::program") are not words a user calls a type by, so compound tokens are skipped."""
    per_type = []
    for node_type in schema.node_types:
        lemmas: set[str] = set()
        for token in _TOKEN.findall(node_type.description.lower()):
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
