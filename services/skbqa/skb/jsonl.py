"""Line readers for `.jsonl` / `.jsonl.gz` files that report the file name and line number of bad input."""

from __future__ import annotations

import gzip
import json
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
                if not isinstance(obj, dict):
                    raise BundleError(path.name, lineno, "each line must be a JSON object")
                yield lineno, obj
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        if isinstance(exc, BundleError):
            raise
        raise BundleError(path.name, None, f"cannot read file: {exc}") from None
