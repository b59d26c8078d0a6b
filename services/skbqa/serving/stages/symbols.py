"""The symbols service's core: af step 4 (candidate nodes per constant, attribute filters)."""

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
)


class SymbolsStage(StageBase):
    """Step 4 (af): candidate nodes per constant, attribute filters."""

    role, input_topic, output_topic = "symbols", topics.PARSED, topics.SYMBOLS

    def warm(self) -> None:
        self.runtime.af.lookups.lexicon()
        self.runtime.af.lookups.catalog()

    def _process(self, message: StageMessage) -> StageOutput:
        out = copy_message(message)
        plan = af_plan(self.runtime, message)
        if plan is not None and message.parsed_set:
            query = open_query(message, self.runtime.encoder)
            if plan.config.grounds:
                parsed = codec.query_from_proto(message.parsed)
                ranked = self.runtime.af.symbols.run(plan.af_query(query), parsed, plan.config)
                # symbols() may move unapplicable constraints into the text constraints: send the query on too
                out.parsed.CopyFrom(codec.query_to_proto(parsed))
                del out.symbol_sets[:]
                out.symbol_sets.extend(codec.symbol_sets_to_proto(ranked))
                out.symbols_set = True
                close_query(out, query)
        return StageOutput(out)
