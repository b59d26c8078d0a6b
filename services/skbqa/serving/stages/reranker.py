"""The reranker service's core: af step 8, then the final answer for the waiting gateway."""

from __future__ import annotations

from skbqa.bus import topics
from skbqa.engine.answers import render
from skbqa.serving import codec
from skbqa.serving.stages.core import (
    AnswerEnvelope,
    StageBase,
    StageMessage,
    StageOutput,
    af_plan,
    answer_envelope,
    elapsed_start,
    open_query,
    report_llm,
    sage_of,
)


class RerankStage(StageBase):
    """Step 8 (af), then the answer: node ids, names, reasons and evidence, for the waiting gateway."""

    role, input_topic, output_topic = "reranker", topics.RANKED, topics.ANSWER

    def _process(self, message: StageMessage) -> StageOutput:
        query = open_query(message, self.runtime.encoder)
        candidates = codec.candidates_from_proto(message.candidates)
        plan = af_plan(self.runtime, message)
        if plan is not None:
            parsed = codec.query_from_proto(message.parsed) if message.parsed_set else None
            af_query = plan.af_query(query)
            candidates = self.runtime.af.rerank.run(
                af_query, parsed, candidates, message.rerank_count, plan.config
            )
            report_llm(self.role, query.notes.get("rerank_usage"), query.notes.get("rerank"))
            if plan.sage is not None and plan.reranks:
                candidates = sage_of(self.runtime).expand(query, plan.sage, candidates, message.k)
        final = render(self.runtime.stores, query, message.strategy, message.k, candidates, elapsed_start(message))
        timings = dict(message.timings_ms)
        for name, value in final.timings_ms.items():
            timings[name] = value if name == "total" else timings.get(name, 0.0) + value
        total = timings.pop("total")
        final.timings_ms = {**{name: round(value, 3) for name, value in sorted(timings.items())}, "total": total}
        response = codec.answer_to_proto(final, message.request_id)
        return StageOutput(
            None, [answer_envelope(message, AnswerEnvelope.FINAL, self.role, response.SerializeToString())]
        )
