"""The grounding service's core: af step 5 (Algorithm 2 with scope expansion) and the partial answer for AskStream."""

from __future__ import annotations

import numpy as np

from skbqa.bus import topics
from skbqa.common.errors import SkbqaError
from skbqa.engine.answers import render
from skbqa.serving import codec
from skbqa.serving.stages.core import (
    AnswerEnvelope,
    StageBase,
    StageMessage,
    StageOutput,
    af_plan,
    answer_envelope,
    close_query,
    copy_message,
    elapsed_start,
    open_query,
)


class GroundingStage(StageBase):
    """Step 5 (af): Algorithm 2 with scope expansion; the partial answer for AskStream."""

    role, input_topic, output_topic = "grounding", topics.SYMBOLS, topics.GROUNDED

    def probe(self) -> str:
        """Grounding cannot be approximated: without its graph store the service is not serving."""
        try:
            self.runtime.stores.graph.degree(np.zeros(1, np.int64))
        except SkbqaError as exc:
            return str(exc).splitlines()[0]
        return ""

    def _process(self, message: StageMessage) -> StageOutput:
        out = copy_message(message)
        answers: list[AnswerEnvelope] = []
        plan = af_plan(self.runtime, message)
        if plan is not None and message.symbols_set:
            query = open_query(message, self.runtime.encoder)
            parsed = codec.query_from_proto(message.parsed)
            ranked = codec.symbol_sets_from_proto(message.symbol_sets)
            scope = self.runtime.af.ground.run(plan.af_query(query), parsed, ranked, plan.config)
            out.scope.CopyFrom(codec.scope_to_proto(scope))
            if scope.relaxed is not None:  # the later stages read the parse the graph answered
                parsed = scope.relaxed
                out.parsed.CopyFrom(codec.query_to_proto(parsed))
            out.scope_set = True
            close_query(out, query)
            if message.stream_partial:
                partial = render(
                    self.runtime.stores,
                    query,
                    message.strategy,
                    message.k,
                    self.runtime.af.rank.grounded_candidates(parsed, scope, message.k),
                    elapsed_start(message),
                )
                partial.timings_ms = {**dict(out.timings_ms), "total": partial.timings_ms["total"]}
                response = codec.answer_to_proto(partial, message.request_id, partial=True)
                answers.append(
                    answer_envelope(message, AnswerEnvelope.PARTIAL, self.role, response.SerializeToString())
                )
        return StageOutput(out, answers)
