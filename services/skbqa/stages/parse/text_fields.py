"""Words for a node's own text: "have 'observatory' *in their definition*", "*whose summary* mentions kinase".

Such a phrase says where a keyword is to be found, not a node the answer is related to nor a relation, so its words
are claimed before constants are linked ("definition" is also a concept of a dictionary). The nouns are English
ones for a text, and those the schema's own descriptions use for it ("Text is the *GO definition*", "text is the
*gloss*"), read from the loaded schema.
"""

from __future__ import annotations

import re

from skbqa.skb.schema import Schema
from skbqa.stages.english import word_classes
from skbqa.stages.parse.question_text import FUNCTION_WORDS, QuestionText
from skbqa.stages.parse.type_mentions import noun_forms, noun_lemma

# English nouns for what a record says of itself.
TEXT_NOUNS = frozenset(
    {"description", "definition", "text", "summary", "gloss", "abstract", "synopsis", "overview", "blurb", "bio",
     "biography", "profile", "explanation", "wording", "writeup", "note", "notes", "documentation"}
)  # fmt: skip
# Words that make the noun the answer's own text: "in *their* definition", "*whose* summary".
OWNERS = frozenset({"its", "their", "whose", "his", "her"})
# "in *the* description": the article needs the preposition before it to say whose text.
PLACING = frozenset({"in", "within", "inside"})
QUOTE_PAIRS = {"'": "'", '"': '"', "”": "“"}
QUOTE_CLOSERS = frozenset(QUOTE_PAIRS)
# "have *kinase* in their summary": a keyword of this many words at most after a verb of having
KEYWORD_WORDS = 3
HAVING_VERBS = frozenset({"have", "has", "having", "with", "contain", "contains", "mention", "mentions", "include",
                          "includes", "use", "uses"})  # fmt: skip
_TEXT_CLAUSE = re.compile(
    r"\b[Tt]exts? (?:is|are|gives|holds|has|contains|says) (?:the |a |an )?(?:[A-Z][A-Za-z]*[A-Z] )*(?P<what>[a-z]+)"
    r"(?: (?P<next>[a-z]+))?"
)
NAME_NOUNS = frozenset({"name", "title", "label"})  # a node's name is an attribute, searched as one


def text_nouns(schema: Schema) -> frozenset[str]:
    """Every form of the nouns for a node's text: English ones, and the noun right after "Text is (the) …" in a
    type's description ("Text is the HPO *definition*", "text is the *gloss* (…)")."""
    found = set(TEXT_NOUNS)
    for node_type in schema.node_types:
        for match in _TEXT_CLAUSE.finditer(node_type.description):
            following = match.group("next")
            # "the *full name* plus …": a noun right after the first is the compound's head
            word = (
                following
                if following
                and noun_lemma(following)
                and (following in NAME_NOUNS or following not in FUNCTION_WORDS)
                else None
            )
            lemma = noun_lemma(word or match.group("what"))
            if lemma is not None and lemma not in NAME_NOUNS and lemma not in FUNCTION_WORDS:
                found.update(noun_forms(lemma))
    return frozenset(found)


def claim_text_fields(text: QuestionText, nouns: frozenset[str]) -> list[tuple[int, int]]:
    """Claim each free phrase that names the answer's own text ("in their definition", "whose summary", "in the
    GO definition"); the spans claimed."""
    words = [t.lower for t in text.tokens]
    claimed: list[tuple[int, int]] = []
    for i, word in enumerate(words):
        if word not in nouns or not text.free(i, i + 1) or _quoted(text, i):
            continue  # "in the *'text'* section": a quoted word is a name
        if i + 1 < len(words) and not text.boundary_before(i + 1) and _only_a_noun(words[i + 1]):
            continue  # "in the *text* section": the noun qualifies another ("whose definition *mentions*" not)
        start = i
        if (
            start > 0
            and not text.boundary_before(start)
            and text.free(start - 1, start)
            and _is_noun(text, words, start - 1)
        ):
            start -= 1  # "their *GO* definition": a noun that qualifies the text's noun
        before = words[start - 1] if start > 0 else ""
        if before in OWNERS:
            start -= 1
            if start > 0 and words[start - 1] in PLACING:
                start -= 1
        elif before == "the" and start > 1 and words[start - 2] in PLACING:
            start -= 2
        else:
            continue
        if not text.free(start, i + 1):
            continue
        text.claim(start, i + 1, "cue")
        claimed.append((start, i + 1))
        if words[start] in PLACING:  # "have X *in their definition*"; after "whose summary" it follows the verb
            _claim_keyword_before(text, start)
    return claimed


def _is_noun(text: QuestionText, words: list[str], i: int) -> bool:
    return words[i] not in FUNCTION_WORDS and (noun_lemma(words[i]) is not None or text.tokens[i].text.isupper())


def _only_a_noun(word: str) -> bool:
    classes = word_classes(word)
    return word not in FUNCTION_WORDS and "NOUN" in classes and "VERB" not in classes


def _quoted(text: QuestionText, i: int) -> bool:
    token = text.tokens[i]
    return (
        text.text[token.start - 1 : token.start] in QUOTE_PAIRS.values()
        or text.text[token.end : token.end + 1] in QUOTE_CLOSERS
    )


def _claim_keyword_before(text: QuestionText, start: int) -> None:
    """What the text is to contain, right before the phrase: "have *'observatory'* in their definition" (a quote
    kept in the question because it is also a node's name), "with *kinase* in its summary" (up to a few words after
    a verb of having)."""
    before = text.text[: text.tokens[start].start].rstrip()
    if before[-1:] in QUOTE_CLOSERS:
        opener = before[:-1].rfind(QUOTE_PAIRS[before[-1]])
        inside = [k for k, t in enumerate(text.tokens) if opener < t.start and t.end < len(before)]
        if opener >= 0 and inside and text.free(inside[0], inside[-1] + 1):
            text.claim(inside[0], inside[-1] + 1, "text")
            text.quotes.append(text.span_text(inside[0], inside[-1] + 1))
        return
    first = start
    while first > 0 and start - first < KEYWORD_WORDS and text.free(first - 1, first):
        first -= 1
        if first > 0 and text.tokens[first - 1].lower in HAVING_VERBS:
            text.claim(first, start, "text")
            text.quotes.append(text.span_text(first, start))
            return
