"""One exception tree for the whole package; every error carries structured details.

The serving layer maps these classes to gRPC status codes in one table (`serving/status.py`); the CLI prints
`str(error)` as one line.
"""

from __future__ import annotations

from typing import Any


class SkbqaError(Exception):
    """Base of every error skbqa raises on purpose."""

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details = details


class InvalidInputError(SkbqaError):
    """The caller sent something unusable (empty question, unknown strategy, bad k)."""


ECHO_LIMIT = 80


def clip(text: str, limit: int = ECHO_LIMIT) -> str:
    """Client input as an error message may quote it: one line (non-printable characters escaped as `repr` does)
    and at most `limit` characters, the last one an ellipsis when cut."""
    text = text[: limit + 1]  # enough to tell whether it is cut: escaping only lengthens it
    if not text.isprintable():
        text = repr(text)[1:-1]
    return text if len(text) <= limit else text[: limit - 1] + "…"


class BundleError(SkbqaError):
    """An SKB bundle (or STaRK directory) is malformed; names the file, the line and the problem."""

    def __init__(self, file: str, line: int | None, problem: str) -> None:
        where = f"{file}:{line}" if line is not None else file
        super().__init__(f"{where}: {problem}", file=file, line=line, problem=problem)
        self.file = file
        self.line = line
        self.problem = problem


class IndexStoreError(SkbqaError):
    """An index directory is missing, incomplete, or incompatible with the running configuration."""


class ModelError(SkbqaError):
    """An encoder or other model could not be loaded or run."""


class BackendUnavailableError(SkbqaError):
    """An optional backend (Milvus, Kafka, ...) is not installed or not reachable."""
