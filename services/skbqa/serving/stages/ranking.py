"""The ranking service's core: af steps 6–7, the SAGE expansion of sage seeded by af, or any other strategy whole."""

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
    sage_of,
)


class RankingStage(StageBase):
    """Steps 6–7 (af, and sage seeded by af: then the SAGE expansion unless step 8 comes first), or the whole of
    any other strategy."""

    role, input_topic, output_topic = "ranking", topics.GROUNDED, topics.RANKED

    def warm(self) -> None:
        self.runtime.af.lookups.lexicon()

    def _process(self, message: StageMessage) -> StageOutput:
        out = copy_message(message)
        query = open_query(message, self.runtime.encoder)
        k = message.k
        plan = af_plan(self.runtime, message)
        if plan is not None:
            parsed = codec.query_from_proto(message.parsed)
            scope = codec.scope_from_proto(message.scope, parsed) if message.scope_set else None
            candidates, head = self.runtime.af.rank.run(plan.af_query(query), parsed, scope, plan.config, k)
            if plan.sage is not None and not plan.reranks:
                candidates = sage_of(self.runtime).expand(query, plan.sage, candidates, k)
                head = 0  # nothing left for step 8 (it would not have changed the seeds)
        else:
            candidates = self.runtime.strategies[message.strategy].retrieve(query, k)[:k]
            head = len(candidates)
        del out.candidates[:]
        out.candidates.extend(codec.candidates_to_proto(candidates))
        out.rerank_count = head
        out.ranked_set = True
        close_query(out, query)
        return StageOutput(out)
