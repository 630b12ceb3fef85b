"""What the agent sends each turn: its system prompt, the live context as LLM messages, its tools.

The one place a turn's ``ChatRequest`` is put together, so whatever a request must carry besides
the conversation has one home: the pinned notes right after the system prompt, the recall hint
after the compaction summary when the ``recall`` tool is offered, and what automatic recall attached.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pi_compact.agent.tools import Tool
from pi_compact.agent.tools.recall import with_recall_hint
from pi_compact.compaction.tokens import Estimator
from pi_compact.llm.protocol import ChatRequest, ToolSpec, empty_usage
from pi_compact.messages import Message
from pi_compact.session.history import RECALL_TOOL
from pi_compact.session.pins import Pin, with_pins


def build_request(
    system_prompt: str, messages: Sequence[Message], tools: Sequence[Tool], pins: Sequence[Pin] = (),
    recalled: str | None = None, *, thinking: str | None = None, cache: str = "short", session_id: str | None = None,
) -> ChatRequest:
    """The request for the next model call. No ``max_tokens``: the model layer sends its output cap
    (``llm.output_cap``); ``thinking``, ``cache`` and ``session_id`` are ``ChatRequest``'s.

    ``recalled``: original excerpts chosen by automatic recall (``agent.compaction.recall``), sent after
    the context as one user message for this request only (the session file records them)."""
    specs = [ToolSpec(t.name, t.description, t.parameters) for t in tools]
    recall = any(spec.name == RECALL_TOOL for spec in specs)
    llm_messages = with_recall_hint(messages, recall)
    if recalled:
        timestamp = messages[-1].get("timestamp", 0) if messages else 0
        llm_messages.append({"role": "user", "content": [{"type": "text", "text": recalled}], "timestamp": timestamp})
    return ChatRequest(with_pins(system_prompt, pins), llm_messages, specs, None,
                       thinking=thinking, cache=cache, session_id=session_id)


def request_overhead(system_prompt: str, tools: Sequence[Tool], pins: Sequence[Pin], estimate: Estimator) -> int:
    """What every request carries besides the conversation (the system prompt with the pins, the tool
    definitions), estimated as a message is: providers count it in their usage, so an estimated context
    size must too, or it reads low right after a compaction (and on a fresh session, 0)."""
    specs = [{"name": t.name, "description": t.description, "parameters": t.parameters} for t in tools]
    text = with_pins(system_prompt, pins) + "\n" + json.dumps(specs, ensure_ascii=False)
    return estimate({"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 0})


def failed_reply(error: str, now_ms: int) -> dict[str, Any]:
    """The assistant message recorded for a turn that failed before the model was reached."""
    return {
        "role": "assistant", "content": [], "api": "openai-completions", "provider": "", "model": "",
        "usage": empty_usage(), "stopReason": "error", "errorMessage": error, "timestamp": now_ms,
    }


__all__ = ["build_request", "failed_reply", "request_overhead"]
