"""Who answers an evaluation's questions: the engine in this process, or a deployed service through the client
SDK. The runner scores both the same way; only what each can know differs.

- In process, a gold answer the index does not hold is left out (a question with none left is skipped), the
  latency is the engine's own total, and an undeclared target type is read from the index.
- Against a server, the deployed index cannot be asked which ids it holds, so every gold answer counts; the
  latency is measured at the client (network, queueing and retries included); the target type is the QA line's
  `target_type`, or "unknown".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from skbqa.common.answer import Answer
from skbqa.skb.model import QAItem


class Answerer(Protocol):
    where: str

    def warm(self, *strategies: str) -> None: ...

    def ask(self, question: str, *, strategy: str, k: int, options: Mapping[str, Any]) -> tuple[Answer, float]:
        """The answer and its latency in ms."""
        ...

    def known_answers(self, item: QAItem) -> list[int]: ...

    def target_type(self, item: QAItem) -> str: ...


def declared_target_type(item: QAItem) -> str | None:
    declared = item.meta.get("target_type")
    return declared if isinstance(declared, str) and declared else None


class EngineAnswerer:
    where = "in-process"

    def __init__(self, engine: Any) -> None:
        self.engine = engine

    def warm(self, *strategies: str) -> None:
        self.engine.warm(*strategies)

    def ask(self, question: str, *, strategy: str, k: int, options: Mapping[str, Any]) -> tuple[Answer, float]:
        result = self.engine.ask(question, strategy=strategy, k=k, options=dict(options))
        return result, float(result.timings_ms["total"])

    def known_answers(self, item: QAItem) -> list[int]:
        positions = self.engine.stores.nodes.positions(item.answers)
        return [answer for answer, position in zip(item.answers, positions, strict=True) if position >= 0]

    def target_type(self, item: QAItem) -> str:
        declared = declared_target_type(item)
        if declared:
            return declared
        nodes = self.engine.stores.nodes
        positions = nodes.positions(item.answers[:1])
        return nodes.type_name(int(positions[0])) if positions.size and positions[0] >= 0 else "unknown"


class ServerAnswerer:
    def __init__(self, client: Any) -> None:
        self.client = client
        self.where = f"server {client.options.target}"

    def warm(self, *strategies: str) -> None:
        """One question per strategy first, so a server's first-use work (lazy builds, connection set-up) stays
        out of the figures; a failure here is the run's first error, reported before anything is timed."""
        for strategy in strategies:
            self.client.ask("warm-up question", strategy=strategy, k=1)

    def ask(self, question: str, *, strategy: str, k: int, options: Mapping[str, Any]) -> tuple[Answer, float]:
        result = self.client.ask(question, strategy=strategy, k=k, options=options)
        return result, float(result.client_ms)

    def known_answers(self, item: QAItem) -> list[int]:
        return list(item.answers)

    def target_type(self, item: QAItem) -> str:
        return declared_target_type(item) or "unknown"


def as_answerer(source: Any) -> Answerer:
    """An Answerer as it is, an EmbeddedEngine wrapped."""
    return source if hasattr(source, "known_answers") else EngineAnswerer(source)
