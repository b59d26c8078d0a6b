"""`af`: the AF-Retriever pipeline (Algorithm 1) as a sequence of the five stage steps.

1–3  parse the question into a StructuredQuery            stages/parse/step.py
4    symbol candidates per constant, attribute filters    stages/symbols/step.py
5    ground the triplets with scope expansion             stages/grounding/step.py
6–7  rank the grounded set, fill from the predicted type  stages/ranking/step.py
8    rerank the k                                         stages/rerank/step.py
The distributed form runs the same step objects, one per service (skbqa.serving). `steps` selects the paper's
ablation rows: 1+7, 1-5, 1-6, 1-7, 1-8.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from skbqa.models.chat import ChatModel
from skbqa.query.context import Candidate, QueryContext
from skbqa.query.encoder import Encoder
from skbqa.stages.config import AfConfig
from skbqa.stages.grounding.step import GroundStep
from skbqa.stages.parse.base import Parser
from skbqa.stages.parse.step import ParseStep
from skbqa.stages.ranking.step import RankStep
from skbqa.stages.rerank.base import Reranker
from skbqa.stages.rerank.step import RerankStep
from skbqa.stages.symbols.step import SymbolStep
from skbqa.stores.index import IndexStores
from skbqa.stores.lookups import Lookups


class AfStrategy:
    name = "af"

    def __init__(
        self,
        stores: IndexStores,
        *,
        parser: Parser | None = None,
        chat: ChatModel | None = None,
        rerankers: Mapping[str, Reranker] | None = None,
        config: AfConfig | None = None,
    ) -> None:
        self.config = config or AfConfig()
        self.config.validate()
        self.lookups = Lookups(stores.nodes)
        self.parse = ParseStep(stores, self.lookups, self.config, parser=parser, chat=chat)
        self.symbols = SymbolStep(stores, self.lookups)
        self.ground = GroundStep(stores, self.lookups.type_codes)
        self.rank = RankStep(stores, self.lookups.type_codes)
        self.rerank = RerankStep(stores, chat, rerankers)
        if chat is not None and config is None:
            self.config = replace(self.config, parser="llm")

    @property
    def parser(self) -> Parser:
        """The parser used unless a request names another."""
        return self.parse.parsers[self.config.parser]

    def warm(self, encoder: Encoder) -> None:
        self.parse.warm(encoder)

    def retrieve(self, query: QueryContext, k: int) -> list[Candidate]:
        """The pipeline's top `config.k`, then (for longer lists, e.g. MRR at depth 100) step 7's next best."""
        config = self.config.with_options(query.options)
        parsed = self.parse.run(query, config)
        scope = None
        if config.grounds:
            ranked = self.symbols.run(query, parsed, config)
            scope = self.ground.run(query, parsed, ranked, config)
            parsed = scope.relaxed or parsed  # the reading the graph answered
        candidates, head = self.rank.run(query, parsed, scope, config, k)
        return self.rerank.run(query, parsed, candidates, head, config)
