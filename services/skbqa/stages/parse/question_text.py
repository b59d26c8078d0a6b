"""A question as word tokens with character offsets, and which of them the encoder parser has used up.

The encoder parser reads a question in passes (target type, quoted text, attribute values, keyword cues,
constants); each pass claims token ranges so later passes see only what is left. Clause boundaries (`and`, `or`,
punctuation between words, and claimed ranges) delimit the phrase that states a constant's relation.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace

# "g++", "c++": a word's trailing pluses are part of it (inside a name, "libstdc++6", they stand between tokens)
_TOKEN = re.compile(r"\w+(?:\+\+|\+)?(?![\w+])|\w+")
_BOUNDARY_WORDS = frozenset({"and", "or", "but", "while", "whereas"})
# A spaced dash sets off a clause as a colon does ("Kabuki syndrome 1 genes - where do their products …"); a dash
# inside a word ("X-linked", "TSC1-TSC2") does not.
_BOUNDARY_PUNCT = re.compile(r"[,;:?!()\[\]]|\.\s|\s[-–—]+\s")
_SEGMENT_PUNCT = re.compile(r"[:?]|\s[-–—]+\s")
# Words whose "'s" is a contracted "is", never a possessive: "what's", "who's", "that's", "it's", "there's".
CONTRACTING_IS = frozenset({"what", "who", "where", "which", "how", "that", "it", "there", "here", "when", "why"})
APOSTROPHES = frozenset({"'", "’"})
_QUOTED = re.compile(r"\"([^\"]{2,})\"|“([^”]{2,})”|'([^']{3,})'(?!\w)")

# Small function words: never a constant on their own, never carry a relation's meaning.
FUNCTION_WORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "of",
        "in",
        "on",
        "at",
        "to",
        "for",
        "from",
        "by",
        "with",
        "without",
        "into",
        "onto",
        "over",
        "under",
        "about",
        "as",
        "is",
        "are",
        "was",
        "am",
        "were",
        "be",
        "been",
        "being",
        "that",
        "which",
        "who",
        "whom",
        "whose",
        "what",
        "where",
        "when",
        "how",
        "there",
        "their",
        "its",
        "it",
        "this",
        "these",
        "those",
        "than",
        "then",
        "do",
        "does",
        "did",
        "has",
        "have",
        "had",
        "having",
        "and",
        "or",
        "but",
        "not",
        "no",
        "any",
        "all",
        "some",
        "each",
        "every",
        "find",
        "list",
        "name",
        "show",
        "give",
        "tell",
        "me",
        "which",
        "are",
        "there",
        "can",
        "could",
        "would",
        "should",
        "may",
        "might",
        "please",
        "also",
        "both",
        "either",
    ]
)


@dataclass(frozen=True)
class Token:
    text: str
    lower: str
    start: int
    end: int


@dataclass
class QuestionText:
    text: str
    tokens: list[Token]
    claimed: list[str | None] = field(default_factory=list)  # per token: which pass used it, None if free
    quotes: list[str] = field(default_factory=list)
    # Free tokens that stated a relation the parse used (a related constant's clause): explained, though unclaimed.
    relation_tokens: set[int] = field(default_factory=set)

    @classmethod
    def of(cls, question: str, is_name: Callable[[str], bool] | None = None) -> QuestionText:
        """`is_name`: whether a quoted text is exactly a node's name or alias ("… also called 'X'"): such a quote
        stays in the question for the constant pass; any other is a text constraint."""
        quotes: list[str] = []
        masked = question
        for match in _QUOTED.finditer(question):
            body = next(g for g in match.groups() if g is not None)
            if is_name is not None and is_name(body.strip(" .…")):
                continue
            quotes.append(body.strip(" .…"))
            # Blank the quoted words so no later pass reads them as constants or relation words.
            masked = masked[: match.start()] + " " * (match.end() - match.start()) + masked[match.end() :]
        tokens = [Token(m.group(), m.group().lower(), m.start(), m.end()) for m in _TOKEN.finditer(masked)]
        text = cls(masked, tokens, [None] * len(tokens), quotes)
        for k in range(1, len(tokens)):
            # "what*'s* made of glass", "who*'s* the author": a contracted "is", read as the word it stands for
            if tokens[k].lower == "s" and tokens[k - 1].lower in CONTRACTING_IS and text.apostrophe_before(k):
                tokens[k] = replace(tokens[k], lower="is")
        return text

    def claimed_runs(self, by: str) -> list[tuple[int, int]]:
        """(start, end) of each run of consecutive tokens claimed by `by`."""
        runs: list[tuple[int, int]] = []
        for i, claim in enumerate(self.claimed):
            if claim != by:
                continue
            if runs and runs[-1][1] == i:
                runs[-1] = (runs[-1][0], i + 1)
            else:
                runs.append((i, i + 1))
        return runs

    def apostrophe_before(self, index: int) -> bool:
        """Whether token `index` follows an apostrophe ("X*'s*", "what*'s*")."""
        start = self.tokens[index].start
        return start > 0 and self.text[start - 1] in APOSTROPHES

    def copy(self) -> QuestionText:
        """The same question with its own claims (to try a pass without committing to it)."""
        return QuestionText(self.text, self.tokens, list(self.claimed), self.quotes, set(self.relation_tokens))

    def __len__(self) -> int:
        return len(self.tokens)

    def span_text(self, start: int, end: int) -> str:
        """The original characters of tokens start..end-1 (punctuation between them included)."""
        if start >= end:
            return ""
        return self.text[self.tokens[start].start : self.tokens[end - 1].end]

    def words(self, start: int, end: int) -> list[str]:
        return [t.lower for t in self.tokens[start:end]]

    def free(self, start: int, end: int) -> bool:
        return all(c is None for c in self.claimed[start:end])

    def claim(self, start: int, end: int, by: str) -> None:
        for i in range(start, end):
            self.claimed[i] = by

    def release(self, start: int, end: int) -> None:
        for i in range(start, end):
            self.claimed[i] = None

    def boundary_before(self, index: int) -> bool:
        """Whether punctuation separates token index-1 from token index (a clause break)."""
        if index <= 0 or index >= len(self.tokens):
            return True
        gap = self.text[self.tokens[index - 1].end : self.tokens[index].start]
        return bool(_BOUNDARY_PUNCT.search(gap + " "))

    def gap_before(self, index: int) -> str:
        """The characters between token index-1 and token index."""
        return (
            self.text[self.tokens[index - 1].end : self.tokens[index].start]
            if 0 < index < len(self.tokens)
            else ""
        )

    def segment_starts(self) -> list[int]:
        """Where a part of the question set off by a colon, a question mark or a spaced dash starts ("lacrimal duct
        stenosis: *Orphanet diseases* only", "CLRN1-related diseases: *modes of inheritance*?")."""
        return [i for i in range(1, len(self.tokens)) if _SEGMENT_PUNCT.search(self.gap_before(i) + " ")]

    def is_boundary_word(self, index: int) -> bool:
        return self.tokens[index].lower in _BOUNDARY_WORDS

    def clause(self, start: int, end: int, through: frozenset[str] = frozenset()) -> tuple[int, int]:
        """The clause around tokens start..end-1: extended over free, non-boundary tokens on both sides (and tokens
        claimed as one of `through`)."""
        left = start
        while left > 0 and self.claimed[left - 1] in {None, *through} and not self.is_boundary_word(left - 1):
            if self.boundary_before(left):
                break
            left -= 1
        right = end
        while (
            right < len(self.tokens)
            and self.claimed[right] in {None, *through}
            and not self.is_boundary_word(right)
        ):
            if self.boundary_before(right):
                break
            right += 1
        return left, right

    def free_runs(self) -> list[tuple[int, int]]:
        """Maximal runs of free tokens not crossing a clause boundary."""
        runs: list[tuple[int, int]] = []
        start: int | None = None
        for i in range(len(self.tokens) + 1):
            stop = (
                i == len(self.tokens)
                or self.claimed[i] is not None
                or self.is_boundary_word(i)
                or (start is not None and self.boundary_before(i))
            )
            if stop:
                if start is not None:
                    runs.append((start, i))
                    start = None
                if i < len(self.tokens) and self.claimed[i] is None and not self.is_boundary_word(i):
                    start = i
            elif start is None:
                start = i
        return runs

    def leftover_content(self) -> list[str]:
        """Free tokens that are not function words, in order (the question's unparsed remainder)."""
        return [
            t.text
            for t, c in zip(self.tokens, self.claimed, strict=True)
            if c is None and t.lower not in FUNCTION_WORDS
        ]


# Words after which a noun phrase is what the question asks for. English, not any one SKB's.
QUESTION_WORDS = frozenset(
    {"which", "what", "whose", "name", "list", "show", "find", "give", "get", "identify", "return", "enumerate",
     "retrieve", "any", "all", "there", "for", "looking", "need", "want", "search", "tell"}
)  # fmt: skip
# How people ask rather than what they ask about ("*Help me figure out* which …", "*I'd like to know* …", "…? *List
# them please*"): never words an answer's text is to contain. English only, nothing of any one schema.
DISCOURSE_WORDS = frozenset(
    {"help", "figure", "out", "like", "know", "wondering", "curious", "say", "please", "thanks", "them", "ones",
     "so", "if", "just", "only", "also", "take", "first", "then", "else", "exist", "exists", "d", "ll", "m", "s",
     "ve", "re", "i", "you", "we", "can", "could", "would", "will", "should", "may", "might", "must", "let",
     "see", "check", "anything", "everything", "something", "stuff", "ideas", "idea", "quick", "q", "hey", "hi", "ok", "okay",
     "other", "others", "among", "least", "one", "itself", "themselves", "they",
     "it", "its", "their", "those", "these", "this"}
)  # fmt: skip


def is_discourse_word(word: str) -> bool:
    return word in DISCOURSE_WORDS or word in QUESTION_WORDS
