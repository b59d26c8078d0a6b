"""Which core each stage service runs, and running one (answering around a lost encoder or vector store)."""

from __future__ import annotations

from skbqa.observability.metrics import get_metrics
from skbqa.serving.stages.core import (
    StageBase,
    StageCore,
    StageMessage,
    StageOutput,
    StageRuntime,
)
from skbqa.serving.stages.grounding import GroundingStage
from skbqa.serving.stages.parser import ParseStage
from skbqa.serving.stages.ranking import RankingStage
from skbqa.serving.stages.reranker import RerankStage
from skbqa.serving.stages.symbols import SymbolsStage

STAGE_CLASSES: dict[str, type[StageBase]] = {
    "parser": ParseStage,
    "symbols": SymbolsStage,
    "grounding": GroundingStage,
    "ranking": RankingStage,
    "reranker": RerankStage,
}


def build_stage(role: str, runtime: StageRuntime) -> StageCore:
    """One stage's core, or for a co-located role ("parser+symbols+grounding") the chain of its members' cores,
    which share `runtime` (one copy of the index in the process)."""
    from skbqa.serving.stages.chain import StageChain, is_colocated, stage_roles

    if is_colocated(role):
        return StageChain([build_stage(member, runtime) for member in stage_roles(role)], run_stage)
    return STAGE_CLASSES[role](runtime)  # type: ignore[return-value]


def run_stage(core: StageCore, message: StageMessage) -> StageOutput:
    """`core.process`, answering around a lost encoder server or vector store (distributed/degrade.py)."""
    from skbqa.serving.degrade import FALLBACK_STRATEGY, DegradedBackendError, degrade

    try:
        return core.process(message)
    except DegradedBackendError as exc:
        if message.strategy == FALLBACK_STRATEGY:
            raise
        get_metrics().count_error(core.role, "degraded")
        return core.process(degrade(message, exc))
