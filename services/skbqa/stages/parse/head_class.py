"""The answer's head noun as a class: "which *volcanoes* are in Japan", "*breads* made with yeast". Where the head
noun is no word of the schema for a type but the name of nodes of the answer's type (in a dictionary-like SKB, the
node "volcano" is a concept whose kinds and instances are linked to it), the answer is one of those kinds or
instances: a constraint (answer)-[any edge]->(the named node). A word the type descriptions call the type's nodes
("word", "term", "concept") stays a word for the type. Read from the data and the schema, nothing of one SKB.
"""

from __future__ import annotations

import re

from skbqa.query.structured import StructuredQuery, Symbol, Triplet
from skbqa.stages.parse.question_text import QuestionText
from skbqa.stores.index import IndexStores
from skbqa.stores.lexicon import NameLexicon

TARGET_CLAIM = "target"


def head_words(text: QuestionText) -> list[str]:
    """The words of the last run of tokens claimed as the answer's head noun (in their order)."""
    runs: list[list[int]] = []
    for i, claim in enumerate(text.claimed):
        if claim != TARGET_CLAIM:
            continue
        if runs and runs[-1][-1] == i - 1:
            runs[-1].append(i)
        else:
            runs.append([i])
    return [text.tokens[i].lower for i in runs[-1]] if runs else []


def add_head_class(
    parsed: StructuredQuery,
    text: QuestionText,
    called: set[str],
    lexicon: NameLexicon,
    stores: IndexStores,
    warnings: list[str],
) -> None:
    """Add the class constraint when the head noun names nodes of the answer's type that other nodes of that type
    link to (and say so in `warnings`)."""
    words = head_words(text)
    if not words or parsed.target_type is None or any(w in called for w in words):
        return
    from lemminflect import getAllLemmas

    singular = next(iter(getAllLemmas(words[-1]).get("NOUN", ())), words[-1]).lower()
    name = " ".join([*words[:-1], singular])
    described = stores.nodes.schema.node_types[stores.nodes.schema.node_code(parsed.target_type)].description
    if re.search(rf"\b{re.escape(singular)}", described.lower()):
        return  # "noun *senses*" where the type is "a noun sense (synset)": the type's own word
    nodes, graph = stores.nodes, stores.graph
    found = lexicon.positions(name, original=name)
    found = found[nodes.types[found] == nodes.schema.node_code(parsed.target_type)]
    edges = [
        e.name
        for e in nodes.schema.edge_types
        if e.source == parsed.target_type and e.target == parsed.target_type
    ]
    if not found.size or not any(int(graph.degree(found, edge, "in").sum()) for edge in set(edges)):
        return  # no kinds or instances of it in the graph: the word only says the type
    symbol = f"c{sum(1 for s in parsed.symbols.values() if s.is_constant) + 1}"
    while symbol in parsed.symbols:
        symbol += "_"
    parsed.symbols[symbol] = Symbol(symbol, parsed.target_type, (name,))
    parsed.triplets.append(Triplet(parsed.target, None, symbol))
    warnings.append(f"the answer is one of the kinds or instances of {name!r}, its head noun")
