"""Settings of the `af` strategy and their per-request overrides (`QueryContext.options`)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from skbqa.common.errors import InvalidInputError, clip

# The paper's ablation rows (Table 5): which steps run.
STEP_SETS = ("1+7", "1-5", "1-6", "1-7", "1-8")
RERANKERS = ("none", "local", "pointwise", "listwise", "pairwise")
# Read by the LLM rerankers themselves (validated there): per-request deadline and fan-out.
PASSED_ON = ("rerank_deadline_s", "rerank_concurrency")
# The options a request may give af (`QueryContext.options`).
REQUEST_OPTIONS = (
    "k",
    "alpha",
    "l_max",
    "strict",
    "steps",
    "parser",
    "reranker",
    "text_weight",
    "tiered",
    *PASSED_ON,
    *("head_noun", "chains", "typos", "blend", "relax"),
)
# The encoder parser's newer reading mechanisms and the strands' blending, each a per-request switch (on by default).
# All off reads questions as the first parser did (first type word, single edges, exact names, grounded answers
# always first): the ablation baseline.
READING_SWITCHES = ("head_noun", "chains", "typos", "blend", "relax")


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
    head_noun: bool = True  # step 1: the target type from the question's head noun phrase (and type synonyms)
    chains: bool = True  # step 3: chains through an unnamed node ("genes linked to a disease that …")
    typos: bool = True  # step 2: names written with a one-edit typo
    blend: bool = True  # steps 6–7: an unsure parse merges the grounded and vector strands by its confidence
    relax: bool = True  # step 5: a parse the graph has no answer to is read without its least name-like constant

    @property
    def grounds(self) -> bool:
        """Whether steps 4–5 run (the 1+7 row skips the graph strand)."""
        return self.steps != "1+7"

    @property
    def reranks(self) -> bool:
        """Whether step 8 can change the list."""
        return self.steps == "1-8" and self.reranker != "none"

    def with_options(self, options: dict[str, Any]) -> AfConfig:
        if not options:
            return self
        unknown = set(options) - set(REQUEST_OPTIONS)
        if unknown:
            names = ", ".join(clip(name) if name else "'' (an empty option name)" for name in sorted(unknown))
            raise InvalidInputError(f"unknown af option(s): {names}")
        updated = replace(self, **{k: v for k, v in options.items() if k not in PASSED_ON})
        updated.validate()
        return updated

    def validate(self) -> None:
        if not isinstance(self.k, int) or isinstance(self.k, bool) or not 1 <= self.k <= 1000:
            raise InvalidInputError(f"k must be an integer from 1 to 1000, got {clip(repr(self.k))}")
        if not isinstance(self.alpha, int | float) or not 0.0 <= float(self.alpha) <= 1.0:
            raise InvalidInputError(f"alpha must be within [0, 1], got {clip(repr(self.alpha))}")
        if not isinstance(self.l_max, int) or isinstance(self.l_max, bool) or not 0 <= self.l_max <= 10_000:
            raise InvalidInputError(f"l_max must be an integer from 0 to 10000, got {clip(repr(self.l_max))}")
        if not isinstance(self.strict, bool):
            raise InvalidInputError("strict must be true or false")
        for switch in READING_SWITCHES:
            if not isinstance(getattr(self, switch), bool):
                raise InvalidInputError(f"{switch} must be true or false")
        if self.steps not in STEP_SETS:
            raise InvalidInputError(f"steps must be one of {', '.join(STEP_SETS)}, got {clip(repr(self.steps))}")
        if self.reranker not in RERANKERS:
            raise InvalidInputError(
                f"reranker must be one of {', '.join(RERANKERS)}, got {clip(repr(self.reranker))}"
            )
        if not isinstance(self.text_weight, int | float) or not 0.0 <= float(self.text_weight) <= 1.0:
            raise InvalidInputError(f"text_weight must be within [0, 1], got {clip(repr(self.text_weight))}")
