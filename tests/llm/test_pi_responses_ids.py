"""A pi session written on OpenAI's Responses API continues here: on the same Responses model (its reasoning
and ``call_…|fc_…`` ids go back as pi sends them), on another Responses model, and on chat completions, where
the id keeps its ``call_…`` part (OpenAI refuses a ``tool_calls[].id`` over 40 characters there, as the
scripted server does)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fakes.http_client import post
from fakes.responses_reply import call_reply, text_reply
from fakes.responses_server import FakeResponsesServer, openai_server  # noqa: F401 (the ``server`` fixture)
from model_paths import chat_model
from responses_harness import SYSTEM, ask, openai_model, user
from scripted_server import Reply, ScriptedServer, tool_id_refusal

from pi_compact.llm.protocol import ChatRequest, Done, ModelInfo


def pi_session(server: FakeResponsesServer) -> list[dict[str, Any]]:
    """A turn of pi 0.73.1 on o4-mini, recorded as pi's ``openai-responses`` stream handler records it: the
    reasoning item whole (``JSON.stringify``) as ``thinkingSignature``, the tool call id ``call_id|item id``."""
    server.enqueue(call_reply("read", {"path": "a.py"}, reasoning="Read it first."))
    body = {"model": "o4-mini", "input": [{"role": "user", "content": [{"type": "input_text", "text": "read a.py"}]}],
            "store": False, "reasoning": {"effort": "medium", "summary": "auto"},
            "include": ["reasoning.encrypted_content"]}
    assert post(server.base_url + "/responses", body, {"Authorization": "Bearer sk-fake"}).status == 200
    reasoning, call = server.records[-1].output or []
    call_id = f"{call['call_id']}|{call['id']}"
    assistant = {
        "role": "assistant", "api": "openai-responses", "provider": "openai", "model": "o4-mini",
        "content": [{"type": "thinking", "thinking": "Read it first.",
                     "thinkingSignature": json.dumps(reasoning, separators=(",", ":"))},
                    {"type": "toolCall", "id": call_id, "name": "read", "arguments": {"path": "a.py"}}],
        "usage": {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 15,
                  "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
        "stopReason": "toolUse", "timestamp": 2,
    }
    result = {"role": "toolResult", "toolCallId": call_id, "toolName": "read",
              "content": [{"type": "text", "text": "x = 1"}], "isError": False, "timestamp": 3}
    return [user("read a.py"), assistant, result]


def test_pis_tool_ids_are_81_characters(server: FakeResponsesServer) -> None:
    assert len(pi_session(server)[1]["content"][1]["id"]) == 81


def test_a_pi_session_continues_on_the_same_responses_model(server: FakeResponsesServer) -> None:
    session = pi_session(server)
    server.enqueue(text_reply("x is 1."))
    reply = ask(openai_model(server, "openai/o4-mini"), session)
    assert reply["stopReason"] == "stop" and server.rejections == []
    sent = server.requests[-1]["input"]
    call_id, item_id = session[1]["content"][1]["id"].split("|")
    assert [item.get("type", "message") for item in sent] == [
        "message", "message", "reasoning", "function_call", "function_call_output"]
    assert json.dumps(sent[2], separators=(",", ":")) == session[1]["content"][0]["thinkingSignature"]
    assert (sent[3]["call_id"], sent[3]["id"], sent[4]["call_id"]) == (call_id, item_id, call_id)


def test_a_pi_session_continues_on_another_responses_model(server: FakeResponsesServer) -> None:
    session = pi_session(server)
    server.enqueue(text_reply("x is 1."))
    reply = ask(openai_model(server, "openai/o3"), session)
    assert reply["stopReason"] == "stop" and server.rejections == []
    sent = server.requests[-1]["input"]
    call_id = session[1]["content"][1]["id"].split("|")[0]
    # Another model's reasoning and item ids stay behind; the call keeps its call_id.
    assert [item.get("type", "message") for item in sent] == ["message", "message", "function_call",
                                                               "function_call_output"]
    assert "id" not in sent[2] and sent[2]["call_id"] == sent[3]["call_id"] == call_id


@pytest.mark.parametrize("path", ["direct", "litellm"])
def test_a_pi_session_continues_on_a_chat_completions_model(
        server: FakeResponsesServer, scripted_server: ScriptedServer, path: str) -> None:
    session = pi_session(server)
    scripted_server.enqueue(Reply(text="x is 1."))
    info = ModelInfo("openai/gpt-4o", "openai", 128_000, 16_384)
    model = chat_model(path, info, api_base=scripted_server.base_url, api_key="sk-fake")
    done = list(model.stream(ChatRequest(SYSTEM, session)))[-1]
    assert isinstance(done, Done) and done.message["stopReason"] == "stop", done
    messages = scripted_server.requests[-1]["messages"]
    call_id = session[1]["content"][1]["id"].split("|")[0]
    assert messages[2]["tool_calls"][0]["id"] == call_id and messages[3]["tool_call_id"] == call_id


def test_the_scripted_server_refuses_a_tool_call_id_over_40_characters_as_openai_does() -> None:
    body = {"messages": [{"role": "user", "content": "hi"},
                         {"role": "assistant", "tool_calls": [{"id": "c" * 64, "type": "function",
                                                               "function": {"name": "read", "arguments": "{}"}}]}]}
    refusal = tool_id_refusal(body)
    assert refusal is not None and refusal["error"]["message"] == (
        "Invalid 'messages[1].tool_calls[0].id': string too long. Expected a string with maximum length 40, but "
        "got a string with length 64 instead.")
    assert tool_id_refusal({"messages": [{"role": "assistant", "tool_calls": [{"id": "c" * 40}]}]}) is None
