"""Shared pieces of the OpenAI Responses tests: pi-compact's OpenAI models pointed at the fake Responses server
the way pi is pointed at it (a ``models.json`` ``baseUrl`` for provider ``openai``), and a tool loop driver."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from fakes.responses_server import FakeResponsesServer

from pi_compact.llm.protocol import ChatModel, ChatRequest, Done, ToolSpec
from pi_compact.llm.resolve import create_model, resolve_model
from pi_compact.settings import Settings
from pi_compact.settings.pi_models import parse_pi_models

READ = ToolSpec("read", "Read a file", {"type": "object", "properties": {"path": {"type": "string"}},
                                        "required": ["path"]})
SYSTEM = "You are terse."


def user(text: str, timestamp: int = 1) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": timestamp}


def tool_result(call: dict[str, Any], text: str, timestamp: int = 2) -> dict[str, Any]:
    return {"role": "toolResult", "toolCallId": call["id"], "toolName": call["name"],
            "content": [{"type": "text", "text": text}], "isError": False, "timestamp": timestamp}


def openai_settings(server: FakeResponsesServer) -> Settings:
    """Settings whose pi ``models.json`` moves provider openai to the fake server (pi's override)."""
    pi_models, warnings = parse_pi_models(json.dumps({"providers": {"openai": {"baseUrl": server.base_url}}}),
                                          "models.json")
    assert warnings == []
    return Settings(pi_models=pi_models)


def openai_model(server: FakeResponsesServer, name: str) -> ChatModel:
    settings = openai_settings(server)
    return create_model(resolve_model(name, settings=settings), settings=settings)


def ask(model: ChatModel, messages: Sequence[dict[str, Any]], *, thinking: str | None = "medium",
        tools: Sequence[ToolSpec] = (READ,), session_id: str | None = "session-1") -> dict[str, Any]:
    events = list(model.stream(ChatRequest(SYSTEM, list(messages), tools=tools, thinking=thinking,
                                           session_id=session_id)))
    done = events[-1]
    assert isinstance(done, Done)
    return done.message


def calls_of(message: dict[str, Any]) -> list[dict[str, Any]]:
    return [block for block in message["content"] if block["type"] == "toolCall"]
