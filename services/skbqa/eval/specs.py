"""Strategy specs: `af` or `af[steps=1-5,reranker=none]` — a strategy name with per-request options.

Used by `skbqa eval --strategy` (several specs, comma-separated, so one run can hold an ablation) and
`skbqa ask --strategy`. Values read as booleans, integers or floats when they look like one, else strings; a
number longer than MAX_NUMBER_CHARS is refused (Python refuses to convert integers over 4,300 digits, and no
option needs more than a few).
"""

from __future__ import annotations

import re
from typing import Any

from skbqa.common.errors import InvalidInputError, clip

MAX_NUMBER_CHARS = 100
_INT = re.compile(r"[+-]?\d+")
_FLOAT = re.compile(r"[+-]?(\d+\.\d*|\.\d+|\d+(\.\d*)?[eE][+-]?\d+)")
_SPEC = re.compile(r"^\s*([A-Za-z0-9_-]+)\s*(?:\[(.*)\])?\s*$")


def split_specs(text: str) -> list[str]:
    """Split on commas outside brackets."""
    specs, depth, current = [], 0, ""
    for char in text:
        depth += {"[": 1, "]": -1}.get(char, 0)
        if char == "," and depth == 0:
            specs.append(current.strip())
            current = ""
        else:
            current += char
    specs.append(current.strip())
    return [s for s in specs if s]


def parse_value(raw: str) -> Any:
    """`true`/`false`, an int, a float, else the text itself. InvalidInputError (one line, the value clipped) for a
    number longer than MAX_NUMBER_CHARS."""
    text = raw.strip()
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    number = _INT.fullmatch(text) is not None
    if not number and _FLOAT.fullmatch(text) is None:
        return text
    if len(text) > MAX_NUMBER_CHARS:
        raise InvalidInputError(
            f"number {clip(text, 24)} is too long ({len(text)} characters; at most {MAX_NUMBER_CHARS})"
        )
    return int(text) if number else float(text)


def parse_option_value(name: str, raw: str) -> Any:
    """`parse_value`, its refusal naming the option."""
    try:
        return parse_value(raw)
    except InvalidInputError as exc:
        raise InvalidInputError(f"option {clip(name)}: {exc}") from None


def parse_options(pairs: list[str]) -> dict[str, Any]:
    options: dict[str, Any] = {}
    for pair in pairs:
        if "=" not in pair:
            raise InvalidInputError(f"option '{clip(pair)}' is not KEY=VALUE")
        key, value = pair.split("=", 1)
        if not key.strip():
            raise InvalidInputError(f"option '{clip(pair)}' has no key")
        options[key.strip()] = parse_option_value(key.strip(), value)
    return options


def parse_spec(spec: str) -> tuple[str, dict[str, Any]]:
    match = _SPEC.match(spec)
    if not match:
        raise InvalidInputError(f"cannot read strategy spec {spec!r}; write NAME or NAME[key=value,...]")
    name, body = match.group(1), match.group(2)
    pairs = [p for p in (body or "").split(",") if p.strip()]
    return name, parse_options(pairs)
