"""litellm's real HTTP path against the fake Anthropic server (no mocking): what litellm parses from the
server's streams and what it sends. The assertions on requests pin litellm's wire behaviour that the issue-21
work builds on (tests/fakes/README.md explains each)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import litellm
import pytest
from fakes.anthropic_server import FakeAnthropicServer, usage_of
from fakes.anthropic_stream import AnthropicReply, RedactedThinking, Text, Thinking, ToolUse, text_reply, tool_reply

MODEL = "anthropic/claude-sonnet-4-5"
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
def server() -> Iterator[FakeAnthropicServer]:
    fake = FakeAnthropicServer(min_cache_tokens=0).start()
    try:
        yield fake
    finally:
        fake.stop()


def complete(server: FakeAnthropicServer, messages: list[dict[str, Any]], **kwargs: Any) -> Any:
    """One streamed completion through litellm, assembled as litellm assembles it."""
    stream = litellm.completion(
        model=MODEL, api_base=server.base_url, api_key="sk-fake", messages=messages, stream=True, **kwargs
    )
    chunks = list(stream)
    return litellm.stream_chunk_builder(chunks, messages=messages)


def assistant_turn(message: Any, *, keep_thinking: bool = True) -> dict[str, Any]:
    """The assistant message as an agent would append it to its history."""
    turn: dict[str, Any] = {
        "role": "assistant",
        "content": message.content,
        "tool_calls": [call.model_dump() for call in message.tool_calls or []],
    }
    if keep_thinking and getattr(message, "thinking_blocks", None):
        turn["thinking_blocks"] = message.thinking_blocks
    return turn


def tool_result(message: Any, output: str = "print(1)") -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": message.tool_calls[0].id, "content": output}


def test_litellm_streams_text_and_usage(server: FakeAnthropicServer) -> None:
    server.enqueue(text_reply("Hello there.", output_tokens=7))
    response = complete(server, QUESTION, max_tokens=1000)
    assert response.choices[0].message.content == "Hello there."
    assert response.choices[0].finish_reason == "stop"
    assert response.usage.completion_tokens == 7
    assert response.usage.prompt_tokens == server.records[0].prompt_tokens


def test_litellm_sends_the_anthropic_headers_and_system_as_a_part(server: FakeAnthropicServer) -> None:
    complete(server, QUESTION, max_tokens=1000)
    record = server.records[0]
    assert record.path == "/v1/messages" and record.headers["x-api-key"] == "sk-fake"
    assert record.headers["anthropic-version"] == "2023-06-01"
    assert record.body["system"] == [{"type": "text", "text": "You are terse."}]
    assert record.body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "read a.py"}]}]


def test_litellm_parses_tool_call_arguments_from_json_deltas(server: FakeAnthropicServer) -> None:
    server.enqueue(AnthropicReply(blocks=(Text("Reading."), ToolUse("read", {"path": "a.py", "lines": [1, 2]}))))
    message = complete(server, QUESTION, tools=TOOLS, max_tokens=1000).choices[0].message
    assert message.content == "Reading."
    [call] = message.tool_calls
    assert call.function.name == "read" and call.id.startswith("toolu_")
    assert json.loads(call.function.arguments) == {"path": "a.py", "lines": [1, 2]}
    assert server.requests[0]["tools"][0]["name"] == "read"


def test_litellm_thinking_blocks_carry_the_signature(server: FakeAnthropicServer) -> None:
    server.enqueue(tool_reply("read", {"path": "a.py"}, thinking="Read it before answering."))
    message = complete(server, QUESTION, tools=TOOLS, reasoning_effort="low").choices[0].message
    [block] = message.thinking_blocks
    assert block["type"] == "thinking" and block["thinking"] == "Read it before answering."
    assert server.signer.verify_thinking(block["thinking"], block["signature"])
    assert message.reasoning_content == "Read it before answering."


def test_litellm_sends_signed_thinking_back_and_the_tool_loop_is_accepted(server: FakeAnthropicServer) -> None:
    server.enqueue(
        tool_reply("read", {"path": "a.py"}, thinking="Read it first.", text="Reading."), text_reply("Done.")
    )
    first = complete(server, QUESTION, tools=TOOLS, reasoning_effort="low").choices[0].message
    history = [*QUESTION, assistant_turn(first), tool_result(first)]
    second = complete(server, history, tools=TOOLS, reasoning_effort="low").choices[0].message
    assert second.content == "Done." and server.rejections == []
    sent = server.requests[1]["messages"][1]["content"]
    assert [part["type"] for part in sent] == ["thinking", "text", "tool_use"]
    assert sent[0]["signature"] == first.thinking_blocks[0]["signature"]


def test_litellm_sends_redacted_thinking_back_unchanged(server: FakeAnthropicServer) -> None:
    server.enqueue(AnthropicReply(blocks=(RedactedThinking(), ToolUse("read", {"path": "a.py"}))), text_reply("Done."))
    first = complete(server, QUESTION, tools=TOOLS, reasoning_effort="low").choices[0].message
    assert first.thinking_blocks[0]["type"] == "redacted_thinking"
    complete(server, [*QUESTION, assistant_turn(first), tool_result(first)], tools=TOOLS, reasoning_effort="low")
    assert server.rejections == []
    assert server.requests[1]["messages"][1]["content"][0] == dict(first.thinking_blocks[0])


def test_litellm_drops_the_index_its_stream_deltas_put_on_thinking_blocks(server: FakeAnthropicServer) -> None:
    server.enqueue(tool_reply("read", {"path": "a.py"}, thinking="Read it first."), text_reply("Done."))
    stream = litellm.completion(
        model=MODEL, api_base=server.base_url, api_key="sk-fake", messages=QUESTION, tools=TOOLS, stream=True,
        reasoning_effort="low",
    )  # fmt: skip
    deltas = [block for chunk in stream for block in getattr(chunk.choices[0].delta, "thinking_blocks", None) or []]
    assert {block["index"] for block in deltas} == {0} and deltas[-1]["thinking"] == ""  # the signature delta
    block = {
        "type": "thinking",
        "index": 0,
        "thinking": "".join(block["thinking"] for block in deltas),
        "signature": deltas[-1]["signature"],
    }
    call = {"id": "toolu_x", "type": "function", "function": {"name": "read", "arguments": '{"path": "a.py"}'}}
    assistant = {"role": "assistant", "content": None, "tool_calls": [call], "thinking_blocks": [block]}
    history = [*QUESTION, assistant, {"role": "tool", "tool_call_id": "toolu_x", "content": "x"}]
    complete(server, history, tools=TOOLS, reasoning_effort="low")
    assert server.rejections == [] and "index" not in server.requests[1]["messages"][1]["content"][0]


def test_litellm_tool_loop_without_thinking_blocks_is_rejected(server: FakeAnthropicServer) -> None:
    server.enqueue(tool_reply("read", {"path": "a.py"}, thinking="Read it first."))
    first = complete(server, QUESTION, tools=TOOLS, reasoning_effort="low").choices[0].message
    history = [*QUESTION, assistant_turn(first, keep_thinking=False), tool_result(first)]
    with pytest.raises(
        litellm.BadRequestError, match="Expected `thinking` or `redacted_thinking`, but found `tool_use`"
    ):
        complete(server, history, tools=TOOLS, reasoning_effort="low")


@pytest.mark.parametrize(
    ("effort", "budget", "max_tokens"),
    [("minimal", 1024, 5120), ("low", 1024, 5120), ("medium", 2048, 6144), ("high", 4096, 8192)],
)
def test_litellm_maps_reasoning_effort_to_a_budget_and_max_tokens(
    server: FakeAnthropicServer, effort: str, budget: int, max_tokens: int
) -> None:
    complete(server, QUESTION, reasoning_effort=effort)
    body = server.requests[0]
    assert body["thinking"] == {"type": "enabled", "budget_tokens": budget} and body["max_tokens"] == max_tokens


def test_litellm_passes_an_explicit_thinking_budget_and_max_tokens_through(server: FakeAnthropicServer) -> None:
    complete(server, QUESTION, thinking={"type": "enabled", "budget_tokens": 8192}, max_tokens=40192)
    body = server.requests[0]
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 8192} and body["max_tokens"] == 40192


def test_litellm_sends_the_model_maximum_when_no_max_tokens_is_given(server: FakeAnthropicServer) -> None:
    complete(server, QUESTION)
    assert server.requests[0]["max_tokens"] == 64000


def cached_history() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """System, user and tool-result parts marked as an agent would mark them, and a marked tool."""
    ephemeral = {"type": "ephemeral"}
    messages = [
        {"role": "system", "content": [{"type": "text", "text": "S" * 8000, "cache_control": ephemeral}]},
        {"role": "user", "content": [{"type": "text", "text": "read a.py", "cache_control": ephemeral}]},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "toolu_1", "type": "function", "function": {"name": "read", "arguments": "{}"}}],
        },
        {
            "role": "tool",
            "tool_call_id": "toolu_1",
            "content": [{"type": "text", "text": "out", "cache_control": ephemeral}],
        },
    ]
    return messages, [{**TOOLS[0], "cache_control": ephemeral}]


def test_litellm_puts_cache_control_on_system_tool_and_message_parts(server: FakeAnthropicServer) -> None:
    messages, tools = cached_history()
    complete(server, messages, tools=tools, max_tokens=1000)
    body = server.requests[0]
    assert body["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert body["tools"][0]["cache_control"] == {"type": "ephemeral"}
    assert body["messages"][0]["content"][0]["cache_control"] == {"type": "ephemeral"}
    # A marked part of a role "tool" message lands inside the tool_result, not on it.
    result = body["messages"][2]["content"][0]
    assert "cache_control" not in result and result["content"][0]["cache_control"] == {"type": "ephemeral"}


def test_litellm_moves_message_level_cache_control_onto_the_block(server: FakeAnthropicServer) -> None:
    ephemeral = {"type": "ephemeral"}
    call = {"id": "toolu_1", "type": "function", "function": {"name": "read", "arguments": "{}"}}
    history = [
        {"role": "user", "content": "read a.py", "cache_control": ephemeral},
        {"role": "assistant", "content": None, "tool_calls": [call], "cache_control": ephemeral},
        {"role": "tool", "tool_call_id": "toolu_1", "content": "print(1)", "cache_control": ephemeral},
    ]
    complete(server, history, tools=TOOLS, max_tokens=1000)
    user, assistant, result = server.requests[0]["messages"]
    assert user["content"] == [{"type": "text", "text": "read a.py", "cache_control": ephemeral}]
    assert "cache_control" not in assistant["content"][0]  # dropped on an assistant turn without text
    assert result["content"][0]["cache_control"] == ephemeral and result["content"][0]["content"] == "print(1)"


def test_litellm_sanitises_anthropic_tool_ids_itself(server: FakeAnthropicServer) -> None:
    odd = "call_a+b/c=__thought__sig+/="
    call = {"id": odd, "type": "function", "function": {"name": "read", "arguments": "{}"}}
    history = [
        {"role": "user", "content": "read a.py"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": odd, "content": "print(1)", "is_error": True},
    ]
    complete(server, history, tools=TOOLS, max_tokens=1000)
    assert server.rejections == []
    _, assistant, result = server.requests[0]["messages"]
    assert assistant["content"][0]["id"] == result["content"][0]["tool_use_id"] == "call_a_b_c_"
    assert "is_error" not in result["content"][0]  # litellm has no way to send is_error


def test_litellm_reports_cache_writes_then_reads(server: FakeAnthropicServer) -> None:
    messages, tools = cached_history()
    first = complete(server, messages, tools=tools, max_tokens=1000).usage
    written = usage_of(server.records[0])["cache_creation_input_tokens"]
    assert written > 2000 and first.cache_creation_input_tokens == written
    assert first.prompt_tokens_details.cache_creation_tokens == written
    second = complete(server, messages, tools=tools, max_tokens=1000).usage
    assert second.cache_read_input_tokens == written and second.prompt_tokens_details.cached_tokens == written
    # litellm's prompt_tokens include Anthropic's separately counted cache reads and writes.
    assert first.prompt_tokens == second.prompt_tokens == server.records[1].prompt_tokens


def test_litellm_raises_context_window_exceeded_with_the_api_text(server: FakeAnthropicServer) -> None:
    huge = [{"role": "user", "content": "x" * 560_000}]  # 140,000 tokens; litellm adds max_tokens 64,000
    with pytest.raises(litellm.ContextWindowExceededError) as caught:
        complete(server, huge)
    assert "input length and `max_tokens` exceed context limit: 140000 + 64000 > 200000" in str(caught.value)
    assert server.pending == 0 and len(server.rejections) == 1


def test_litellm_surfaces_a_mid_stream_error_event(server: FakeAnthropicServer) -> None:
    server.enqueue(
        AnthropicReply(
            blocks=(Thinking("x"), Text("partial")),
            stream_error=True,
            error_type="overloaded_error",
            error_message="Overloaded",
        )
    )
    with pytest.raises(Exception, match="Overloaded"):
        complete(server, QUESTION, max_tokens=1000)
