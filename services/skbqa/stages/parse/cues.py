"""English phrasings that introduce a keyword constraint on the answer's text rather than a relation.

"… and that mention carabin", "… whose description mentions asymptomatic", "… related to hydroperoxide": the
words after the cue are to be found in the answer's document, not linked to a node. This is about English, not
about any one SKB; a cue claims its words up to the end of the clause.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from skbqa.stages.parse.question_text import QuestionText

CUES: tuple[tuple[str, ...], ...] = tuple(
    tuple(c.split())
    for c in sorted(
        [
            "whose description mentions",
            "whose description says",
            "whose description contains",
            "whose text mentions",
            "whose abstract mentions",
            "whose title mentions",
            "whose name contains",
            "description mentions",
            "described by the phrase",
            "described as",
            "that mention",
            "that mentions",
            "which mention",
            "which mentions",
            "mentioning",
            "mentions",
            "mention",
            "talk about",
            "talks about",
            "talking about",
            "described with the word",
            "described with the words",
            "whose description includes",
            "containing the word",
            "containing the words",
            "containing the phrase",
            "related to",
            "connected with",
            "dealing with",
            "about",
        ],
        key=lambda c: -len(c.split()),
    )
)


# A cue by its grammar rather than its wording: a verb of a record's text with what it is done with ("*defined
# using the word* X", "*glossed with* X"), a verb of saying or containing before a noun for words ("*uses the term*
# X"), or after the answer's own text already named ("whose gloss *says* X").
TEXT_VERBS = frozenset(
    {"define", "defines", "defined", "defining", "describe", "describes", "described", "describing", "explain",
     "explains", "explained", "gloss", "glossed", "summarize", "summarizes", "summarized", "summarise",
     "summarised", "worded", "phrased"}
)  # fmt: skip
SAYING_VERBS = frozenset(
    {"mention", "mentions", "mentioned", "mentioning", "say", "says", "said", "saying", "contain", "contains",
     "contained", "containing", "include", "includes", "including", "use", "uses", "used", "using", "feature",
     "features", "read", "reads", "cite", "cites"}
)  # fmt: skip
WORD_NOUNS = frozenset(
    {"word", "words", "term", "terms", "phrase", "phrases", "keyword", "keywords", "expression"}
)
# "*say something about* X", "*talk a lot about* X", "*tell us anything about* X": a verb of speaking, what is said
# and "about" put X in the answer's words (a bare "about" may relate: "papers about <a field>")
SPEAKING_VERBS = frozenset(
    {"say", "says", "said", "saying", "talk", "talks", "talked", "talking", "speak", "speaks", "spoke", "speaking",
     "tell", "tells", "told", "telling", "write", "writes", "wrote", "writing"}
)  # fmt: skip
SAID_FILLERS = frozenset(
    {"something", "anything", "much", "a", "lot", "bit", "little", "more", "mostly", "specifically", "explicitly",
     "us", "me", "you", "things", "stuff"}
)  # fmt: skip
MAX_SAID_FILLERS = 3
TEXT_VERB_LINKS = frozenset({"with", "using", "by", "through"})
TEXT_WITH = frozenset({"with", "using"})
_ARTICLES = frozenset({"the", "a", "an"})
TEXT_FIELD = "cue"  # how `text_fields` claims a phrase naming the answer's own text ("whose gloss")


def grammar_cue(text: QuestionText, words: list[str], i: int) -> int:
    """The number of words of a cue starting at `i` by the grammar above (0: none)."""
    j = i + 1
    bare = False  # whether the cue may end without a noun for words
    if words[i] in SPEAKING_VERBS:
        about = next((k for k in range(j, min(j + MAX_SAID_FILLERS + 1, len(words))) if words[k] == "about"), None)
        if about is not None and all(w in SAID_FILLERS for w in words[j:about]):
            return about + 1 - i
    if words[i] in TEXT_VERBS:
        if j >= len(words) or words[j] not in TEXT_VERB_LINKS:
            return 0  # "a term *defined* in X" says where, not what words
        # "an attribute *described by* X" may be a relation's agent; "*described with* X" is the answer's text
        bare = words[j] in TEXT_WITH
        j += 1
    elif words[i] in SAYING_VERBS:
        bare = i > 0 and text.claimed[i - 1] == TEXT_FIELD
    else:
        return 0
    k = j + 1 if j < len(words) and words[j] in _ARTICLES else j
    if k < len(words) and words[k] in WORD_NOUNS:
        return k + 1 - i
    return j - i if bare else 0


# Cues that may also introduce a relation ("papers about <a field>"): their span becomes a constant instead when
# it is exactly the name of a node the answer can be related to; the caller decides (`weak`).
WEAK_CUES = frozenset(tuple(c.split()) for c in ("about", "related to", "connected with", "dealing with"))


@dataclass(frozen=True)
class TextCue:
    text: str
    start: int  # first token of the cue
    end: int  # one past the last token of the keyword span
    body_start: int = 0  # first token of the keyword span
    weak: bool = False


def claim_text_cues(
    text: QuestionText, says_an_edge: Callable[[list[str]], bool] = lambda _: False
) -> list[TextCue]:
    """Find cues in free tokens, claim cue + keyword span (to the clause's end); return the keyword spans.
    `says_an_edge`: whether words are an edge's name (a weak cue inside one is no cue: "*derivationally related*
    to X" names the schema's `derivationally_related`)."""
    found: list[TextCue] = []
    words = [t.lower for t in text.tokens]
    i = 0
    while i < len(words):
        matched = next(
            (cue for cue in CUES if tuple(words[i : i + len(cue)]) == cue and text.free(i, i + len(cue))), None
        )
        if matched is not None and matched in WEAK_CUES and i > 0 and says_an_edge([words[i - 1], words[i]]):
            matched = None
        length = len(matched) if matched is not None else grammar_cue(text, words, i)
        if not length or not text.free(i, i + length):
            i += 1
            continue
        body_start = i + length
        body_end = body_start
        while (
            body_end < len(words)
            and text.claimed[body_end] is None
            and not text.is_boundary_word(body_end)
            and not text.boundary_before(body_end)  # "contains the word 'x': which …": the quote was its object
        ):
            body_end += 1
        if body_end == body_start:
            # nothing after the cue: its object was a quote, and the cue words say nothing; or no quote, and the
            # word ends a phrasal verb ("brought *about*", "talked *about*"): the relation's, left free
            if text.quotes:
                text.claim(i, body_start, "cue")
            i = body_start
            continue
        weak = matched is not None and matched in WEAK_CUES
        found.append(TextCue(text.span_text(body_start, body_end), i, body_end, body_start, weak))
        text.claim(i, body_end, "text")
        i = body_end
    return found
