"""The `Parser` port (AF-Retriever steps 1–3): a question in, one `StructuredQuery` out.

Two implementations produce the same output: the encoder parser (the default, no LLM) and the LLM parser (target
type prompt + Cypher prompt, Cypher parsed by `parser.cypher`). A parser never raises on what the question or an
LLM says: unusable parts are dropped and recorded in `StructuredQuery.warnings`; it raises only when a backend it
needs is down (e.g. `LlmError`), which the caller may answer with a fallback parser.
"""

from __future__ import annotations

from typing import Protocol

from skbqa.parser.query import StructuredQuery
from skbqa.strategies.base import QueryContext


class Parser(Protocol):
    name: str

    def parse(self, query: QueryContext) -> StructuredQuery:
        """The structured form of `query.question`; the target symbol carries the predicted target type."""
        ...
