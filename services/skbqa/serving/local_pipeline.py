"""All five stage cores in sequence in one process: the embedded server's backend (no bus)."""

from __future__ import annotations

from collections.abc import Callable

from skbqa.serving.stages.core import ROLES, AnswerEnvelope, StageMessage, StageRuntime
from skbqa.serving.stages.registry import build_stage, run_stage


class LocalPipeline:
    def __init__(self, runtime: StageRuntime) -> None:
        self.runtime = runtime
        self.stages = [build_stage(role, runtime) for role in ROLES]

    def warm(self) -> None:
        for stage in self.stages:
            stage.warm()

    def probe(self) -> str:
        """ "" when every stage can serve, else the first reason one cannot."""
        return next((reason for stage in self.stages if (reason := stage.probe())), "")

    def run(self, message: StageMessage, on_answer: Callable[[AnswerEnvelope], None]) -> None:
        current: StageMessage | None = message
        for stage in self.stages:
            assert current is not None
            output = run_stage(stage, current)
            for envelope in output.answers:
                on_answer(envelope)
            current = output.forward
