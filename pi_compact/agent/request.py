"""What the agent sends each turn: its system prompt, the live context as LLM messages, its tools.

The one place a turn's ``ChatRequest`` is put together, so whatever a request must carry besides
the conversation has one home.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pi_compact.agent.tools import Tool
from pi_compact.llm.protocol import ChatRequest, ToolSpec, empty_usage
from pi_compact.messages import Message, convert_to_llm


def build_request(system_prompt: str, messages: Sequence[Message], tools: Sequence[Tool]) -> ChatRequest:
    """The request for the next model call (no output cap: the provider's default applies)."""
    specs = [ToolSpec(t.name, t.description, t.parameters) for t in tools]
    return ChatRequest(system_prompt, convert_to_llm(messages), specs, None)


def failed_reply(error: str, now_ms: int) -> dict[str, Any]:
    """The assistant message recorded for a turn that failed before the model was reached."""
    return {
        "role": "assistant", "content": [], "api": "openai-completions", "provider": "", "model": "",
        "usage": empty_usage(), "stopReason": "error", "errorMessage": error, "timestamp": now_ms,
    }


__all__ = ["build_request", "failed_reply"]
