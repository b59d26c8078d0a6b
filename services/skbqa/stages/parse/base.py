"""The `Parser` port (AF-Retriever steps 1–3): a question in, one `StructuredQuery` out.

Two implementations produce the same output: the encoder parser (the default, no LLM) and the LLM parser (target
type prompt + Cypher prompt, Cypher parsed by `cypher/`). A parser never raises on what the question or an
LLM says: unusable parts are dropped and recorded in `StructuredQuery.warnings`; it raises only when a backend it
needs is down (e.g. `LlmError`), which the caller may answer with a fallback parser.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from skbqa.query.context import QueryContext
from skbqa.query.structured import StructuredQuery


class Parser(Protocol):
    name: str

    def parse(self, query: QueryContext) -> StructuredQuery:
        """The structured form of `query.question`; the target symbol carries the predicted target type."""
        ...


@dataclass(frozen=True)
class Reading:
    """Which of the encoder parser's reading mechanisms a request uses (`AfConfig` switches; all on when a caller
    asks the parser directly without one)."""

    head_noun: bool = True  # the target type from the head noun phrase and type synonyms, not the first type word
    chains: bool = True  # chains through an unnamed node
    typos: bool = True  # names written with a one-edit typo
