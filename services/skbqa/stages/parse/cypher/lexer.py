"""Cypher text extraction and tokenisation for the LLM-output parser (see `skbqa.stages.parse.cypher.parser`).

`extract_cypher` cuts the query out of an LLM answer (markdown fences, leading prose); `tokenize` never raises:
what it cannot read becomes an ``ERROR`` token that the parser reports as a syntax error at that position.
Tolerated beyond Cypher, each recorded as a warning: typographic quotes as string delimiters, en/em dashes as
``-``, ``!=`` for ``<>``. Nothing here evaluates anything.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

MAX_INPUT_CHARS = 20_000  # LLM Cypher is a few hundred characters; longer input is truncated with a warning

TokenKind = Literal["IDENT", "QIDENT", "STRING", "NUMBER", "PARAM", "OP", "ERROR", "EOF"]


class CypherSyntaxError(Exception):
    """A syntax error at a position of the (extracted) query; `str()` is the message sent back to the LLM."""

    def __init__(self, message: str, line: int, column: int) -> None:
        super().__init__(f"line {line}, column {column}: {message}")
        self.message = message
        self.line = line
        self.column = column


@dataclass(frozen=True, slots=True)
class Token:
    kind: TokenKind
    text: str  # the source text (an ERROR token's text is its message)
    value: str | int | float | None  # decoded string / number / identifier name
    pos: int  # offset in the extracted query
    line: int
    col: int
    space_before: bool  # whitespace or a comment separates it from the previous token
    newline_before: bool

    def describe(self) -> str:
        if self.kind == "EOF":
            return "end of query"
        text = self.text if len(self.text) <= 30 else self.text[:27] + "..."
        return f"'{text}'"


# Longest operators first; '<', '-' and '>' stay single so `<-[`, `-->` and `x<-1` all read correctly.
_OPERATORS = ("<>", "<=", ">=", "=~", "!=", "..", "(", ")", "[", "]", "{", "}", ":", ",", ".", "|", "*", "=")
_SINGLE = set("<>-+/%^;&!")
_DIGITS = "0123456789"
_DASHES = "\u2013\u2014\u2212"  # en dash, em dash, minus sign
_SMART_QUOTES = {"\u201c": "\u201d", "\u2018": "\u2019"}
_ESCAPES = {"t": "\t", "b": "\b", "n": "\n", "r": "\r", "f": "\f", "'": "'", '"': '"', "\\": "\\"}
_NUMBER = re.compile(r"[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|\.[0-9]+(?:[eE][+-]?[0-9]+)?")


def tokenize(text: str, warnings: list[str]) -> list[Token]:
    """Tokens of `text`, ending with EOF; unreadable spans become ERROR tokens (never raises)."""
    tokens: list[Token] = []
    i, n, line, line_start = 0, len(text), 1, 0
    space, newline = False, False
    noted: set[str] = set()

    def note(message: str) -> None:
        if message not in noted:
            noted.add(message)
            warnings.append(message)

    while True:
        # whitespace and comments
        while i < n:
            c = text[i]
            if c == "\n":
                i, line, line_start, space, newline = i + 1, line + 1, i + 1, True, True
            elif c.isspace():
                i, space = i + 1, True
            elif text.startswith("//", i):
                end = text.find("\n", i)
                i, space = (n if end < 0 else end), True
            elif text.startswith("/*", i):
                end = text.find("*/", i + 2)
                stop = n if end < 0 else end + 2
                line += text.count("\n", i, stop)
                if "\n" in text[i:stop]:
                    line_start, newline = text.rfind("\n", i, stop) + 1, True
                i, space = stop, True
            else:
                break
        start, col = i, i - line_start + 1
        if i >= n:
            tokens.append(Token("EOF", "", None, n, line, col, space, newline))
            return tokens
        kind, end, value, shown = _lex_one(text, i, tokens, note)
        tokens.append(
            Token(kind, text[start:end] if shown is None else shown, value, start, line, col, space, newline)
        )
        if "\n" in text[start:end]:  # a string spanning lines
            line, line_start = line + text.count("\n", start, end), text.rfind("\n", start, end) + 1
        i = end
        space, newline = False, False


def _lex_one(
    text: str, i: int, tokens: list[Token], note: Callable[[str], None]
) -> tuple[TokenKind, int, str | int | float | None, str | None]:
    """The token starting at `i`: (kind, end offset, value, shown text or None for the source slice)."""
    n, c = len(text), text[i]
    if c.isalpha() or c == "_":
        j = i + 1
        while j < n and (text[j].isalnum() or text[j] == "_"):
            j += 1
        return "IDENT", j, text[i:j], None
    if c in _DIGITS or (c == "." and i + 1 < n and text[i + 1] in _DIGITS and not _after_dot_op(tokens)):
        m = _NUMBER.match(text, i)
        if m is None:  # unreachable: the first character is an ASCII digit
            return "ERROR", i + 1, None, "malformed number"
        raw = m.group()
        if len(raw) > 100:  # int() refuses thousands of digits; no real query has such a number
            return "ERROR", m.end(), None, "number too long"
        return "NUMBER", m.end(), (float(raw) if any(ch in raw for ch in ".eE") else int(raw)), None
    if c in "'\"" or c in _SMART_QUOTES:
        if c in _SMART_QUOTES:
            note("typographic quotes read as string delimiters")
        decoded, end = _read_string(text, i + 1, _SMART_QUOTES.get(c, c))
        if end < 0:
            return "ERROR", _line_end(text, i), None, "unterminated string"
        return "STRING", end, decoded, None
    if c == "`":
        name, end = _read_backtick(text, i + 1)
        if end < 0:
            return "ERROR", _line_end(text, i), None, "unterminated backtick name"
        return "QIDENT", end, name, None
    if c == "$":
        j = i + 1
        while j < n and (text[j].isalnum() or text[j] == "_"):
            j += 1
        return "PARAM", j, text[i + 1 : j], None
    op = next((o for o in _OPERATORS if text.startswith(o, i)), None)
    if op is not None:
        return "OP", i + len(op), ("<>" if op == "!=" else op), None
    if c in _SINGLE:
        return "OP", i + 1, c, None
    if c in _DASHES:
        note("typographic dashes read as '-'")
        return "OP", i + 1, "-", "-"
    return "ERROR", i + 1, None, f"unexpected character {c!r}"


def _line_end(text: str, i: int) -> int:
    stop = text.find("\n", i)
    return len(text) if stop < 0 else stop


def _after_dot_op(tokens: list[Token]) -> bool:
    """A '.' right after an identifier / ')' is property access (`p.5` is not a number)."""
    return bool(tokens) and tokens[-1].kind in ("IDENT", "QIDENT") and not tokens[-1].space_before


def _read_string(text: str, i: int, close: str) -> tuple[str, int]:
    """Decode a string body starting after its opening quote; (value, offset after the close) or (_, -1)."""
    out: list[str] = []
    n = len(text)
    while i < n:
        c = text[i]
        if c == close:
            return "".join(out), i + 1
        if c == "\\" and i + 1 < n:
            e = text[i + 1]
            if e in _ESCAPES:
                out.append(_ESCAPES[e])
                i += 2
                continue
            width = 4 if e == "u" else 8 if e == "U" else 0
            digits = text[i + 2 : i + 2 + width]
            if width and len(digits) == width and all(d in "0123456789abcdefABCDEF" for d in digits):
                code = int(digits, 16)
                if code <= 0x10FFFF and not 0xD800 <= code <= 0xDFFF:
                    out.append(chr(code))
                    i += 2 + width
                    continue
            out.append(c + e)  # unknown escape (a regex's `\d`): kept verbatim
            i += 2
            continue
        out.append(c)
        i += 1
    return "", -1


def _read_backtick(text: str, i: int) -> tuple[str, int]:
    out: list[str] = []
    n = len(text)
    while i < n:
        if text[i] == "`":
            if i + 1 < n and text[i + 1] == "`":  # `` is an escaped backtick
                out.append("`")
                i += 2
                continue
            return "".join(out), i + 1
        out.append(text[i])
        i += 1
    return "", -1


# --- cutting the query out of an LLM answer ---------------------------------------------------------------

_FENCE = re.compile(r"```([^\n`]*)\n?(.*?)(?:```|\Z)", re.DOTALL)
_FENCE_MARK = re.compile(r"```[A-Za-z0-9_+-]*")
_CLAUSE_WORD = re.compile(r"\b(?:MATCH|RETURN)\b", re.IGNORECASE)
_START_KEYWORDS = ("MATCH", "OPTIONAL", "WITH", "RETURN", "UNWIND", "CALL", "CREATE", "MERGE")
_STARTS = (
    re.compile(r"\b(?:OPTIONAL\s+)?MATCH\s*(?:\(|\w+\s*=)"),
    re.compile(r"\b(?:optional\s+)?match\s*(?:\(|\w+\s*=)", re.IGNORECASE),
    re.compile(r"\b(?:RETURN|WITH|UNWIND|CALL|CREATE|MERGE|DELETE|DETACH|SET|REMOVE|FOREACH|LOAD)\b"),
)


def _from_json(text: str, warnings: list[str]) -> str:
    """`{"query": "MATCH ..."}` or a JSON string: the string holding the query, else the text unchanged."""
    stripped = text.strip()
    if stripped[:1] not in ("{", '"'):
        return text
    try:
        data = json.loads(stripped)
    except (ValueError, RecursionError):
        return text
    values = [data] if isinstance(data, str) else list(data.values()) if isinstance(data, dict) else []
    for value in values:
        if isinstance(value, str) and _CLAUSE_WORD.search(value):
            warnings.append("the query was read from a JSON answer")
            return value
    return text


def extract_cypher(text: str, warnings: list[str]) -> str:
    """The query inside an LLM answer: the first fenced block holding a query, from its first clause on."""
    if len(text) > MAX_INPUT_CHARS:
        warnings.append(f"input longer than {MAX_INPUT_CHARS} characters was truncated")
        text = text[:MAX_INPUT_CHARS]
    text = _from_json(text, warnings)
    if "```" in text:
        blocks = []
        for m in _FENCE.finditer(text):
            head, body = m.group(1), m.group(2)
            first = head.strip().split(" ", 1)[0].upper() if head.strip() else ""
            if head.strip() and (first in _START_KEYWORDS or " " in head.strip() or "(" in head):
                body = head + "\n" + body  # ```MATCH (p) RETURN p``` on one line: no language tag
            blocks.append(body)
        with_query = [b for b in blocks if _CLAUSE_WORD.search(b)]
        if len(with_query) > 1:
            warnings.append(f"the answer holds {len(with_query)} query blocks; only the first is read")
        # no block holds a query (a stray fence after it, say): read the whole answer without the fences
        text = with_query[0] if with_query else _FENCE_MARK.sub("\n", text)
    for pattern in _STARTS:
        found = pattern.search(text)
        if found:
            if text[: found.start()].strip():
                warnings.append("text before the first clause was ignored")
            return text[found.start() :]
    return text
