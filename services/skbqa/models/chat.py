"""The `ChatModel` port: one chat completion against an LLM. The parser (steps 1–3) and the rerankers (step 8) use
it; the OpenAI-compatible HTTP adapter lives in `openai_chat.py`, and tests pass scripted fakes.

LLM output is untrusted input: callers parse replies defensively and fall back when a reply is unusable.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

from skbqa.common.errors import SkbqaError

Role = Literal["system", "user", "assistant"]


@dataclass(frozen=True)
class ChatMessage:
    role: Role
    content: str


@dataclass(frozen=True)
class ChatReply:
    content: str
    prompt_tokens: int = 0
    completion_tokens: int = 0


class LlmError(SkbqaError):
    """The LLM could not be reached or kept failing after the configured retries (or a deadline passed)."""


class ChatModel(Protocol):
    name: str
    context_window: int  # tokens the model accepts per request (prompt + reply); rerankers size prompts by it

    def chat(
        self,
        messages: list[ChatMessage],
        *,
        max_tokens: int | None = None,
        temperature: float = 0.0,
        timeout: float | None = None,
    ) -> ChatReply:
        """One completion; raises LlmError when the endpoint fails after retries or `timeout` seconds pass."""
        ...


def estimate_tokens(text: str) -> int:
    """A model-independent upper-side estimate (≈ 4 characters per token) used to size prompts."""
    return len(text) // 4 + 1
