"""`LlmParser`: AF-Retriever steps 1–3 with an LLM — target type prompt, Cypher prompt, Cypher parsed (never run).

1. DERIVE_TARGET_TYPE: the reply is matched to a node type defensively (exact, then case / separator / plural
   insensitive, then the one type the reply names); an unusable reply gives no type and a warning.
2. DERIVE_CYPHER, with step 1's type as the requested target.
3. `parse_cypher_or_error` (strict or lenient). A syntax error, or a query that returns no node variable, gets
   ONE repair round with the error text; if the repaired reply is still broken, its best-effort parse is used
   when it has a target, else the question becomes a text constraint on a target of step 1's type.

When the Cypher's target type differs from step 1's, the target symbol keeps the Cypher's (the graph strand
grounds it) and `StructuredQuery.predicted_type` carries step 1's (the vector strand filters by it), with a
warning. LLM failures (`LlmError`) propagate: the caller may fall back to another parser.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from dataclasses import dataclass, field
from typing import Any

from skbqa.models.chat import ChatMessage, ChatModel, ChatReply
from skbqa.query.context import QueryContext
from skbqa.query.structured import StructuredQuery, Symbol
from skbqa.stages.parse.cypher.parser import Mode, parse_cypher, parse_cypher_or_error
from skbqa.stages.parse.cypher.schema import closest_type
from skbqa.stages.parse.prompts import SchemaProfile, cypher_prompt, repair_prompt, target_type_prompt
from skbqa.stores.index import IndexStores
from skbqa.stores.nodes import NodeTable

logger = logging.getLogger(__name__)

FALLBACK_TARGET = "y"
REPAIR_OVERHEAD_TOKENS = 64  # the repair instruction and the parser's error message
_REASONING = re.compile(r"<think>.*?(?:</think>|\Z)", re.DOTALL | re.IGNORECASE)
_ANSWER_PREFIX = re.compile(
    r"^\s*(?:the\s+)?(?:answer|type|target type|node type)\b\s*(?:is\b)?\s*[:=-]?\s*", re.I
)


@dataclass
class ParseTrace:
    """One parse with what the LLM said and what it cost (for evidence, debugging and per-request usage)."""

    query: StructuredQuery
    type_reply: str = ""
    cypher_replies: list[str] = field(default_factory=list)  # the first reply, then the repaired one if any
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def repaired(self) -> bool:
        return len(self.cypher_replies) > 1


def strip_reasoning(reply: str) -> str:
    """The reply without `<think>` blocks (reasoning models emit them before the answer)."""
    return _REASONING.sub("", reply).strip()


def _norm(text: str) -> str:
    return " ".join(re.sub(r"[\s_\-/]+", " ", text.lower()).split())


def _mention_pattern(type_name: str) -> re.Pattern[str]:
    base = re.escape(_norm(type_name))
    plural = f"{base}(?:e?s)?"
    if type_name.lower().endswith("y"):
        plural += f"|{re.escape(_norm(type_name)[:-1])}ies"
    return re.compile(rf"(?<![a-z0-9])(?:{plural})(?![a-z0-9])")


def match_target_type(reply: str, type_names: list[str]) -> tuple[str | None, str | None]:
    """(type, None) when the reply names exactly one node type, else (None, why it is unusable)."""
    text = strip_reasoning(reply)
    first = next((line for line in text.splitlines() if line.strip()), "")
    if first.strip() in type_names:
        return first.strip(), None
    cleaned = _ANSWER_PREFIX.sub("", first).strip().strip("`*\"'.:;, ")
    if not cleaned:
        return None, "empty reply"
    if cleaned in type_names:
        return cleaned, None
    if len(cleaned.split()) <= 4:
        # short answers: closest_type matches case, separators, camelCase, plurals and near-misses
        close = closest_type(cleaned, type_names)
        if close is not None:
            return close, None
    normalised = _norm(text)
    spans: list[tuple[int, int, str]] = []
    for name in type_names:
        spans.extend((m.start(), m.end(), name) for m in _mention_pattern(name).finditer(normalised))
    # "gene/protein" also contains "gene": a mention inside a longer one does not count
    named = {
        name
        for start, end, name in spans
        if not any(s <= start and end <= e and (e - s) > (end - start) for s, e, _ in spans)
    }
    if len(named) == 1:
        return named.pop(), None
    if named:
        return None, "reply names several types (" + ", ".join(sorted(named)) + ")"
    return None, f"reply names no known type: {first.strip()[:80]!r}"


def _usable(query: StructuredQuery, error: str | None) -> str | None:
    """Why a parsed reply cannot be used as the structured query, or None."""
    if error is not None:
        return error
    target = query.symbols.get(query.target) if query.target else None
    if target is None:
        return "the query does not RETURN a node variable"
    constrained = (
        target.type is not None
        or target.is_constant
        or query.alternatives
        or any(query.target in (t.head, t.tail) for t in query.triplets)
        or any(c.symbol == query.target for c in query.constraints)
    )
    if not constrained:
        # small models RETURN a variable the MATCH never binds (`MATCH (g)-[...]->(x) RETURN y`): nothing to ground
        return (
            f"the returned variable '{query.target}' is not bound by MATCH to a label, relationship or condition"
        )
    return None


class LlmParser:
    name = "llm"

    def __init__(
        self,
        chat: ChatModel,
        profile: SchemaProfile,
        *,
        mode: Mode = "strict",
        type_max_tokens: int = 24,
        cypher_max_tokens: int = 384,
        timeout: float | None = None,
    ) -> None:
        self.chat = chat
        self.profile = profile
        self.mode: Mode = mode
        self.type_max_tokens = type_max_tokens
        self.cypher_max_tokens = cypher_max_tokens
        self.timeout = timeout  # per LLM call; None = the chat model's own per-attempt timeouts only

    @classmethod
    def from_nodes(cls, nodes: NodeTable, chat: ChatModel, **options: Any) -> LlmParser:
        """A parser whose prompts show this node table's types, names and attributes (`options` as __init__)."""
        return cls(chat, SchemaProfile.from_nodes(nodes), **options)

    @classmethod
    def from_stores(cls, stores: IndexStores, chat: ChatModel, **options: Any) -> LlmParser:
        return cls.from_nodes(stores.nodes, chat, **options)

    def parse(self, query: QueryContext) -> StructuredQuery:
        return self.parse_traced(query).query

    def parse_traced(self, query: QueryContext) -> ParseTrace:
        trace = ParseTrace(StructuredQuery(""))
        warnings: list[str] = []
        schema = self.profile.schema
        question = query.question

        with query.stage("parse.target_type"):
            budget = self.chat.context_window - self.type_max_tokens
            messages = target_type_prompt(self.profile, question, budget_tokens=budget)
            reply = self._ask(trace, messages, self.type_max_tokens)
            trace.type_reply = reply.content
            predicted, problem = match_target_type(reply.content, schema.node_type_names)
            if problem is not None:
                warnings.append(f"target type (step 1) unusable: {problem}")

        with query.stage("parse.cypher"):
            # the repair round re-sends this prompt with the first reply and asks for another: leave room for both
            budget = self.chat.context_window - 2 * self.cypher_max_tokens - REPAIR_OVERHEAD_TOKENS
            messages = cypher_prompt(self.profile, question, predicted, budget_tokens=budget)
            reply = self._ask(trace, messages, self.cypher_max_tokens)
            cypher = strip_reasoning(reply.content)
            trace.cypher_replies.append(cypher)
            parsed, error = parse_cypher_or_error(cypher, schema, mode=self.mode)
            problem = _usable(parsed, error) if parsed is not None else error
            if problem is not None:
                warnings.append(f"Cypher unusable ({problem}); one repair round")
                reply = self._ask(trace, repair_prompt(messages, cypher, problem), self.cypher_max_tokens)
                cypher = strip_reasoning(reply.content)
                trace.cypher_replies.append(cypher)
                parsed, error = parse_cypher_or_error(cypher, schema, mode=self.mode)
                problem = _usable(parsed, error) if parsed is not None else error
                if problem is not None:
                    best = parse_cypher(cypher, schema, mode=self.mode)
                    if _usable(best, None) is None:
                        warnings.append(f"repaired Cypher still broken ({problem}); its best-effort parse is used")
                        parsed = best
                    else:
                        warnings.append(
                            f"repaired Cypher unusable ({problem}); the question is the only constraint"
                        )
                        parsed = None

        structured = self._fallback(question, predicted) if parsed is None else self._reconcile(parsed, predicted)
        structured.warnings = warnings + structured.warnings
        trace.query = structured
        logger.debug(
            "llm parse: %d calls, %d prompt + %d completion tokens, target %s",
            trace.calls,
            trace.prompt_tokens,
            trace.completion_tokens,
            structured.target_type,
        )
        return trace

    # --- steps ------------------------------------------------------------------------------------------------

    def _ask(self, trace: ParseTrace, messages: list[ChatMessage], max_tokens: int) -> ChatReply:
        reply = self.chat.chat(messages, max_tokens=max_tokens, temperature=0.0, timeout=self.timeout)
        trace.calls += 1
        trace.prompt_tokens += reply.prompt_tokens
        trace.completion_tokens += reply.completion_tokens
        return reply

    @staticmethod
    def _fallback(question: str, predicted: str | None) -> StructuredQuery:
        return StructuredQuery(
            FALLBACK_TARGET,
            {FALLBACK_TARGET: Symbol(FALLBACK_TARGET, predicted)},
            text_constraints=[question],
            predicted_type=predicted,
        )

    @staticmethod
    def _reconcile(parsed: StructuredQuery, predicted: str | None) -> StructuredQuery:
        parsed.predicted_type = predicted
        if predicted is None:
            return parsed
        target = parsed.symbols[parsed.target]
        if target.type is None:
            # an unlabelled RETURN variable: step 1's type is the best evidence there is
            parsed.symbols[parsed.target] = dataclasses.replace(target, type=predicted)
            parsed.warnings.append(
                f"the Cypher target '{parsed.target}' has no known label; step 1's '{predicted}' used"
            )
        elif target.type != predicted:
            parsed.warnings.append(
                f"target type disagreement: step 1 predicted '{predicted}', the Cypher returns '{target.type}'; "
                "the graph strand uses the Cypher's, the vector strand step 1's (predicted_type)"
            )
        return parsed
