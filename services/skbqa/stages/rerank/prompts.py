"""The reranking prompts of AF-Retriever Appendix A.2, and defensive parsers for their replies.

The pointwise text is the full STaRK LLM-reranker prompt that A.2 abbreviates with "[...]". Candidates carry
short local ids (1..k, their rank before reranking), never node ids: short numbers are cheap, unambiguous to
parse, and do not invite the model to reason about database identifiers.

Replies are untrusted: reasoning blocks (`<think>…</think>`, or an unclosed one cut off by max_tokens) are
dropped before parsing, and every parser returns None / a partial answer instead of raising.
"""

from __future__ import annotations

import re

POINTWISE = (
    "Examine if a {node_type} satisfies a given query and assign a score from 0.0 to 1.0. "
    "If the {node_type} does not satisfy the query, the score should be 0.0. "
    "If there exists explicit and strong evidence supporting that {node_type} satisfies the query, "
    "the score should be 1.0. If partial evidence or weak evidence exists, the score should be between 0.0 and 1.0.\n"
    "Here is the query:\n```\n{query}\n```\n"
    "Here is the information about the {node_type}:\n```\n{doc_info}\n```\n"
    "Please score the {node_type} based on how well it satisfies the query. "
    "ONLY output the floating point score WITHOUT anything else.\n"
    "Output: The numeric score of this {node_type} is: "
)

LISTWISE = (
    "The rows of the following list consist of an ID number, a type and a corresponding descriptive text:\n"
    "{possible_answers}\n"
    "Sort this list in descending order according to how well the elements can be considered as answers to the "
    "following query: {query}\n"
    "Please make absolutely sure that the element which satisfies the query best is the first element in your "
    "order. Return ONLY the corresponding ID numbers separated by commas in the asked order?"
)

PAIRWISE = (
    "The following two elements consist of an ID number, a type and a corresponding descriptive text:\n"
    "{node1_id}, {node_type_1}, {doc_info_1}.\n"
    "{node2_id}, {node_type_2}, {doc_info_2}.\n"
    "Please find out which of the elements satisfy the following query better: {query}\n"
    "Return ONLY the corresponding ID number which corresponds to the element that satisfies the given query "
    "best. Nothing else."
)


def listwise_row(local_id: int, node_type: str, text: str) -> str:
    return f"{local_id}, {node_type}, {text}"


_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
# A number standing on its own: not glued to a letter, digit or decimal point on either side, so "TBC1", "9B"
# and "P386R" hold none. "80%" is a percentage; "2.5 out of 4" and "7/10" are fractions of a scale.
_NUMBER = re.compile(
    r"(?<![\w.])(?P<value>[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?)(?!\w|\.\d)"
    r"(?:(?P<percent>%)|\s*(?:/|\bout\s+of\b)\s*(?P<scale>\d+(?:\.\d+)?)(?!\w|\.\d))?",
    re.IGNORECASE,
)
# The words a model puts before the score it means ("the score of this gene is: 1.", "Confidence: 0.7").
_SCORE_WORD = re.compile(r"\b(?:score|confidence|rating)", re.IGNORECASE)
# An integer standing on its own: "9B", "ARL10C", "Gie1" and "3.5" hold none (ids are never part of a name).
_INTEGER = re.compile(r"(?<![\w.])\d+(?!\w|\.\d)")
_ENUMERATOR = re.compile(r"^\s*(?:\d+\s*[.)]|[-*•])\s+")


def answer_text(reply: str) -> str:
    """The reply without reasoning blocks; an unclosed <think> means the answer never came."""
    text = _THINK.sub(" ", reply)
    opened = text.lower().find("<think>")
    return text[:opened] if opened >= 0 else text


def parse_score(reply: str) -> float | None:
    """The score a reply gives, within [0, 1]; None when there is none. In order of preference:
    - the first usable number after the last "score" / "confidence" / "rating": small models restate the
      candidate's name, numbers included, before the score ("TBC1 domain family member 1. Its score is 0.2");
    - the last usable number on the last non-empty line, where a closing verdict sits;
    - the first usable number anywhere.
    Usable: a number in [0, 1], a percentage ("80%" → 0.8) or a fraction of a scale ("2.5 out of 4", "7/10")."""
    text = answer_text(reply)
    keywords = list(_SCORE_WORD.finditer(text))
    if keywords:
        after = _scores(text[keywords[-1].end() :])
        if after:
            return after[0]
    lines = [line for line in text.splitlines() if line.strip()]
    if lines:
        last = _scores(lines[-1])
        if last:
            return last[-1]
    anywhere = _scores(text)
    return anywhere[0] if anywhere else None


def _scores(text: str) -> list[float]:
    """Every usable number in `text`, in order."""
    found: list[float] = []
    for match in _NUMBER.finditer(text):
        try:
            value = float(match["value"])
            scale = float(match["scale"]) if match["scale"] else None
        except ValueError:
            continue
        if match["percent"]:
            value /= 100.0
        elif scale is not None:
            if scale <= 0:
                continue
            value /= scale
        if 0.0 <= value <= 1.0:
            found.append(value)
    return found


def parse_ranking(reply: str, k: int) -> list[int]:
    """Local ids 1..k in the order given, first mention wins, unknown ids ignored. List enumerators
    ("1. 7", "- 7") are skipped so a numbered list is read as its items, not its counters."""
    seen: list[int] = []
    for line in answer_text(reply).splitlines():
        for token in _INTEGER.findall(_without_enumerator(line)):
            value = int(token)
            if 1 <= value <= k and value not in seen:
                seen.append(value)
    return seen


def _without_enumerator(line: str) -> str:
    """ "2. 7" → "7", but "3. 1. 2." stays whole: a line is a list item only if one id follows its counter."""
    rest = _ENUMERATOR.sub("", line, count=1)
    return rest if rest != line and len(_INTEGER.findall(rest)) == 1 else line


def parse_choice(reply: str, first: int, second: int) -> int | None:
    """Which of two local ids the reply picks: the one on the last line that names exactly one of them
    ("… so 7 is better"); None when no line does (neither named, or every line names both)."""
    allowed = {first, second}
    lines = [line for line in answer_text(reply).splitlines() if line.strip()]
    for line in reversed(lines):
        named = {int(t) for t in _INTEGER.findall(line)} & allowed
        if len(named) == 1:
            return named.pop()
    return None
