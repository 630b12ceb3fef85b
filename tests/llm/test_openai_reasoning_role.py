"""OpenAI's reasoning models get the system prompt as a developer message, as pi sends it."""

from __future__ import annotations

import pytest
from scripted_server import Reply, ScriptedServer

from pi_compact.llm.protocol import ChatRequest
from pi_compact.llm.resolve import create_model, resolve_model
from pi_compact.settings import Settings

USER = {"role": "user", "content": "hi", "timestamp": 1}


@pytest.mark.parametrize("name", ["openai/o3-mini", "openai/o3", "openai/o4-mini"])
def test_o_series_requests_carry_the_developer_role(scripted_server: ScriptedServer, name: str) -> None:
    scripted_server.enqueue(Reply(text="ok"))
    model = create_model(resolve_model(name, settings=Settings()), api_base=scripted_server.base_url, api_key="k",
                         settings=Settings())
    list(model.stream(ChatRequest("Be terse.", [USER], thinking="medium")))
    first = scripted_server.requests[0]["messages"][0]
    assert (first["role"], first["content"]) == ("developer", "Be terse.")


def test_a_chat_model_keeps_the_system_role(scripted_server: ScriptedServer) -> None:
    scripted_server.enqueue(Reply(text="ok"))
    model = create_model(resolve_model("openai/gpt-4o", settings=Settings()), api_base=scripted_server.base_url,
                         api_key="k", settings=Settings())
    list(model.stream(ChatRequest("Be terse.", [USER])))
    assert scripted_server.requests[0]["messages"][0]["role"] == "system"
