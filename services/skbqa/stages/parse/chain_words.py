"""The English of chains through an unnamed node, for `chains` and the parser: which words name the broader end of
a relation ("parents of", "containing"), which introduce an unnamed narrower node ("a subtype of", "a child term
of"), which say two nodes share a third ("share a disease with"), and which phrases of a clause the readings score.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from skbqa.stages.parse.question_text import FUNCTION_WORDS, QuestionText, is_discourse_word
from skbqa.stages.parse.type_mentions import noun_lemma, unknown_word_lemma

# Words for the broader end of a hierarchy in a noun phrase: "the *parents* of X", "the *broader* terms of X".
BROADER_NOUNS = frozenset(
    {"parent", "parents", "grandparent", "grandparents", "superclass", "superclasses", "supertype", "supertypes",
     "ancestor", "ancestors", "hypernym", "hypernyms", "superordinate", "superordinates", "holonym", "holonyms",
     "broader", "wider"}
)  # fmt: skip
# The broader or containing end of a relation, in English: "parents of X", "processes containing X".
INVERSE_WORDS = BROADER_NOUNS | frozenset(
    {"general", "generic", "above", "containing", "contains", "contain", "include", "includes",
     "including", "comprising", "comprises", "comprise", "encompassing", "encompasses", "whole", "wholes", "consist",
     "consists", "consisting", "composed"}
)  # fmt: skip
# Of those, the verbs whose subject is the whole: as the constant's own verb ("what does X *consist* of") they turn
# the relation too; an adjective after it describes the answer ("X is a kind of which *broader* process").
WHOLE_VERBS = frozenset(
    {"contain", "contains", "include", "includes", "comprise", "comprises", "consist", "consists", "composed",
     "encompasses"}
)  # fmt: skip
CONTENT_MIN_CHARS = 3
# English words that stand for an unnamed node of any type between the answer and a constant ("packages that
# depend on *something* maintained by X"): read like a type word, each type of the schema tried in its place.
PLACEHOLDERS = frozenset(
    {
        "something",
        "anything",
        "everything",
        "stuff",
        "things",
        "somethings",
        "whatever",
        "someone",
        "somebody",
        "anyone",
        "anybody",
    }
)
# Words that introduce an unnamed node ("a part of", "some subtype of", "something that is part of", "the direct
# subtypes of").
NAME_ARTICLES = frozenset({"the", "a", "an"})
INDEFINITE = frozenset(
    {"a", "an", "some", "any", "one", "certain", "particular", "the", "something", "anything", "those", "its"}
)
# Nouns that, followed by "of", name a narrower node of the same kind as what follows ("a *subtype* of X", "some
# *part* of X", "a more specific *kind* of X"): English, the hop a hierarchy edge states whatever it is called.
NARROWER_NOUNS = frozenset(
    {"kind", "type", "sort", "form", "variety", "subtype", "subclass", "subcategory", "category", "specialization",
     "specialisation", "descendant", "child", "part", "component", "subpart", "piece", "portion", "subset",
     "member", "instance", "variant", "version", "grandchild"}
)  # fmt: skip
NARROWER_TAIL_WORDS = 5  # "a more specific kind of", "some direct subtype of": the phrase is this short
# What an ontology's users call its nodes, after a narrower noun ("a child *term* of X", "subclass *nodes* of Y"):
# the phrase still names a narrower node.
TERM_NOUNS = frozenset({"term", "class", "concept", "node", "entry", "category", "item", "code"})


# Nouns for a level of a hierarchy, relative to a node ("the *subtypes* of X", "its *parent* terms", "the
# *grandchildren* of X"): they name nodes of the node's own kind. Narrower than `NARROWER_NOUNS`: a *member* or a
# *component* of a complex need not be a complex.
LEVEL_NOUNS = frozenset(
    {"subtype", "subclass", "subcategory", "subterm", "descendant", "child", "grandchild", "parent", "grandparent",
     "ancestor", "supertype", "superclass", "superterm", "specialization", "specialisation", "generalization",
     "generalisation"}
)  # fmt: skip


def is_level_noun(word: str) -> bool:
    # "subtypes", "superclasses": plurals English's dictionary may not know read as jargon's
    return any(form in LEVEL_NOUNS for form in (word, noun_lemma(word), unknown_word_lemma(word)))


def names_level(words: Sequence[str], index: int) -> bool:
    """Whether the noun at `index` names a level of a hierarchy: a level noun ("*parents*"), or a term noun right
    after one ("parent *terms*")."""
    return _names_with(is_level_noun, words, index)


def _names_with(is_kind: Callable[[str], bool], words: Sequence[str], index: int) -> bool:
    """The noun at `index` is of the kind, or is a term noun right after one ("child *terms*")."""
    if is_kind(words[index]):
        return True
    lemma = noun_lemma(words[index]) or words[index]
    return lemma in TERM_NOUNS and index > 0 and is_kind(words[index - 1])


def far_is_subject(words: Sequence[str]) -> bool:
    """Reading "NEAR <words> FAR": FAR is the source when the words end in a passive agent ("regulated by") or name
    the broader end ("parents of", "containing"); otherwise NEAR is ("subtypes of", "part of", "regulates")."""
    content = [w for w in words if w not in ("the", "a", "an")]
    if content and content[-1] == "by":
        return True
    return any(w in INVERSE_WORDS for w in words)


def content_words(words: Sequence[str]) -> list[str]:
    return [w for w in words if w not in FUNCTION_WORDS and len(w) >= CONTENT_MIN_CHARS and not w.isdigit()]


def is_narrower_noun(word: str) -> bool:
    lemma = noun_lemma(word) or word
    return lemma in NARROWER_NOUNS or (word.startswith("sub") and noun_lemma(word[3:]) is not None)


def after_kind_noun(text: QuestionText, start: int, length: int) -> bool:
    """ "types of *hammers*", "the kinds of *cocktails*": one word right after a narrower noun and "of" names the
    class whose kinds are asked for, in the plural as English says it."""
    return (
        length == 1
        and start >= 2
        and text.tokens[start - 1].lower == "of"
        and is_narrower_noun(text.tokens[start - 2].lower)
    )


def says_kinds(phrase: str) -> bool:
    """Whether a relation's phrase has a narrower noun ("*types* of X"): the hierarchy, not an edge's own word."""
    return any(is_narrower_noun(w) for w in phrase.split())


def names_narrower(words: Sequence[str], index: int) -> bool:
    """Whether the noun at `index` names a narrower node: a narrower noun ("*subtypes*"), or a term noun right
    after one ("child *terms*")."""
    return _names_with(is_narrower_noun, words, index)


def narrower_tail(words: Sequence[str]) -> int:
    """How many of the last words, ending in "of", introduce an unnamed narrower node: "… has *a subtype of*",
    "… with *some more specific kind of*", "… see *an immediate child term of*" (0 when they do not)."""
    if len(words) < 2 or words[-1] != "of" or not names_narrower(words, len(words) - 2):
        return 0
    start = len(words) - 2
    while start > 0 and len(words) - start < NARROWER_TAIL_WORDS and words[start - 1] not in INDEFINITE:
        start -= 1
    if start > 0 and words[start - 1] in INDEFINITE:
        return len(words) - start + 1
    return 0


# Prepositions that relate a type word to what follows ("tracks *on* Blue Hours", "genes *in* X"), unlike "like"
# or "such as", which only introduce examples.
RELATING_PREPOSITIONS = frozenset({"on", "in", "from", "by", "at", "with", "of", "to", "for", "within", "into"})
# English for two nodes related alike to a third: "genes that *share* a disease with X", "a phenotype *in common*
# with X".
SHARING_WORDS = frozenset({"share", "shares", "shared", "sharing", "common", "same"})


def shares_the_node(first: Sequence[str], last: Sequence[str]) -> bool:
    """Whether the words around a shared node say it is shared: a sharing word on either side, and nothing on the
    constant's side but that and function words ("… share a disease *with* X", "… a phenotype *in common with* X")."""
    return bool(SHARING_WORDS & {*first, *last}) and set(content_words(last)) <= SHARING_WORDS


def without_name_article(before: list[str]) -> list[str]:
    """The words before a name without the article that introduces it ("the parts of *the*")."""
    end = len(before)
    while end > 0 and before[end - 1] in NAME_ARTICLES:
        end -= 1
    return before[:end]


def chain_phrases(
    before: list[str], after: list[str], mentions: Sequence[tuple[int, int]], kinds: Sequence[tuple[int, int]] = ()
) -> list[str]:
    """Every phrase the readings above may score for one constant (clause words before and after it; type words
    at these offsets of `before`; `kinds`: those of them whose words join both hops beside them), to embed in one
    call."""
    wanted = {" ".join(before)}
    core = without_name_article(before)
    for cut in range(1, len(core)):
        if core[cut] in INDEFINITE:  # the only cuts `hierarchy` reads
            wanted.add(" ".join(core[:cut]))
            wanted.add(" ".join(core[cut:]))
    tail = narrower_tail(before)
    for start, end in mentions:
        wanted.add(" ".join(before[:start]))
        wanted.add(" ".join(before[end:] + after))
        wanted.add(" ".join(before[:start] + after))  # a relative clause ending in its verb (`via_mentions`)
        wanted.add(" ".join(before[:start] + before[end:] + after))  # a shared node's two sides (`via_mentions`)
        wanted.add(" ".join(before[end:]))
        if tail and end <= len(before) - tail:  # the last hop's words without "a subtype of" (`via_mentions`)
            wanted.add(" ".join(before[end : len(before) - tail] + after))
        wanted.update(" ".join(before[end:next_start]) for next_start, _ in mentions if next_start >= end)
    for start, end in kinds:  # "members of the *genus*", "*genus* that the horse belongs to"
        wanted.update({" ".join(before[:end]), " ".join(before[start:] + after), " ".join(before[start:])})
    return sorted(w for w in wanted if content_words(w.split()))


# Two levels of a hierarchy at once: "*grandchildren* of X", "terms *two levels below* X", "*children of children*
# of X"; English, whatever the hierarchy's edge is called.
TWO_LEVEL_WORDS = frozenset({"grandchild", "grandchildren", "grandparent", "grandparents"})
LEVEL_COUNTS = {"two": 2, "2": 2, "second": 2}


def hierarchy_depth(words: Sequence[str]) -> int:
    """How many levels of a hierarchy the question asks to go at once (1 unless it says otherwise)."""
    if TWO_LEVEL_WORDS & set(words):
        return 2
    for i in range(len(words) - 2):  # "children of children of X"
        if words[i + 1] == "of" and words[i] == words[i + 2] and is_narrower_noun(words[i]):
            return 2
    for i in range(len(words) - 1):
        if words[i] in LEVEL_COUNTS and words[i + 1] in ("levels", "level", "steps", "generations"):
            return LEVEL_COUNTS[words[i]]
    return 1


RELATIVE_PRONOUNS = frozenset({"that", "which", "who", "whom"})


# Suffixes of English agent nouns: "*dependents* of X", "*regulators* of X", "*inhibitors* of X" name the side that
# does what the verb says.
REVERSING_WORDS = frozenset({"reverse", "reversed", "inverse", "backward", "backwards"})
AGENT_NOUN_SUFFIXES = ("er", "ers", "or", "ors", "ent", "ents", "ant", "ants")


def nominal_subject(words_before: Sequence[str], names_edge: Callable[[str], bool]) -> bool | None:
    """ "the *dependencies of* X", "the *recommendations of* X": a noun made from an edge's verb, then "of", makes
    X the edge's subject (X depends on them); an agent noun ("the *dependents of* X") makes X its object. None when
    the words before X end otherwise, or the noun names a level of a hierarchy (read by the hierarchy words)."""
    words = [w for w in words_before if w not in ("the", "a", "an")]
    if len(words) < 2 or words[-1] != "of":
        return None
    noun = words[-2]
    if not names_edge(noun) or is_level_noun(noun) or is_narrower_noun(noun) or noun in INVERSE_WORDS:
        return None
    patient = not noun.endswith(AGENT_NOUN_SUFFIXES)
    # "the *reverse* dependencies of X": the other way round
    return patient != (len(words) > 2 and words[-3] in REVERSING_WORDS)


_BE_ADVERBS = frozenset({"also", "all", "both", "each", "themselves", "itself", "really", "actually"})
_BE = frozenset({"is", "are", "was", "were"})


def copula_of_the_answer(left: Sequence[str], same_type: bool) -> bool:
    """Whether the words before a hierarchy phrase end in a form of "be" that is the answer's ("what things *are* a
    kind of X": the answer is that narrower node), not that of a node the words introduced ("… as *a word that
    is* the opposite of X": the phrase starts at "a", where a cut is tried too; "take *a thing that is* a type of
    X" introduces nothing the answer could be said of)."""
    last = [w for w in left if w not in _BE_ADVERBS]
    if not last or last[-1] not in _BE:
        return False
    start = max((k for k, w in enumerate(left) if w in INDEFINITE), default=-1)
    if start <= 0:
        return True
    asked = [w for w in content_words(left[:start]) if not is_discourse_word(w)]
    return bool(asked) or not same_type


def restates_the_answer(before: Sequence[str], same_type: bool) -> bool:
    """Whether a type word of the answer's own type after these words says again what the answer is ("adverbs
    *that are* adverbs formed from X"): a relative pronoun and a form of "be" before it. It is no node on the way."""
    return same_type and len(before) >= 2 and before[-2] in RELATIVE_PRONOUNS and before[-1] in _BE
