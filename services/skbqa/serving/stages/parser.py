"""The parser service's core: af steps 1–3 (the structured query)."""

from __future__ import annotations

from skbqa.bus import topics
from skbqa.serving import codec
from skbqa.serving.stages.core import (
    StageBase,
    StageMessage,
    StageOutput,
    af_plan,
    close_query,
    copy_message,
    open_query,
    report_llm,
    sage_of,
)


class ParseStage(StageBase):
    """Steps 1–3 (af): the structured query."""

    role, input_topic, output_topic = "parser", topics.QUERY, topics.PARSED
    # Start the question's embedding as the stage begins (QueryContext.encode_ahead): every af request needs it
    # (here for the phrases, later for ranking's vector strand), and a remote encoder's round trip then overlaps
    # the parse. False: the previous sequential calls (bench/triton_calls.py measures both in one run).
    encode_ahead = True

    def warm(self) -> None:
        self.runtime.af.warm(self.runtime.encoder)

    def _process(self, message: StageMessage) -> StageOutput:
        out = copy_message(message)
        plan = af_plan(self.runtime, message)
        if plan is not None:
            query = open_query(message, self.runtime.encoder)
            if self.encode_ahead:
                query.encode_ahead()
            if plan.sage is not None:
                sage_of(self.runtime).graph()  # as embedded sage: fail before running the base without a graph
                query.embedding  # noqa: B018 -- as embedded sage: embed once, the base's context inherits it
            parsed = self.runtime.af.parse.run(plan.af_query(query), plan.config)
            report_llm(self.role, query.notes.get("llm_usage"), query.notes.get("parser_fallback"))
            out.parsed.CopyFrom(codec.query_to_proto(parsed))
            out.parsed_set = True
            close_query(out, query)
        return StageOutput(out)
