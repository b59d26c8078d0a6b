"""The three doors through which caller data reaches an nGQL statement: identifiers, strings and integers.

- **identifiers** (`quote_ident`): nGQL's lexer accepts only ``[A-Za-z][A-Za-z0-9_]*`` between backticks and has
  no escape sequence there at all, so a name that does not match is refused with ValueError rather than
  "escaped". `safe_label` first maps arbitrary SKB names (``gene/protein``, ``a`b``) onto that alphabet,
  deterministically, adding a short hash whenever it had to change the name so two names never share a label.
- **string literals** (`quote_string`): double-quoted, with the escapes graphd's scanner understands.
- **integers** (`format_vid`, `literal`): only values that pass `operator.index` (real integers, numpy integers;
  not floats, not strings, not bools) and fit INT64 are formatted, with `str()` of a Python int.
Pure functions: no I/O and no nebula3 import.
"""

from __future__ import annotations

import hashlib
import math
import operator
import re
from collections.abc import Iterable

import numpy as np

INT64_MAX = 2**63 - 1
# graphd rejects the literal 9223372036854775808 unless a unary minus precedes it, and VID / rank positions are
# reported to reject it even then; refusing INT64_MIN everywhere keeps every emitted integer parseable.
INT64_MIN_ACCEPTED = -INT64_MAX

_LABEL = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
MAX_LABEL = 128  # graphd allows 4,096; meta keys and error messages stay readable well below that

# --- identifiers ------------------------------------------------------------------------------------------------


def is_label(name: str) -> bool:
    return isinstance(name, str) and len(name) <= MAX_LABEL and _LABEL.fullmatch(name) is not None


def quote_ident(name: str) -> str:
    """`name` between backticks, so that keywords work as names; refuses what no backtick form can express."""
    if not is_label(name):
        raise ValueError(
            f"{name!r} is not a NebulaGraph identifier ([A-Za-z][A-Za-z0-9_]*, at most {MAX_LABEL} characters); "
            "map SKB names with safe_label first"
        )
    return f"`{name}`"


def safe_label(name: str, *, force_hash: bool = False) -> str:
    """A valid identifier for any string: `name` itself when it already is one, else a readable stem + hash."""
    if is_label(name) and not force_hash:
        return name
    stem = re.sub(r"[^A-Za-z0-9_]+", "_", name).strip("_")[:48] or "x"
    if not stem[0].isalpha():
        stem = "x" + stem
    digest = hashlib.sha1(name.encode("utf-8", "surrogatepass")).hexdigest()[:10]
    return f"{stem}_{digest}"


def unique_label(name: str, taken: set[str]) -> str:
    """`safe_label(name)`, hashed if that collides with `taken` (reserved or already assigned); adds it to `taken`."""
    label = safe_label(name)
    if label in taken:
        label = safe_label(name, force_hash=True)
    if label in taken:
        raise ValueError(f"cannot give {name!r} a NebulaGraph identifier distinct from {sorted(taken)}")
    taken.add(label)
    return label


# --- literals ---------------------------------------------------------------------------------------------------

# graphd's scanner (src/parser/scanner.lex, DQ_STR state) reads: any byte except backslash, newline and double
# quote literally; a raw newline ends the statement with an error; \n \t \r \b \f and \<any other char> as in C;
# \ooo (one to three octal digits) as one byte. Flex takes the *longest* match, and a rule \\[0-9]+ rejects
# "backslash + decimal digits": so "\001" followed by "7" would be read as the invalid "\0017". Every digit that
# directly follows an octal escape is therefore written as an octal escape too ("\001\067").
_NAMED = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t", "\x08": "\\b", "\x0c": "\\f"}
_SPECIAL = re.compile(r'[\\"\n\r\t\x08\x0c]|[\x00-\x1f\x7f][0-9]*')
_SURROGATE = re.compile(r"[\ud800-\udfff]")


def _escape(match: re.Match[str]) -> str:
    text = match.group()
    named = _NAMED.get(text)
    if named is not None:
        return named
    return "".join(f"\\{ord(ch):03o}" for ch in text)


def quote_string(value: str) -> str:
    """A double-quoted nGQL string literal that graphd reads back as exactly `value`.

    NUL and other control characters become octal escapes (graphd copies raw runs with strncpy, which would turn
    a raw NUL and everything after it in the run into zero bytes). Non-ASCII text is sent as UTF-8 unchanged.
    Lone surrogates (which cannot be encoded as UTF-8 and so cannot be sent at all) become U+FFFD.
    Octal escapes need graphd's default ``--disable_octal_escape_char=false``; the loader checks that first.
    """
    if not isinstance(value, str):
        raise TypeError(f"quote_string takes str, not {type(value).__name__}")
    value = _SURROGATE.sub("\ufffd", value)
    return '"' + _SPECIAL.sub(_escape, value) + '"'


def _checked_int(value: object, low: int, high: int, what: str) -> int:
    if isinstance(value, bool | np.bool_):
        raise TypeError(f"{what} must be an integer, not a bool")
    try:
        number = operator.index(value)  # type: ignore[arg-type]  # TypeError for non-integers, caught below
    except TypeError:
        raise TypeError(f"{what} must be an integer, not {type(value).__name__}") from None
    if not low <= number <= high:
        raise ValueError(f"{what} {number} is outside [{low}, {high}]")
    return int(number)


def format_vid(value: object) -> str:
    """A vertex id: a non-negative INT64 (node positions, and META_VID)."""
    return str(_checked_int(value, 0, INT64_MAX, "vertex id"))


def vid_list(values: Iterable[object]) -> str:
    text = ", ".join(format_vid(v) for v in values)
    if not text:
        raise ValueError("a vertex list needs at least one vertex id")
    return text


def format_double(value: float) -> str:
    """Positional notation (no exponent), the one float form every graphd version's lexer reads."""
    if not math.isfinite(value):
        raise ValueError(f"nGQL has no literal for {value}")
    return np.format_float_positional(value, unique=True, trim="0")


def literal(value: object) -> str:
    """One property value: NULL, true/false, an INT64, a finite double, or a string."""
    if value is None:
        return "NULL"
    if isinstance(value, bool | np.bool_):
        return "true" if value else "false"
    if isinstance(value, int | np.integer):
        return str(_checked_int(value, INT64_MIN_ACCEPTED, INT64_MAX, "integer property"))
    if isinstance(value, float | np.floating):
        return format_double(float(value))
    if isinstance(value, str):
        return quote_string(value)
    raise TypeError(f"no nGQL literal for {type(value).__name__}")
