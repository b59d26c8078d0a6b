"""Questions in two parts, made one for the parser.

- Two sentences where the second refers back to a set the first describes ("cron provides *some virtual
  packages*. which packages depend on *one of those*", "*whatever* r-base recommends - what debtags do *those
  packages* have"): rewritten as one question with a relative clause ("… depend on one of the virtual packages
  that cron provides"), which the parser reads like any other.
- An opening aside that sets aside a node the question names again ("Apart from X itself, which genes share a
  disease with X?"): dropped.

English only; nothing of any one schema.
"""

from __future__ import annotations

import re

from skbqa.stages.english import word_classes
from skbqa.stages.parse.spelling import is_plain_verb, only_a_verb, reads_as_participle

# Where a sentence or a clause set off by a dash ends.
_SENTENCE_END = re.compile(r"[.;!?]\s+|\s[-–—]+\s")
# Words that introduce an unnamed set in a statement ("cron provides *several* packages").
_QUANTIFIED = re.compile(
    r"\b(?:some|several|a few|few|many|various|multiple|a number of|a couple of|certain|a bunch of|a lot of|lots of"
    r"|plenty of|a handful of|a set of|a list of)\s+",
    re.IGNORECASE,
)
# A statement that is itself a free relative ("*whatever* r-base recommends").
_FREE_RELATIVE = re.compile(r"^\s*(?:whatever|everything|anything|all that|all the things)\s+", re.IGNORECASE)
# How the second sentence refers back: "one of those", "those packages", "them".
_REFERENCE = re.compile(
    r"\b(?:(?:those|these|the same)\s+(?P<noun>[a-z][\w-]*)|(?P<bare>them|those|these|they))\b", re.IGNORECASE
)
# A first part that only asks for a set, to be used by the next ("*First find* the source packages that …; then …")
_REQUEST = re.compile(
    r"^\s*(?:first,?\s+)?(?:find|list|get|show(?: me)?|give me|identify|name)\s+(?:all\s+(?:of\s+)?)?(?P<phrase>.+)$",
    re.IGNORECASE,
)
_DETERMINED = re.compile(r"^(?:the|those|these|all)\b", re.IGNORECASE)
_THEN = re.compile(r"^(?:and\s+)?then,?\s+", re.IGNORECASE)
_HAS = re.compile(r"\s+(?:has|have)$", re.IGNORECASE)
_TOPIC_END = re.compile(r"[:.;!?]\s+|\s[-–—]+\s")  # a topic is set off by a colon too ("zsh: what are its …")
_POSSESSIVE = re.compile(r"\b(?:their|its)\s+(?P<noun>[a-z][\w-]*)", re.IGNORECASE)
_BARE_REFERENCE = re.compile(r"\b(?P<bare>them|those|these|they)\b(?P<noun>)?", re.IGNORECASE)
_WORD = re.compile(r"[\w+.-]+")
_PHRASE_STOPS = frozenset(
    {"that", "which", "who", "whose", "with", "from", "in", "on", "by", "for", "of", "and", "or", "to", "at", "as"}
)
_REDUCED_RELATIVE_START = re.compile(r"^(?:that|which|who|whose|with|from|in|on|by|for|of|at|as)\b", re.IGNORECASE)
_QUESTION_OPENERS = frozenset(
    {"what", "which", "who", "whom", "where", "how", "list", "show", "find", "give", "name"}
)
_SUBJECT_OPENERS = re.compile(r"^\s*(?:there (?:are|is|exist)\s*)?$", re.IGNORECASE)


def join_sentences(question: str) -> str | None:
    """The question as one sentence when its last sentence refers back to a set an earlier statement describes;
    None when it does not."""
    ends = list(_SENTENCE_END.finditer(question))
    for end in reversed(ends):
        first, second = question[: end.start()].strip(), question[end.end() :].strip()
        second = _THEN.sub("", second)
        reference = _reference(second)
        if not first or reference is None or "?" in end.group():
            continue
        request = _REQUEST.match(first)
        if request is not None:  # "First find the source packages that build X; then what teams maintain *those*?"
            phrase = request.group("phrase").strip()
            described = phrase if _DETERMINED.match(phrase) else f"the {phrase}"
        elif _asks(first):
            continue  # a first part that asks ("are there any X …? list them") is the question itself
        else:
            described = _described_set(first, reference.group("noun"))
        if described is None:
            continue
        return second[: reference.start()] + described + second[reference.end() :]
    return None


def join_topic(question: str) -> str | None:
    """ "Kabuki syndrome 1 genes - where do *their products* localize?": a first part that only names a topic (a
    noun phrase, no verb) and a question about "their"/"its" noun → "where do the products of Kabuki syndrome 1
    genes localize?"; None otherwise."""
    end = _TOPIC_END.search(question)
    if end is None:
        return None
    topic, rest = question[: end.start()].strip(), question[end.end() :].strip()
    possessive = _POSSESSIVE.search(rest)
    if not topic or possessive is None or not _asks(rest) or _asks(topic) or _states(topic):
        return None
    end_of_phrase = possessive.start("noun")
    previous = ""
    for word in _WORD.finditer(rest, possessive.start("noun")):
        between = rest[end_of_phrase : word.start()]
        lower = word.group().lower()
        if previous and (lower in _PHRASE_STOPS or _verb_after(previous, lower) or between.strip()):
            break
        end_of_phrase, previous = word.end(), lower
    phrase = rest[possessive.start("noun") : end_of_phrase]
    return rest[: possessive.start()] + f"the {phrase} of {topic}" + rest[end_of_phrase:]


def _states(part: str) -> bool:
    """Whether the part has a verb, so states something rather than naming a topic: a word English reads only as a
    verb, or a third-person "-s" form before the part's end ("X *imports* Y")."""
    words = [w.lower() for w in _WORD.findall(part)]
    return any(
        only_a_verb(w) or (k < len(words) - 1 and w.endswith("s") and is_plain_verb(w[:-1]))
        for k, w in enumerate(words)
    )


def _reference(sentence: str) -> re.Match[str] | None:
    """Where the sentence refers back: "those packages" when a noun follows, else the pronoun alone ("are *those*
    built from")."""
    found = _REFERENCE.search(sentence)
    if found is None or found.group("noun") is None or "NOUN" in word_classes(found.group("noun").lower()):
        return found
    return _BARE_REFERENCE.search(sentence)


def _asks(sentence: str) -> bool:
    words = sentence.lower().split()
    return bool(words) and words[0] in _QUESTION_OPENERS


def _described_set(statement: str, noun: str | None) -> str | None:
    """ "cron provides some virtual packages" → "the virtual packages that cron provides"; "several packages
    provide X" → "the packages that provide X"; "whatever X recommends" → "the packages that X recommends" (the
    noun the reference gives, else "things")."""
    free = _FREE_RELATIVE.match(statement)
    if free is not None:
        clause = statement[free.end() :].strip()
        return f"the {noun or 'things'} that {clause}" if clause else None
    quantified = _QUANTIFIED.search(statement)
    if quantified is None:
        return None
    phrase_end = _noun_phrase_end(statement, quantified.end())
    noun_phrase = statement[quantified.end() : phrase_end].strip()
    before, after = statement[: quantified.start()].strip(), statement[phrase_end:].strip()
    if not noun_phrase:
        return None
    owner = _HAS.search(before)
    if owner is not None and owner.start() > 0:  # "X *has several* direct subtypes (in GO)": the subtypes of X
        return f"the {noun_phrase} of {before[: owner.start()].strip()}" + (f" {after}" if after else "")
    if not after:  # the set is the statement's object: "cron provides *some packages*"
        return f"the {noun_phrase} that {before}" if before else None
    if _SUBJECT_OPENERS.match(before):  # its subject: "(there are) *several packages* (that) provide X"
        first_word = after.split()[0].lower()
        reduced = _REDUCED_RELATIVE_START.match(after) or (
            only_a_verb(first_word) and reads_as_participle(first_word)
        )
        return f"the {noun_phrase} {after}" if reduced else f"the {noun_phrase} that {after}"
    return None


def _noun_phrase_end(statement: str, start: int) -> int:
    """Where the noun phrase starting at `start` ends: before a function word, or a verb ("several packages
    *provide* X", "some genes *associated* with Y")."""
    previous = ""
    for match in _WORD.finditer(statement, start):
        word = match.group().lower()
        if match.start() > start and (word in _PHRASE_STOPS or _verb_after(previous, word)):
            return match.start()
        previous = word
    return len(statement)


def _verb_after(previous: str, word: str) -> bool:
    """Whether `word`, after `previous`, is a verb ending a noun phrase: English reads it only as a verb, or it is a
    plain verb after a plural ("several modules *import* X", though English has the noun too)."""
    return only_a_verb(word) or (previous.endswith("s") and is_plain_verb(word))


# "*Apart from LRRK2 itself*, which genes share a disease with LRRK2?": an aside that sets the named node aside,
# which a question about what shares something with it does already. With "itself" the name may hold commas.
_ASIDE_WORDS = r"^\s*(?:apart from|aside from|other than|besides|excluding|except for|except|not counting)\s+"
_ASIDES = (
    re.compile(_ASIDE_WORDS + r"(?P<name>.{1,80}?)\s+itself\s*[,;:]\s*", re.IGNORECASE),
    re.compile(_ASIDE_WORDS + r"(?P<name>[^,;:]{1,80}?)\s*[,;:]\s*", re.IGNORECASE),
)
_IT = re.compile(r"\b(?:it|itself)\b", re.IGNORECASE)


def drop_restated_aside(question: str) -> str | None:
    """The question without an opening aside that excludes a node it names again further on, by name or as "it"
    ("Other than X itself, which disorders share a gene with *it*?"); None otherwise."""
    for pattern in _ASIDES:
        aside = pattern.match(question)
        if aside is None:
            continue
        rest = question[aside.end() :]
        name = aside.group("name").strip()
        if re.search(r"(?<![\w-])" + re.escape(name) + r"(?![\w-])", rest, re.IGNORECASE):
            return rest
        it = _IT.search(rest)
        if it is not None:
            return rest[: it.start()] + name + rest[it.end() :]
        return None
    return None
