"""The answer's head noun as a class: "which *volcanoes* are in Japan", "*breads* made with yeast". Where the head
noun is no word of the schema for a type but the name of nodes of the answer's type (in a dictionary-like SKB, the
node "volcano" is a concept whose kinds and instances are linked to it), the answer is one of those kinds or
instances: a constraint (answer)-[any edge]->(the named node). A word the type descriptions call the type's nodes
("word", "term", "concept") stays a word for the type. Read from the data and the schema, nothing of one SKB.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import numpy as np

from skbqa.query.structured import StructuredQuery, Symbol, Triplet
from skbqa.skb.schema import EdgeType
from skbqa.stages.parse.class_modifiers import premodifier, read_modifier
from skbqa.stages.parse.constants import Constant
from skbqa.stages.parse.question_text import QuestionText
from skbqa.stages.parse.relation_labels import EDGE_NAME
from skbqa.stages.parse.relations import stems
from skbqa.stages.parse.type_mentions import TypeVocabulary, noun_lemma
from skbqa.stages.senses import closest_senses
from skbqa.stores.index import IndexStores
from skbqa.stores.lexicon import NameLexicon

TARGET_CLAIM = "target"
MIN_ROOT_CHARS = 6
MAX_ENDING_CHARS = 2
MAX_NODES_LINKED = 64  # of a name's nodes of one type, how many are checked for the edge a head noun says


def head_runs(text: QuestionText) -> list[list[int]]:
    """The runs of consecutive tokens claimed as the answer's head noun."""
    return [list(range(start, end)) for start, end in text.claimed_runs(TARGET_CLAIM)]


def head_words(text: QuestionText) -> list[str]:
    """The words of the last run of tokens claimed as the answer's head noun (in their order)."""
    runs = head_runs(text)
    return [text.tokens[i].lower for i in runs[-1]] if runs else []


def relation_nouns(stores: IndexStores) -> tuple[dict[EdgeType, frozenset[str]], frozenset[str]]:
    """Each edge type's words, from its name and description with the examples in parentheses
    left out ("part of": "a component of the whole (wheel -> car)" gives "component", not "wheel"); and the words
    the node types' names and descriptions use, which stay words for a type ("the verb *sense* is grouped with …"
    where a verb type is "a verb sense")."""
    schema = stores.nodes.schema
    edges = {
        e: frozenset(
            re.findall(r"[a-z]+", re.sub(r"\([^)]*\)", " ", f"{e.name.replace('_', ' ')} {e.description}".lower()))
        )
        for e in schema.edge_types
    }
    types = " ".join(f"{t.name.replace('_', ' ')} {t.description}" for t in schema.node_types)
    return edges, frozenset(re.findall(r"[a-z]+", types.lower()))


def type_name_words(stores: IndexStores) -> frozenset[str]:
    return frozenset(w for t in stores.nodes.schema.node_types for w in re.findall(r"[a-z]+", t.name.lower()))


def _says(noun: str, words: frozenset[str] | set[str]) -> bool:
    """Whether the noun is one of the words, or the same word but for a short ending ("meronyms" in "member
    meronymy"); not merely a shared start ("species", "specific")."""
    return noun in words or any(
        (common := _shared_start(noun, w)) >= MIN_ROOT_CHARS
        and common >= max(len(noun), len(w)) - MAX_ENDING_CHARS
        for w in words
    )


def _shared_start(a: str, b: str) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))


def claim_relation_head(
    text: QuestionText,
    stores: IndexStores,
    warnings: list[str],
    typed_names: Callable[[Sequence[str]], list[str]],
) -> str | None:
    """ "which *components* make up a piano" where part_of is "a component of the whole": a head noun that an edge's
    gloss uses says the answer's relation, not a class; its words join the relation's clause (claimed as an edge
    name's words) and `warnings` says so. Returns the answer's type when every edge that gloss belongs to joins
    nodes of one type (part_of: artifact to artifact), which outweighs a synonym's guess; when each of those edges
    joins two nodes of one type but of several types in all ("*antonyms* of the verb stand": noun to noun, verb to
    verb …), the first of them `typed_names` (the types the question's names are of, given those edges) lists; else
    None."""
    runs = head_runs(text)
    if not runs:
        return None
    last = text.tokens[runs[-1][-1]].lower
    singular = noun_lemma(last) or last
    edge_words, type_words = relation_nouns(stores)
    saying = [edge for edge, words in edge_words.items() if _says(singular, words)]
    # a word of an edge's own name ("*parts*": part_of) says the relation though a type's description uses it in
    # passing ("one *part* of speech"); a word of a type's name never does
    named = [edge for edge in saying if _says(singular, frozenset(edge.name.lower().split("_")))]
    if named and not _says(singular, type_name_words(stores)):
        saying = named
    elif not saying or _says(singular, type_words):
        return None
    first = runs[-1][0]
    type_stems = set().union(*(stems(t.name.replace("_", " ")) for t in stores.nodes.schema.node_types))
    if first > 0 and stems(text.tokens[first - 1].lower) & type_stems:
        return None  # "*phenotypic* features": the type's own word qualifies it, the noun says the type
    text.claim(runs[-1][0], runs[-1][-1] + 1, EDGE_NAME)
    warnings.append("the answer's head noun says its relation")
    ends = {end for edge in saying for end in (edge.source, edge.target)}
    if len(ends) > 1 and all(edge.source == edge.target for edge in saying):
        # "antonyms of early": of the types its nodes are of (adjective, adverb), the one whose nodes have the edge
        ends = set([t for t in typed_names(sorted({edge.name for edge in saying})) if t in ends][:1])
    return ends.pop() if len(ends) == 1 else None


def add_head_class(
    parsed: StructuredQuery,
    text: QuestionText,
    called: set[str],
    lexicon: NameLexicon,
    stores: IndexStores,
    warnings: list[str],
    sense: frozenset[str] = frozenset(),
) -> None:
    """Add the class constraint when the head noun names nodes of the answer's type that other nodes of that type
    link to (and say so in `warnings`); `sense`: words said after the question that may tell which of the nodes
    bearing the noun is meant."""
    words = head_words(text)
    if not words or parsed.target_type is None or any(w in called for w in words):
        return
    known = noun_lemma(words[-1])
    singular = known or words[-1]
    # (a singular English knows ending in "s" stays: "genus" is no plural of "genu")
    if known is None and singular.endswith("s") and lexicon.positions(singular[:-1]).size:
        singular = singular[:-1]  # "warships": a plural English does not know, of a name
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
    meant, said = closest_senses(nodes, found, sense), tuple[str, ...]()
    if meant.size < found.size:
        found, said = meant, tuple(sorted(sense))
        warnings.append(f"the words said after the question tell which {name!r} is meant")
    parsed.symbols[symbol] = Symbol(symbol, parsed.target_type, (name,), sense=said)
    parsed.triplets.append(Triplet(parsed.target, None, symbol))
    warnings.append(f"the answer is one of the kinds or instances of {name!r}, its head noun")
    head_start = head_runs(text)[-1][0]
    modifier = premodifier(parsed, text, head_start)
    if modifier is not None and not read_modifier(parsed, modifier[0], symbol, found, lexicon, stores, warnings):
        text.release(modifier[1], head_start)  # its words stay for ranking


def names_types(
    text: QuestionText,
    constants: Sequence[Constant],
    types: TypeVocabulary,
    stores: IndexStores,
    edges: Sequence[str] = (),
) -> list[str]:
    """The types the question's names are of: the one a type word right before a name says ("the *verb* stand"),
    else every type of its nodes; those with more nodes that have one of the `edges` first, then in the order of
    the names' nodes."""
    node_types = stores.nodes.schema.node_types
    linked: dict[str, int] = {}
    for constant in constants:
        codes = stores.nodes.types[constant.positions]
        own = {node_types[int(c)].name for c in np.unique(codes)}
        typed = types.type_at(text, constant.start - 1) if constant.start > 0 else None
        for code in dict.fromkeys(int(c) for c in codes):
            name = node_types[code].name
            if typed in own and name != typed:
                continue
            nodes = constant.positions[codes == code][:MAX_NODES_LINKED]
            having = sum(
                int(np.count_nonzero(stores.graph.degree(nodes, edge, direction)))
                for edge in edges
                for direction in ("out", "in")
            )
            linked[name] = linked.get(name, 0) + having
    return sorted(linked, key=lambda name: -linked[name])
