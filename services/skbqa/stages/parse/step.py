"""Steps 1–3 of af: the question → a StructuredQuery, by the encoder parser (no LLM, the default) or the LLM
parser (when the engine has a ChatModel). One step object serves the embedded strategy and the parser service."""

from __future__ import annotations

import threading

import numpy as np

from skbqa.common.errors import InvalidInputError
from skbqa.models.chat import ChatModel, LlmError
from skbqa.query.context import QueryContext
from skbqa.query.encoder import Encoder
from skbqa.query.structured import StructuredQuery, parse_summary
from skbqa.stages.config import AfConfig
from skbqa.stages.parse.attribute_mentions import AttributeSpotter
from skbqa.stages.parse.base import Parser, Reading
from skbqa.stages.parse.quantity_nouns import QuantityNouns
from skbqa.stores.index import IndexStores
from skbqa.stores.lookups import Lookups


class ParseStep:
    def __init__(
        self,
        stores: IndexStores,
        lookups: Lookups,
        config: AfConfig,
        *,
        parser: Parser | None = None,
        chat: ChatModel | None = None,
    ) -> None:
        from skbqa.stages.parse.encoder import EncoderParser

        self._stores = stores
        self._lookups = lookups
        self._embedding_set = config.embedding_set
        self._lock = threading.Lock()
        self._spotter: AttributeSpotter | None = None
        self.encoder_parser = EncoderParser(
            stores,
            lookups.lexicon,
            attribute_spotter=lambda text, node_type, bare: self.spotter()(text, node_type, bare=bare),
            quantities=QuantityNouns(lookups.catalog, stores.nodes.schema),
            guess_target_type=self.guess_target_type,
        )
        self.parsers: dict[str, Parser] = {"encoder": parser or self.encoder_parser}
        if chat is not None:
            from skbqa.stages.parse.llm import LlmParser

            self.parsers["llm"] = LlmParser.from_stores(
                stores, chat, mode="strict" if config.strict else "lenient"
            )

    def warm(self, encoder: Encoder) -> None:
        """Build what the first request would otherwise pay for (lexicon, attribute vocabularies, edge embeddings)."""
        self._lookups.lexicon()
        spotter = self.spotter()
        for node_type in self._stores.nodes.schema.node_type_names:
            spotter.prepare(node_type)
        self.encoder_parser.warm(encoder)

    def spotter(self) -> AttributeSpotter:
        catalog = self._lookups.catalog()
        with self._lock:
            if self._spotter is None:
                lexicon = self._lookups.lexicon
                self._spotter = AttributeSpotter(
                    catalog, is_name=lambda phrase: bool(lexicon().positions(phrase, original=phrase).size)
                )
            return self._spotter

    def guess_target_type(self, query: QueryContext) -> str | None:
        """Without a type word: the type with the largest summed cosine among the question's 20 nearest nodes."""
        hits = self._stores.vectors[self._embedding_set].search(query.embedding[None, :], 20)[0]
        if not hits.keys.size:
            return None
        codes = self._stores.nodes.types[hits.keys]
        totals = np.bincount(codes, weights=np.maximum(hits.scores, 0.0))
        return self._stores.nodes.schema.node_types[int(np.argmax(totals))].name

    def run(self, query: QueryContext, config: AfConfig) -> StructuredQuery:
        with query.stage("parse"):
            parsed = self._parse(query, config)
        query.notes["parsed"] = parse_summary(parsed)
        return parsed

    def _parse(self, query: QueryContext, config: AfConfig) -> StructuredQuery:
        parser = self.parsers.get(config.parser)
        if parser is None:
            hint = " (the LLM parser needs an LLM: `--llm`, docs/llm.md)" if config.parser == "llm" else ""
            raise InvalidInputError(
                f"parser {config.parser!r} is not configured{hint}; available: {', '.join(sorted(self.parsers))}"
            )
        try:
            if parser is self.encoder_parser:
                return self.encoder_parser.parse(query, Reading(config.head_noun, config.chains, config.typos))
            traced = getattr(parser, "parse_traced", None)
            if traced is None:
                return parser.parse(query)
            trace = traced(query)
            query.notes["llm_usage"] = {
                "calls": trace.calls,
                "prompt_tokens": trace.prompt_tokens,
                "completion_tokens": trace.completion_tokens,
            }
            return trace.query
        except LlmError as exc:
            # The LLM is down or too slow: answer with the encoder parser rather than not at all.
            query.notes["parser_fallback"] = f"llm parser failed ({exc}); encoder parser used"
            return self.encoder_parser.parse(query, Reading(config.head_noun, config.chains, config.typos))
