"""Settings of the `af` strategy and their per-request overrides (`QueryContext.options`)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from skbqa.common.errors import InvalidInputError

# The paper's ablation rows (Table 5): which steps run.
STEP_SETS = ("1+7", "1-5", "1-6", "1-7", "1-8")
RERANKERS = ("none", "local", "pointwise", "listwise", "pairwise")


@dataclass(frozen=True)
class AfConfig:
    k: int = 20  # the pipeline's k: answers grounded/filled/reranked; a longer requested list continues by step 7
    alpha: float = 2 / 3  # share of the k answers taken from the grounded (graph) strand
    l_max: int = 100  # candidates per constant at most (scope expansion limit)
    strict: bool = True  # filter by edge types too (node types are always filtered: the paper's best hybrid)
    steps: str = "1-8"
    parser: str = "encoder"  # "encoder" (no LLM) or "llm" (when the engine has a ChatModel)
    reranker: str = "none"  # measured: the local reranker lowers hit@1 on biomed dev (see bench/results)
    embedding_set: str = "relations"  # document embeddings used by steps 6–7
    text_weight: float = 0.5  # steps 6–7: weight of BM25 over the question's text constraints vs cosine
    tiered: bool = True  # step 6: answers found with fewer candidates per constant rank first

    def with_options(self, options: dict[str, Any]) -> AfConfig:
        if not options:
            return self
        unknown = set(options) - {
            "k",
            "alpha",
            "l_max",
            "strict",
            "steps",
            "parser",
            "reranker",
            "text_weight",
            "tiered",
        }
        # Read by the LLM rerankers themselves (validated there): per-request deadline and fan-out.
        passed_on = {"rerank_deadline_s", "rerank_concurrency"}
        unknown -= passed_on
        if unknown:
            raise InvalidInputError(f"unknown af option(s): {', '.join(sorted(unknown))}")
        updated = replace(self, **{k: v for k, v in options.items() if k not in passed_on})
        updated.validate()
        return updated

    def validate(self) -> None:
        if not isinstance(self.k, int) or isinstance(self.k, bool) or not 1 <= self.k <= 1000:
            raise InvalidInputError(f"k must be an integer from 1 to 1000, got {self.k!r}")
        if not isinstance(self.alpha, int | float) or not 0.0 <= float(self.alpha) <= 1.0:
            raise InvalidInputError(f"alpha must be within [0, 1], got {self.alpha!r}")
        if not isinstance(self.l_max, int) or isinstance(self.l_max, bool) or not 0 <= self.l_max <= 10_000:
            raise InvalidInputError(f"l_max must be an integer from 0 to 10000, got {self.l_max!r}")
        if not isinstance(self.strict, bool):
            raise InvalidInputError("strict must be true or false")
        if self.steps not in STEP_SETS:
            raise InvalidInputError(f"steps must be one of {', '.join(STEP_SETS)}, got {self.steps!r}")
        if self.reranker not in RERANKERS:
            raise InvalidInputError(f"reranker must be one of {', '.join(RERANKERS)}, got {self.reranker!r}")
        if not 0.0 <= float(self.text_weight) <= 1.0:
            raise InvalidInputError(f"text_weight must be within [0, 1], got {self.text_weight!r}")
