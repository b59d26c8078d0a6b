"""Strategy specs: `af` or `af[steps=1-5,reranker=none]` — a strategy name with per-request options.

Used by `skbqa eval --strategy` (several specs, comma-separated, so one run can hold an ablation) and
`skbqa ask --strategy`. Values read as booleans, integers or floats when they look like one, else strings.
"""

from __future__ import annotations

import re
from typing import Any

from skbqa.common.errors import InvalidInputError

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
    text = raw.strip()
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if re.fullmatch(r"[+-]?\d+", text):
        return int(text)
    if re.fullmatch(r"[+-]?(\d+\.\d*|\.\d+|\d+(\.\d*)?[eE][+-]?\d+)", text):
        return float(text)
    return text


def parse_options(pairs: list[str]) -> dict[str, Any]:
    options: dict[str, Any] = {}
    for pair in pairs:
        if "=" not in pair:
            raise InvalidInputError(f"option {pair!r} is not KEY=VALUE")
        key, value = pair.split("=", 1)
        if not key.strip():
            raise InvalidInputError(f"option {pair!r} has no key")
        options[key.strip()] = parse_value(value)
    return options


def parse_spec(spec: str) -> tuple[str, dict[str, Any]]:
    match = _SPEC.match(spec)
    if not match:
        raise InvalidInputError(f"cannot read strategy spec {spec!r}; write NAME or NAME[key=value,...]")
    name, body = match.group(1), match.group(2)
    pairs = [p for p in (body or "").split(",") if p.strip()]
    return name, parse_options(pairs)
