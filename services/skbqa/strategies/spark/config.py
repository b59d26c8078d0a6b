"""Settings of the `spark` strategy and their per-request overrides (`QueryContext.options`)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from skbqa.common.errors import InvalidInputError, clip

REQUEST_OPTIONS = ("strict", "l_max", "fill", "tiered", "dense_weight", "deadline_s")


@dataclass(frozen=True)
class SparkConfig:
    # Cypher: strict drops labels / edge types the schema lacks (with warnings) and filters grounding by edge
    # type; lenient maps them to the closest known name and grounds over any edge type where none matches.
    strict: bool = True
    l_max: int = 100  # candidates per named node in a graph query (the af scope-expansion limit)
    fill: bool = True  # after the plan's answers, continue with BM25 + cosine over the answer type up to k
    tiered: bool = True  # answers reached through a named node's best candidates rank before widened ones
    dense_weight: float = 0.5  # cosine vs BM25 in every fusion (search steps, final ranking, fallback)
    deadline_s: float = 10.0  # plan execution; steps not started by then are skipped (with a warning)
    max_set: int = 5_000  # nodes kept per step: bounds every set operation and the final ranking
    search_embedding: str = "document"  # search steps match a node's own text (name, text, attributes)
    rank_embedding: str = "relations"  # final ranking and fallback: documents with relations, as af steps 6–7
    max_tokens: int = 768  # the plan reply's budget
    llm_timeout: float | None = None  # seconds for the one LLM call; None = the chat model's own timeouts

    def with_options(self, options: dict[str, Any]) -> SparkConfig:
        if not options:
            return self
        unknown = set(options) - set(REQUEST_OPTIONS)
        if unknown:
            raise InvalidInputError(
                f"unknown spark option(s): {', '.join(clip(name) for name in sorted(unknown)[:3])}; known: {', '.join(REQUEST_OPTIONS)}"
            )
        updated = replace(self, **options)
        updated.validate()
        return updated

    def validate(self) -> None:
        for name in ("strict", "fill", "tiered"):
            if not isinstance(getattr(self, name), bool):
                raise InvalidInputError(f"{name} must be true or false")
        if not isinstance(self.l_max, int) or isinstance(self.l_max, bool) or not 1 <= self.l_max <= 10_000:
            raise InvalidInputError(f"l_max must be an integer from 1 to 10000, got {self.l_max!r}")
        weight = self.dense_weight
        if isinstance(weight, bool) or not isinstance(weight, int | float) or not 0.0 <= weight <= 1.0:
            raise InvalidInputError(f"dense_weight must be within [0, 1], got {weight!r}")
        deadline = self.deadline_s
        if isinstance(deadline, bool) or not isinstance(deadline, int | float) or not 0.0 <= deadline <= 300.0:
            raise InvalidInputError(f"deadline_s must be within [0, 300] seconds, got {deadline!r}")
        if not isinstance(self.max_set, int) or self.max_set < 1:
            raise InvalidInputError(f"max_set must be a positive integer, got {self.max_set!r}")
        if not isinstance(self.max_tokens, int) or self.max_tokens < 64:
            raise InvalidInputError(f"max_tokens must be an integer of at least 64, got {self.max_tokens!r}")
