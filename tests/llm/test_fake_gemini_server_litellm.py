"""litellm's real HTTP path against the fake Gemini server (no mocking): what litellm parses and sends, and
where Gemini's thought signature travels (inside the tool-call id, after ``__thought__``)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import litellm
import pytest
from fakes.gemini_reply import FunctionCall, GeminiReply, Text, Thought, call_reply, text_reply
from fakes.gemini_server import FakeGeminiServer, signatures_in

MODEL = "gemini/gemini-2.5-pro"
SEPARATOR = "__thought__"
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read",
            "description": "Read a file",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
    }
]
QUESTION = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "read a.py"}]


@pytest.fixture
def server() -> Iterator[FakeGeminiServer]:
    fake = FakeGeminiServer().start()
    try:
        yield fake
    finally:
        fake.stop()


def complete(server: FakeGeminiServer, messages: list[dict[str, Any]], **kwargs: Any) -> Any:
    stream = litellm.completion(
        model=MODEL, api_base=server.base_url, api_key="g-fake", messages=messages, stream=True, **kwargs
    )
    return litellm.stream_chunk_builder(list(stream), messages=messages)


def tool_loop_history(message: Any, call_id: str | None = None) -> list[dict[str, Any]]:
    """The history after one tool call, its id optionally rewritten (as an id sanitiser would)."""
    call = message.tool_calls[0]
    call_id = call_id or call.id
    assistant = {
        "role": "assistant",
        "content": message.content,
        "tool_calls": [{"id": call_id, "type": "function", "function": call.function.model_dump()}],
    }
    return [*QUESTION, assistant, {"role": "tool", "tool_call_id": call_id, "content": "print(1)"}]


def first_tool_call(server: FakeGeminiServer) -> Any:
    server.enqueue(call_reply("read", {"path": "a.py"}, thought="Look first.", text="Reading."))
    return complete(server, QUESTION, tools=TOOLS, reasoning_effort="low").choices[0].message


def test_litellm_reaches_the_v1beta_endpoint_with_the_key_header(server: FakeGeminiServer) -> None:
    complete(server, QUESTION)
    record = server.records[0]
    assert record.path == "/v1beta/models/gemini-2.5-pro:streamGenerateContent" and record.query == {"alt": "sse"}
    assert record.headers["x-goog-api-key"] == "g-fake"


def test_litellm_sends_snake_case_fields(server: FakeGeminiServer) -> None:
    complete(server, QUESTION, tools=TOOLS, max_tokens=1000)
    body = server.requests[0]
    assert body["system_instruction"] == {"parts": [{"text": "You are terse."}]}
    assert body["tools"][0]["function_declarations"][0]["name"] == "read"
    assert body["generationConfig"] == {"max_output_tokens": 1000}


def test_litellm_streams_text_thoughts_and_usage(server: FakeGeminiServer) -> None:
    reply = GeminiReply(
        parts=(Thought("Hm."), Text("Hello.")), prompt_tokens=100, output_tokens=3, thoughts_tokens=50, cached_tokens=20
    )
    server.enqueue(reply)
    response = complete(server, QUESTION)
    message = response.choices[0].message
    assert message.content == "Hello." and message.reasoning_content == "Hm."
    usage = response.usage
    assert (usage.prompt_tokens, usage.completion_tokens) == (100, 53)  # completion includes the thoughts
    assert usage.completion_tokens_details.reasoning_tokens == 50
    assert usage.prompt_tokens_details.cached_tokens == 20


def test_litellm_carries_the_thought_signature_in_the_tool_call_id(server: FakeGeminiServer) -> None:
    message = first_tool_call(server)
    [call] = message.tool_calls
    issued = next(iter(server.issued_signatures.values()))
    prefix, signature = call.id.split(SEPARATOR)
    assert signature == issued and re.fullmatch(r"call_[0-9a-f]+", prefix)
    assert len(call.id) > 300 and call.provider_specific_fields["thought_signature"] == issued
    assert json.loads(call.function.arguments) == {"path": "a.py"}


def test_litellm_sends_the_signature_back_and_each_request_once(server: FakeGeminiServer) -> None:
    message = first_tool_call(server)
    server.enqueue(text_reply("Done."))
    answer = complete(server, tool_loop_history(message), tools=TOOLS, reasoning_effort="low")
    assert answer.choices[0].message.content == "Done."
    assert server.rejections == [] and server.max_sends == 1
    assert signatures_in(server.requests[1]) == list(server.issued_signatures.values())
    model_turn = server.requests[1]["contents"][1]
    assert model_turn["role"] == "model" and "function_call" in model_turn["parts"][-1]
    assert not any(part.get("thought") for part in model_turn["parts"])  # litellm drops the thought parts


def test_a_sanitised_tool_call_id_makes_litellm_send_the_request_twice(server: FakeGeminiServer) -> None:
    message = first_tool_call(server)
    server.enqueue(text_reply("Done."))
    sanitised = re.sub(r"[^a-zA-Z0-9_-]", "_", message.tool_calls[0].id)[:64]  # the Anthropic id rule
    complete(server, tool_loop_history(message, sanitised), tools=TOOLS, reasoning_effort="low")
    assert [error.message for error in server.rejections] == ["Corrupted thought signature."]
    assert server.max_sends == 2  # litellm resent it with the skip-validator placeholder
    assert signatures_in(server.requests[-1]) == ["c2tpcF90aG91Z2h0X3NpZ25hdHVyZV92YWxpZGF0b3I="]


def test_a_tool_call_id_without_the_signature_is_rejected_and_not_retried(server: FakeGeminiServer) -> None:
    message = first_tool_call(server)
    with pytest.raises(litellm.BadRequestError, match="missing a thought_signature"):
        complete(server, tool_loop_history(message, "call_1"), tools=TOOLS, reasoning_effort="low")
    assert server.max_sends == 1


def test_litellm_takes_the_signature_from_provider_specific_fields_when_the_id_is_clean(
    server: FakeGeminiServer,
) -> None:
    server.enqueue(GeminiReply(parts=(FunctionCall("read", {"path": "a"}), FunctionCall("read", {"path": "b"}))))
    calls = complete(server, QUESTION, tools=TOOLS).choices[0].message.tool_calls
    assert SEPARATOR in calls[0].id and SEPARATOR not in calls[1].id  # only the first parallel call is signed
    sent = []
    for index, call in enumerate(calls):
        clean: dict[str, Any] = {"id": f"call_{index}", "type": "function", "function": call.function.model_dump()}
        signature = (getattr(call, "provider_specific_fields", None) or {}).get("thought_signature")
        if signature:
            clean["provider_specific_fields"] = {"thought_signature": signature}
        sent.append(clean)
    results = [{"role": "tool", "tool_call_id": call["id"], "content": "x"} for call in sent]
    server.enqueue(text_reply("Done."))
    complete(server, [*QUESTION, {"role": "assistant", "content": None, "tool_calls": sent}, *results], tools=TOOLS)
    assert server.rejections == [] and server.max_sends == 1
    assert signatures_in(server.requests[1]) == list(server.issued_signatures.values())


@pytest.mark.parametrize(("effort", "budget"), [("minimal", 128), ("low", 1024), ("medium", 2048), ("high", 4096)])
def test_litellm_maps_reasoning_effort_to_a_thinking_budget(server: FakeGeminiServer, effort: str, budget: int) -> None:
    complete(server, QUESTION, reasoning_effort=effort)
    config = server.requests[0]["generationConfig"]
    assert config == {"thinkingConfig": {"thinkingBudget": budget, "includeThoughts": True}}


def test_litellm_maps_an_explicit_thinking_budget_and_max_tokens(server: FakeGeminiServer) -> None:
    complete(server, QUESTION, thinking={"type": "enabled", "budget_tokens": 8192}, max_tokens=32000)
    config = server.requests[0]["generationConfig"]
    assert config == {"max_output_tokens": 32000, "thinkingConfig": {"includeThoughts": True, "thinkingBudget": 8192}}


def test_litellm_reasoning_effort_none_is_rejected_by_gemini_2_5_pro(server: FakeGeminiServer) -> None:
    with pytest.raises(litellm.BadRequestError, match="Budget 0 is invalid"):
        complete(server, QUESTION, reasoning_effort="none")
    complete(server, QUESTION, thinking={"type": "disabled"})
    assert server.requests[-1]["generationConfig"] == {"thinkingConfig": {}}


def test_litellm_max_tokens_above_the_model_limit_is_rejected(server: FakeGeminiServer) -> None:
    with pytest.raises(litellm.BadRequestError, match="maxOutputTokens value of 70000"):
        complete(server, QUESTION, max_tokens=70000)
