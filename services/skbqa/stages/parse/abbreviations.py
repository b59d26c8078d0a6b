"""Abbreviations users type for the schema's own words: "deps" for depends, "pkgs" for packages, "src" for source,
"pheno" for phenotype. A lower-case word the dictionary does not know, that is no node's name and stands on its own
(not a part of "libfoo-dev"), is read as the word of a type's or an edge's name it abbreviates: the one that starts
with its first letter and contains its other letters in order. Of several, the one sharing the longest start, then the shortest
("pkg": package, not packager); a tie between different words leaves the abbreviation as written.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from skbqa.skb.schema import Schema
from skbqa.stages.english import is_english
from skbqa.stages.parse.question_text import FUNCTION_WORDS
from skbqa.stages.parse.spelling import english_respelling
from skbqa.stages.parse.type_mentions import noun_lemma, plural

MIN_ABBREVIATION = 3
# Comparison signs before a number ("installed size > 100000"), which the word tokens would drop: their words.
COMPARISON_SYMBOLS = [
    (sign, re.compile(re.escape(sign) + r"\s*(?=[+-]?\d)"), words)
    for sign, words in ((">=", "at least"), ("<=", "at most"), (">", "above"), ("<", "below"))
]
# English contractions typed without their apostrophe ("*whats* in the news section"): a wh-word and its verb.
CONTRACTIONS = {
    "whats": "what is",
    "wheres": "where is",
    "whos": "who is",
    "hows": "how is",
    "whered": "where did",
}
MIN_WORD = 4
_WORD = re.compile(r"[a-z]+")
_POSSESSIVE = re.compile(r"['’]s (?:[a-z]+ )?$")  # "mutt's deps", "mutt's hard deps"
_OF_NEXT = re.compile(r"\s+of\s")  # "*deps* of mutt": a word before "of" and a name says what of the name is asked
# English phrases that join the parts of a question and name nothing ("depends on X and on Y *at the same time*"):
# read as "both"'s sense, which the coordination already states, so they are dropped.
# "maintained by *whoever* maintains X": a free relative inside the question is someone who does it, not a question
# for persons (which "whoever" opening the question is).
_FREE_WHOEVER = re.compile(r"(?<=\w)(\s+)whoever\b", re.IGNORECASE)
IDIOMS = re.compile(r"\b(?:at the same time|all at once|at once)\b", re.IGNORECASE)
_TOKEN = re.compile(r"(?<![\w.:/_-])[a-z]{3,}(?![\w.:/_-])")


def schema_words(schema: Schema) -> frozenset[str]:
    """The words of the schema's type and edge names: what an abbreviation may stand for (a description's words are
    too many: "dep" would find "decipher" there)."""
    names = [t.name for t in schema.node_types] + [e.name for e in schema.edge_types]
    return frozenset(
        w
        for name in names
        for w in _WORD.findall(name.replace("_", " ").lower())
        if len(w) >= MIN_WORD and w not in FUNCTION_WORDS
    )


def abbreviates(short: str, word: str) -> bool:
    """Whether `short` starts `word` and keeps its other letters in order ("pkg": package, "chr": chromosome)."""
    letters = iter(word[1:])
    return short[0] == word[0] and all(c in letters for c in short[1:])


def _shared_start(a: str, b: str) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


class Abbreviations:
    def __init__(
        self, schema: Schema, is_name: Callable[[str], bool], known_word: Callable[[str], bool] | None = None
    ) -> None:
        """`known_word`: whether the knowledge base itself uses a word (its names, its texts' openings): such a
        word is never read as a misspelt English one ("aplasia" is no "aphasia", "septin" no "septic")."""
        self._words = schema_words(schema)
        self._is_name = is_name
        self._known_word = known_word or (lambda _word: False)

    def expand(self, question: str) -> tuple[str, list[tuple[str, str]]]:
        """The question with its abbreviations written out, and which were (abbreviation, word)."""
        done: list[tuple[str, str]] = []

        def replace(match: re.Match[str]) -> str:
            token = match.group()
            if token in CONTRACTIONS and not self._is_name(token):
                done.append((token, CONTRACTIONS[token]))
                return CONTRACTIONS[token]
            # after a possessive ("mutt's *deps*") the word says what of the name is asked, even if a node has it
            possessive = (
                _POSSESSIVE.search(question[: match.start()]) is not None
                or _OF_NEXT.match(question, match.end()) is not None
                or self._after_a_name(question[: match.start()])
            )
            word = self.word_for(token, possessive=possessive)
            if word is None and not self._is_name(token) and not self._known_word(token):
                word = english_respelling(token)  # "illnesess", "assosiated": English, misspelt
            if word is None:
                return token
            done.append((token, word))
            return word

        for sign, symbol, words in COMPARISON_SYMBOLS:
            if symbol.search(question):
                question = symbol.sub(f" {words} ", question)
                done.append((sign, words))
        idiom = IDIOMS.search(question)
        if idiom is not None:
            done.append((idiom.group(), ""))
            question = IDIOMS.sub(" ", question)
        if _FREE_WHOEVER.search(question):
            done.append(("whoever", "someone who"))
            question = _FREE_WHOEVER.sub(r"\1someone who", question)
        expanded = _TOKEN.sub(replace, question)
        return expanded, done

    def _after_a_name(self, before: str) -> bool:
        """ "zsh *deps*": right after a name, a word says what of it is asked."""
        last = re.search(r"([\w.+-]+)\s+$", before)
        return last is not None and self._is_name(last.group(1))

    def word_for(self, token: str, *, possessive: bool = False) -> str | None:
        if token in FUNCTION_WORDS or token in self._words or not _unknown(token):
            return None
        if self._is_name(token) and not possessive:
            return None
        stem, suffix = (token[:-1], "s") if token.endswith("s") and len(token) > MIN_ABBREVIATION else (token, "")
        if stem in self._words:
            return None  # a plural of the schema's own word ("apps" where the schema says "app")
        candidates = [w for w in self._words if len(w) > len(stem) and abbreviates(stem, w)]
        if not candidates:
            return None
        best = max(_shared_start(stem, w) for w in candidates)
        closest = [w for w in candidates if _shared_start(stem, w) == best]
        shortest = min(len(w) for w in closest)
        chosen = {w for w in closest if len(w) == shortest}
        if len(chosen) != 1:
            return None
        word = chosen.pop()
        # "procs": processes; "deps": depends (a verb's -s is already there)
        return plural(word) if suffix and (not word.endswith("s") or noun_lemma(word) == word) else word


def _unknown(word: str) -> bool:
    return len(word) >= MIN_ABBREVIATION and not is_english(word)
