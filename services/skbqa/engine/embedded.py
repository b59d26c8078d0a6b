"""The embedded composition root: one process, the index's stores, the local encoder, every strategy."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, cast

from skbqa.common.errors import IndexStoreError
from skbqa.engine.answers import Answer, answer
from skbqa.models.chat import ChatModel
from skbqa.models.index_encoder import encoder_for_index
from skbqa.query.context import Strategy
from skbqa.query.encoder import Encoder
from skbqa.stores.index import IndexStores, open_index
from skbqa.strategies.af import AfStrategy
from skbqa.strategies.bm25 import Bm25Strategy
from skbqa.strategies.grape.strategy import GrapeStrategy
from skbqa.strategies.hybrid import HybridStrategy
from skbqa.strategies.sage.strategy import SageStrategy
from skbqa.strategies.spark.strategy import SparkStrategy
from skbqa.strategies.vss import VssStrategy

DEFAULT_STRATEGY = "af"


# The one list of strategies: the CLI's choices, the demo and eval all read it from here. A factory receives the
# stores and the engine's ChatModel (None without an LLM: strategies must then work without one).
STRATEGY_FACTORIES: dict[str, Callable[[IndexStores, ChatModel | None], Strategy]] = {
    "bm25": lambda stores, chat: Bm25Strategy(stores),
    "vss": lambda stores, chat: VssStrategy(stores),
    "hybrid": lambda stores, chat: HybridStrategy(stores),
    "af": lambda stores, chat: AfStrategy(stores, chat=chat),
}
# Strategies composed from others: built in a second pass, given the first pass's instances (one af, one lexicon).
COMPOSED_FACTORIES: dict[str, Callable[[IndexStores, ChatModel | None, Mapping[str, Strategy]], Strategy]] = {
    "spark": lambda stores, chat, built: SparkStrategy(stores, cast(AfStrategy, built["af"]), chat),
    "sage": lambda stores, chat, built: SageStrategy(stores, built),
    "grape": lambda stores, chat, built: GrapeStrategy(stores, cast(AfStrategy, built["af"])),
}
STRATEGY_NAMES = (*STRATEGY_FACTORIES, *COMPOSED_FACTORIES)


def build_strategies(stores: IndexStores, chat: ChatModel | None = None) -> dict[str, Strategy]:
    built = {name: factory(stores, chat) for name, factory in STRATEGY_FACTORIES.items()}
    for name, compose in COMPOSED_FACTORIES.items():
        built[name] = compose(stores, chat, built)
    return built


class EmbeddedEngine:
    def __init__(self, stores: IndexStores, encoder: Encoder, chat: ChatModel | None = None) -> None:
        self.stores = stores
        self.encoder = encoder
        self.chat = chat
        self.strategies = build_strategies(stores, chat)

    @classmethod
    def open(
        cls, index_dir: Path | str, *, encoder: Encoder | None = None, chat: ChatModel | None = None
    ) -> EmbeddedEngine:
        stores = open_index(index_dir)
        built_with = stores.manifest.get("encoder", {}).get("name", "")
        if encoder is None:
            encoder = encoder_for_index(stores.directory, built_with)
        elif encoder.name != built_with:
            raise IndexStoreError(
                f"{index_dir} was built with encoder {built_with!r}; questions would be embedded with "
                f"{encoder.name!r}, which is not comparable. Re-ingest with that encoder or drop the override."
            )
        return cls(stores, encoder, chat)

    def warm(self, *names: str) -> EmbeddedEngine:
        """Build the lazy structures of the named strategies (all when none is named) now: a server calls this
        before it reports ready, eval before it times anything."""
        for name, strategy in self.strategies.items():
            if names and name not in names:
                continue
            warm = getattr(strategy, "warm", None)
            if warm is not None:
                warm(self.encoder)
        return self

    def ask(
        self,
        question: str,
        *,
        strategy: str = DEFAULT_STRATEGY,
        k: int = 20,
        options: Mapping[str, Any] | None = None,
    ) -> Answer:
        return answer(
            self.stores, self.strategies, self.encoder, question, strategy=strategy, k=k, options=options
        )
