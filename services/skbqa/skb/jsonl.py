"""Line readers for `.jsonl` / `.jsonl.gz` files that report the file name and line number of bad input."""

from __future__ import annotations

import gzip
import json
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from skbqa.common.errors import BundleError


def find_jsonl(directory: Path, stem: str) -> Path:
    """`stem.jsonl` or `stem.jsonl.gz` inside the bundle; a clear error when neither exists."""
    for candidate in (directory / f"{stem}.jsonl", directory / f"{stem}.jsonl.gz"):
        if candidate.is_file():
            return candidate
    raise BundleError(f"{stem}.jsonl", None, f"file not found in {directory} (also looked for {stem}.jsonl.gz)")


def read_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line number, object) for each non-blank line; malformed JSON or non-objects raise BundleError."""
    opener = gzip.open if path.name.endswith(".gz") else open
    try:
        with opener(path, "rt", encoding="utf-8") as handle:
            for lineno, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise BundleError(
                        path.name, lineno, f"malformed JSON: {exc.msg} (column {exc.colno})"
                    ) from None
                except (ValueError, RecursionError) as exc:  # a number over 4,300 digits; nesting too deep
                    raise BundleError(path.name, lineno, f"malformed JSON: {json_problem(exc)}") from None
                if not isinstance(obj, dict):
                    raise BundleError(path.name, lineno, "each line must be a JSON object")
                if has_lone_surrogate(line, obj):
                    raise BundleError(path.name, lineno, LONE_SURROGATE)
                yield lineno, obj
    except (OSError, EOFError, UnicodeDecodeError, zlib.error) as exc:
        if isinstance(exc, BundleError):
            raise
        if isinstance(exc, UnicodeDecodeError):
            raise BundleError(path.name, _first_bad_utf8_line(path, opener), f"not UTF-8: {exc.reason}") from None
        if isinstance(exc, zlib.error):  # damaged deflate data inside a .gz (gzip raises it as is)
            raise BundleError(path.name, None, f"cannot read file: corrupt gzip data ({exc})") from None
        raise BundleError(path.name, None, f"cannot read file: {exc}") from None


LONE_SURROGATE = "a string holds a lone surrogate escape (\\ud800-\\udfff), which is not valid Unicode"


def json_problem(exc: ValueError | RecursionError) -> str:
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    return str(exc).split(";")[0]  # "Exceeds the limit (4300 digits) for integer string conversion: ..."


def has_lone_surrogate(text: str, decoded: Any) -> bool:
    """Whether JSON `text` decoded to a lone surrogate (only a \\uD800-\\uDFFF escape can produce one; a valid
    pair decodes to one character). Such a string cannot be encoded as UTF-8, so no tokenizer or store takes it."""
    if "\\ud" not in text and "\\uD" not in text:
        return False
    try:
        json.dumps(decoded, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _first_bad_utf8_line(path: Path, opener: Any) -> int | None:
    """The number of the first line that is not valid UTF-8 (text mode decodes ahead, so it cannot tell)."""
    try:
        with opener(path, "rb") as handle:
            for lineno, raw in enumerate(handle, start=1):
                try:
                    raw.decode("utf-8")
                except UnicodeDecodeError:
                    return lineno
    except (OSError, EOFError, zlib.error):
        return None
    return None
