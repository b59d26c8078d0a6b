"""Which sense of a name the question means, said right after the name: "angle (*the competition sense*)",
"raven, *meaning 'prey on or hunt for'*", "chronic (*as in: being long-lasting …*)", "vulnerable (*"susceptible to
attack"*)", "constant *in the quantity sense*", "teach *in the sense of imparting knowledge*", "coffin *as a noun*", "easiness (*noun.feeling*)". A qualifier
is no part of what the question asks: it is cut from the question before the passes, and afterwards narrows the
name it follows to its nodes whose own words (document: type, name, text, attributes) share the most with it.
English only; nothing of any one SKB.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from skbqa.ingest.documents import document
from skbqa.query.encoder import Encoder
from skbqa.stages.parse.constants import Constant
from skbqa.stages.parse.question_text import QuestionText
from skbqa.stages.senses import MAX_NODES_SCORED, closest_senses, sense_words
from skbqa.stores.nodes import NodeTable

_QUOTE = r"['\"“”‘’]"
# Each: the qualifier's words in group "q". Tried in order; each match is cut from the question.
_PATTERNS = (
    re.compile(rf",?\s*\bmeaning\s+{_QUOTE}(?P<q>[^'\"“”‘’]+?)\.*{_QUOTE}", re.IGNORECASE),
    re.compile(r"\s*\(\s*as in:?\s*(?P<q>[^)]+?)\.*\s*\)", re.IGNORECASE),
    re.compile(rf"\s*\(\s*{_QUOTE}(?P<q>[^)]+?)\.*{_QUOTE}\s*\)"),
    re.compile(r"\s*\(\s*(?:the|in the)\s+(?P<q>[\w.-]+(?:\s+[\w.-]+)?)\s+sense\s*\)", re.IGNORECASE),
    re.compile(r"\s+in\s+the\s+(?P<q>[\w.-]+)\s+sense\b", re.IGNORECASE),
    # "teach *in the sense of imparting knowledge*": up to a clause's end (punctuation, "and", a relative pronoun)
    re.compile(
        r",?\s+in\s+the\s+sense\s+of\s+(?P<q>[\w'-]+(?:\s+(?!(?:and|or|that|which|who|whose)\b)[\w'-]+){0,5})",
        re.IGNORECASE,
    ),
    re.compile(r"\s+as\s+an?\s+(?P<q>noun|verb|adjective|adverb)\b", re.IGNORECASE),
    # "swim*, as in travelling through water*?": "as in" after a comma glosses the word before it, up to the
    # clause's end
    re.compile(r",\s*as\s+in:?\s+(?P<q>[a-z][^,;:?!()]*?)(?=\s*(?:[,;:?!]|[-–—]\s|$))", re.IGNORECASE),
    re.compile(r"\s*\(\s*(?P<q>[a-z]+\.[a-z]+)\s*\)"),  # a dotted category in parentheses ("noun.feeling")
)


# A name followed by words in parentheses that are no pattern above: "dry (*free from liquid or moisture*)", "stand
# (*be upright*)". Such words are a gloss only when the data says so (`cut_glosses`): parentheses also hold
# constraints ("(direct subtypes)", "(not individual people)").
_PARENTHESIS = re.compile(r"(?P<name>(?:[\w'-]+ ){0,2}[\w'-]+)\s*\(\s*(?P<q>[a-z][^()]*?)\s*\)")
# "Fencing, *the sword sport* - what …": a name, a comma, "the" and a few words up to the next punctuation or the
# sentence's full stop (its gloss; short, so a single shared word suffices: the construction itself says it is a
# gloss)
_APPOSITION = re.compile(
    r"(?P<name>(?:[\w'-]+ ){0,2}[\w'-]+),\s+the\s+(?P<q>[a-z][\w'-]*(?:\s+[a-z][\w'-]*){0,3})"
    r"(?=\s*(?:[,;:?!]|\.(?:\s|$)|[-–—]\s|$))"
)
GLOSS_SHARE = 0.5  # of a parenthesis's sense words one node of the name's document must share, and at least
MIN_GLOSS_WORDS = 2  # this many
# Or, in other words than the node's own ("stand (*be upright*)", "trading (*dealing in goods*)"), its meaning:
# embedding cosine of the parenthesis (less the name's words) to one of the name's documents. Glosses said in
# other words measure 0.35-0.55 with the default encoder, constraints ("(direct subtypes)") under 0.2.
GLOSS_MIN_COSINE = 0.33
MAX_GLOSSED_NODES = 24  # documents encoded per parenthesis: a name of more senses is judged by its first ones
# Words that make a parenthesis a constraint whatever it means ("(not individual people)", "(direct parts only)")
_CONSTRAINT_WORDS = frozenset(
    {"not", "no", "only", "except", "without", "excluding", "including", "direct", "directly", "immediate", "all",
     "any", "more", "less", "than", "ones", "one", "two", "three", "level", "levels", "step", "steps"}
)  # fmt: skip


# Said after the question, not after the name it glosses: "What types of hammers exist? *I mean the hand tool*",
# "what cocktails are there *(the mixed drink)*". Which name it glosses is read from the data (`narrow`). A closing
# parenthesis must be an article and a few plain words: "(direct subtypes)", "(the ones in Asia)" are constraints.
_AFTERTHOUGHTS = (
    re.compile(r"[\s,.;:?!-]*\bI\s+mean[,:]?\s+(?:the\s+|an?\s+)?(?P<q>[\w'-]+(?:\s+[\w'-]+){0,5})[\s.?!]*$"),
    re.compile(r"\s*\(\s*(?:the|an?)\s+(?P<q>[a-z][\w'-]*(?:\s+[a-z][\w'-]*){0,3})\s*\)[\s.?!]*$", re.IGNORECASE),
)
_NOT_GLOSS_WORDS = frozenset({"one", "ones", "thing", "things", "kind", "kinds", "type", "types", "others"})


@dataclass(frozen=True)
class Qualifier:
    after: int  # character offset in the cut question where the qualified name ends
    words: frozenset[str]
    floating: bool = False  # said after the question: glosses whichever name the data says (`narrow`)


def cut_qualifiers(question: str) -> tuple[str, list[Qualifier]]:
    """The question without its sense qualifiers, and the qualifiers (where each stood, what it says)."""
    found: list[Qualifier] = []
    for pattern in _PATTERNS:
        while (match := pattern.search(question)) is not None:
            said = match.group("q").strip()
            question = question[: match.start()] + question[match.end() :]
            found = [
                replace(q, after=q.after - (match.end() - match.start())) if q.after > match.start() else q
                for q in found
            ]
            found.append(Qualifier(match.start(), sense_words(said)))
    for pattern in _AFTERTHOUGHTS:
        match = pattern.search(question)
        said_words = match.group("q").lower().split() if match else []
        if match is None or match.start() == 0 or _NOT_GLOSS_WORDS & set(said_words):
            continue
        question = question[: match.start()] + ("?" if "?" in match.group(0) else "")
        found.append(Qualifier(len(question), sense_words(match.group("q")), floating=True))
    return question, sorted(found, key=lambda q: q.after)


Meaning = Callable[[str, np.ndarray], float]  # (phrase, positions) → the phrase's best cosine to their documents


def cut_glosses(
    question: str,
    qualifiers: list[Qualifier],
    positions: Callable[[str], np.ndarray],
    nodes: NodeTable,
    meaning: Meaning | None = None,
) -> tuple[str, list[Qualifier]]:
    """`cut_qualifiers` for a parenthesis of plain words, or an apposition ("coffee, *the beverage*,"), after a
    name of several nodes, when one of those nodes' documents shares most of its words: it says which node the
    name means ("dry (free from liquid or moisture)"). `positions`: the nodes a name names. With `meaning`, a
    parenthesis of two words or more after any name is also a gloss when it means one of the name's nodes in
    other words (`GLOSS_MIN_COSINE`) and says nothing a constraint says."""
    found = list(qualifiers)
    for pattern, least in ((_PARENTHESIS, MIN_GLOSS_WORDS), (_APPOSITION, 1)):
        at = 0
        while (match := pattern.search(question, at)) is not None:
            words = sense_words(match.group("q"))
            named, nodes_named = _name_before(match.group("name"), positions)
            glossed = len(words) >= least and _glosses(words, nodes_named, nodes, least)
            if not glossed and meaning is not None and pattern is _PARENTHESIS:
                glossed = _means(named, nodes_named, match.group("q"), meaning)
            if not glossed:
                at = match.start("q")
                continue
            end = match.end("name")
            # an apposition set off by two commas mid-clause goes with both ("does the dog, the domestic animal,
            # belong to"); a comma before "and"/"or" stays, it may join a list ("a chain, the shops, and its owner")
            closing = (
                re.match(r"\s*,(?!\s*(?:and|or|but)\b)", question[match.end() :])
                if pattern is _APPOSITION
                else None
            )
            stop = match.end() + (closing.end() if closing else 0)
            question = question[:end] + question[stop:]
            cut = stop - end
            found = [replace(q, after=q.after - cut) if q.after > end else q for q in found]
            found.append(Qualifier(end, words))
            at = end
    return question, sorted(found, key=lambda q: q.after)


def _name_before(name: str, positions: Callable[[str], np.ndarray]) -> tuple[list[str], np.ndarray]:
    """The longest name that ends right before a gloss (its words) and the nodes it names; nothing if none."""
    said = name.split()
    for k in range(len(said)):
        found = positions(" ".join(said[k:]))
        if found.size:
            return said[k:], found
    return [], np.zeros(0, np.int64)


def _glosses(words: frozenset[str], found: np.ndarray, nodes: NodeTable, least: int) -> bool:
    if found.size < 2:  # one node (or none): no sense to choose between
        return False
    needed = max(least, GLOSS_SHARE * len(words))
    return any(len(words & sense_words(document(nodes, int(p)))) >= needed for p in found[:MAX_NODES_SCORED])


def document_meaning(encoder: Encoder, nodes: NodeTable) -> Meaning:
    """`Meaning` by the question's encoder: the phrase and the nodes' documents in one call."""

    def best(phrase: str, positions: np.ndarray) -> float:
        vectors = encoder.encode([phrase, *(document(nodes, int(p)) for p in positions)])
        return float((vectors[1:] @ vectors[0]).max())

    return best


def _means(named: list[str], found: np.ndarray, said: str, meaning: Meaning) -> bool:
    words = said.lower().split()
    if not found.size or len(words) < 2 or _CONSTRAINT_WORDS & set(words) or any(c.isdigit() for c in said):
        return False
    own = {w.lower() for w in named}
    rest = " ".join(w for w in words if w not in own)
    return bool(rest) and meaning(rest, found[:MAX_GLOSSED_NODES]) >= GLOSS_MIN_COSINE


def narrow(
    text: QuestionText, constants: list[Constant], qualifiers: list[Qualifier], nodes: NodeTable
) -> tuple[list[Constant], frozenset[str]]:
    """Each constant a qualifier follows, kept to the nodes its words mean (`stages.senses`), and carrying them
    (step 4 narrows the candidates alike); and the words of an afterthought no constant took (they may gloss the
    answer's head noun: "what cocktails are there (the mixed drink)")."""
    said_of: dict[int, Qualifier] = {}
    for k, constant in enumerate(constants):
        end = text.tokens[constant.end - 1].end
        said = next((q for q in qualifiers if not q.floating and 0 <= q.after - end <= 1 and q.words), None)
        if said is not None:
            said_of[k] = said
    unattached: frozenset[str] = frozenset()
    for said in (q for q in qualifiers if q.floating and q.words):
        glossed = _glossed_by(constants, said.words, nodes, set(said_of))
        if glossed is not None:
            said_of[glossed] = said
        else:
            unattached |= said.words
    return [
        replace(
            c,
            positions=closest_senses(nodes, c.positions, said_of[k].words),
            sense=tuple(sorted(said_of[k].words)),
        )
        if k in said_of
        else c
        for k, c in enumerate(constants)
    ], unattached


def _glossed_by(constants: list[Constant], words: frozenset[str], nodes: NodeTable, taken: set[int]) -> int | None:
    """The constant of several nodes one of which shares the most of an afterthought's words (at least one); the
    last such constant on a tie, nearest to where the afterthought was said."""
    best, chosen = 0, None
    for k, constant in enumerate(constants):
        if k in taken or not 2 <= constant.positions.size <= MAX_NODES_SCORED:
            continue
        shared = max(len(words & sense_words(document(nodes, int(p)))) for p in constant.positions)
        if shared and shared >= best:
            best, chosen = shared, k
    return chosen
