"""A name right before the answer's head class: "*Italian* cities", "*pasta* dishes", "*Greek* islands". The name
sits inside the answer's noun phrase, so no words of the question say how it relates to the answer; the graph
says it, in one of three ways:
- the two words name a class of their own ("star signs", "ballroom dances"): that class;
- the name is itself one of the class's kinds or instances ("pasta" is a kind of "dish"): the class is the name, in
  the sense the head noun gives it, and the answers are its kinds or instances (kinds of the pasta dish);
- else the answers are the class's members that the name's nodes reach in one or two steps over any edges, either
  way: "*Italian* cities" are cities linked to Italy, which the adjective "Italian" is linked to.
With neither in the graph, the name is only words about the answers (free text for ranking).
Read from the graph and English word order, nothing of one SKB.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from skbqa.query.structured import StructuredQuery, Triplet
from skbqa.stages.parse.question_text import QuestionText
from skbqa.stores.index import IndexStores
from skbqa.stores.lexicon import NameLexicon

CONSTANT_CLAIM = "constant"
MAX_CLASS_SENSES = 8  # of the class noun's nodes, how many lend their other names to a compound


def premodifier(parsed: StructuredQuery, text: QuestionText, head_start: int) -> tuple[str, int] | None:
    """The constant symbol named by the words right before the head noun ("*Italian* cities"), if any, and the
    token where those words start."""
    end = head_start
    start = end
    while start > 0 and text.claimed[start - 1] == CONSTANT_CLAIM:
        start -= 1
    if start == end:
        return None
    surface = text.text[text.tokens[start].start : text.tokens[end - 1].end].lower()
    return next(
        (
            (name, start)
            for name, symbol in parsed.symbols.items()
            if symbol.is_constant and name != parsed.target and surface in (n.lower() for n in symbol.names)
        ),
        None,
    )


def read_modifier(
    parsed: StructuredQuery,
    modifier: str,
    class_symbol: str,
    class_nodes: np.ndarray,
    lexicon: NameLexicon,
    stores: IndexStores,
    warnings: list[str],
) -> bool:
    """Rewrite how the modifier relates to the answer from what the graph links (see the module); returns whether
    the modifier stays a constant (False: the caller keeps its words as text)."""
    symbol = parsed.symbols[modifier]
    named = lexicon.positions(symbol.names[0], original=symbol.names[0])
    if not named.size:
        return True
    graph, types = stores.graph, stores.nodes.types
    answer_type = stores.nodes.schema.node_code(parsed.target_type or "")
    members = graph.neighbours(class_nodes, None, "in")
    members = members[types[members] == answer_type]
    own = [t for t in parsed.triplets if modifier not in (t.head, t.tail)]
    class_words = parsed.symbols[class_symbol].names[0]
    compound = _compound_class(symbol.names[0], class_words, class_nodes, lexicon, stores, answer_type)
    if compound is not None:
        # "star signs", "ballroom dances": the two words name a class of their own
        parsed.triplets[:] = own
        del parsed.symbols[modifier]
        parsed.symbols[class_symbol] = replace(parsed.symbols[class_symbol], names=(compound,), sense=())
        warnings.append(f"the answer is one of the kinds or instances of {compound!r}")
        return True
    if np.intersect1d(named, members).size:
        # "pasta dishes": the pasta that is a dish; its kinds answer
        parsed.triplets[:] = [t for t in own if class_symbol not in (t.head, t.tail)]
        del parsed.symbols[class_symbol]
        parsed.symbols[modifier] = replace(
            symbol, type=parsed.target_type, sense=tuple(sorted({*symbol.sense, *class_words.split()}))
        )
        parsed.triplets.append(Triplet(parsed.target, None, modifier))
        warnings.append(f"the answer is one of the kinds or instances of {symbol.names[0]!r}, a {class_words}")
        return True
    near = graph.neighbours(named, None, "both")
    one_step = np.intersect1d(near, class_nodes).size > 0  # through the class itself every member is 2 steps away
    reach = np.union1d(named, near) if not one_step else named
    if not np.intersect1d(graph.neighbours(members, None, "both"), reach).size:
        parsed.triplets[:] = own
        del parsed.symbols[modifier]
        warnings.append(f"{symbol.names[0]!r} before the class {class_words!r} links to none of it: read as text")
        return False
    parsed.triplets[:] = own
    parsed.symbols[modifier] = replace(symbol, type=None)
    parsed.triplets.append(Triplet(parsed.target, None, modifier, "undirected", 1, 1 if one_step else 2))
    warnings.append(f"{symbol.names[0]!r} qualifies the class {class_words!r}: its members that it links to")
    return True


def _compound_class(
    modifier: str,
    class_words: str,
    class_nodes: np.ndarray,
    lexicon: NameLexicon,
    stores: IndexStores,
    answer_type: int,
) -> str | None:
    """The name of a class with members that the modifier and the class noun, or another name of the class's nodes,
    make: "star signs"; "Egyptian gods" where the gods' node is also called "deity" and "Egyptian deity" is a class."""
    nodes = stores.nodes
    others = (
        name for position in class_nodes[:MAX_CLASS_SENSES] for name in lexicon.names_of(nodes, int(position))
    )
    for words in dict.fromkeys([class_words, *(name for name in others if name.lower() != class_words.lower())]):
        compound = f"{modifier} {words}"
        joined = lexicon.positions(compound, original=compound)
        joined = joined[nodes.types[joined] == answer_type]
        if joined.size and int(stores.graph.degree(joined, None, "in").sum()):
            return compound
    return None
