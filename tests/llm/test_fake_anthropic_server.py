"""The fake Anthropic Messages server: each validation rule rejects with the API's wording and lets a valid
request through, the stream has the API's event shapes, prompt caching is simulated from the breakpoints,
and litellm's real HTTP path parses text, tool calls, signed thinking and cache usage from it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from fakes.anthropic_checks import Limits
from fakes.anthropic_server import FakeAnthropicServer
from fakes.anthropic_stream import (
    AnthropicReply,
    RedactedThinking,
    Text,
    Thinking,
    ToolUse,
    overloaded_reply,
    text_reply,
)
from fakes.http_client import ANTHROPIC_HEADERS, Response, post

MODEL = "claude-sonnet-4-5"
THINKING = {"type": "enabled", "budget_tokens": 1024}


@pytest.fixture
def server() -> Iterator[FakeAnthropicServer]:
    fake = FakeAnthropicServer(min_cache_tokens=0).start()
    try:
        yield fake
    finally:
        fake.stop()


def send(server: FakeAnthropicServer, headers: dict[str, str] = ANTHROPIC_HEADERS, **fields: Any) -> Response:
    body = {"model": MODEL, "max_tokens": 2048, "messages": [{"role": "user", "content": "hi"}], **fields}
    return post(server.base_url + "/v1/messages", body, headers)


def rejection(response: Response, status: int = 400) -> str:
    assert response.status == status, response.text
    body = response.json()
    assert body["type"] == "error" and body["error"]["type"] in ("invalid_request_error", "authentication_error")
    return str(body["error"]["message"])


def tool_loop(assistant_first: list[dict[str, Any]], tool_id: str = "toolu_1") -> list[dict[str, Any]]:
    """user, assistant (the given leading blocks + a tool_use), user with the tool_result."""
    use = {"type": "tool_use", "id": tool_id, "name": "read", "input": {"path": "a.py"}}
    result = {"type": "tool_result", "tool_use_id": tool_id, "content": "print(1)"}
    return [
        {"role": "user", "content": "read a.py"},
        {"role": "assistant", "content": [*assistant_first, use]},
        {"role": "user", "content": [result]},
    ]


def signed(server: FakeAnthropicServer, text: str) -> dict[str, Any]:
    """A thinking block as the server issues it (obtained over the wire, not from the signer)."""
    server.enqueue(AnthropicReply(blocks=(Thinking(text), Text("ok"))))
    return dict(send(server, thinking=THINKING).json()["content"][0])


# --- headers and fields ---------------------------------------------------------------------------------


def test_missing_api_key_is_rejected_with_401(server: FakeAnthropicServer) -> None:
    response = send(server, headers={"anthropic-version": "2023-06-01"})
    assert rejection(response, 401) == "x-api-key header is required"


def test_missing_anthropic_version_is_rejected(server: FakeAnthropicServer) -> None:
    assert rejection(send(server, headers={"x-api-key": "k"})) == "anthropic-version: header is required"


def test_missing_max_tokens_is_rejected(server: FakeAnthropicServer) -> None:
    body = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}]}
    assert rejection(post(server.base_url + "/v1/messages", body, ANTHROPIC_HEADERS)) == "max_tokens: Field required"


def test_valid_request_gets_a_json_message(server: FakeAnthropicServer) -> None:
    server.enqueue(text_reply("hello"))
    answer = send(server).json()
    assert answer["type"] == "message" and answer["content"] == [{"type": "text", "text": "hello"}]
    assert answer["stop_reason"] == "end_turn" and answer["usage"]["output_tokens"] >= 1
    assert server.records[0].headers["x-api-key"] == "sk-fake" and server.requests[0]["max_tokens"] == 2048


def test_max_tokens_above_the_model_maximum_is_rejected(server: FakeAnthropicServer) -> None:
    message = rejection(send(server, max_tokens=64001))
    assert message == f"max_tokens: 64001 > 64000, which is the maximum allowed number of output tokens for {MODEL}"


# --- context window -------------------------------------------------------------------------------------


def test_prompt_plus_max_tokens_over_the_window_is_rejected_with_the_api_text() -> None:
    with FakeAnthropicServer(limits=Limits(context_window=1000)).start() as fake:
        prompt = [{"role": "user", "content": "x" * 3000}]  # 750 tokens at chars/4
        message = rejection(send(fake, max_tokens=300, messages=prompt))
        assert message == (
            "input length and `max_tokens` exceed context limit: 750 + 300 > 1000, decrease input length or "
            "`max_tokens` and try again"
        )
        assert send(fake, max_tokens=250, messages=prompt).status == 200


def test_prompt_alone_over_the_window_is_too_long() -> None:
    with FakeAnthropicServer(limits=Limits(context_window=1000)).start() as fake:
        message = rejection(send(fake, max_tokens=10, messages=[{"role": "user", "content": "x" * 4400}]))
        assert message == "prompt is too long: 1100 tokens > 1000 maximum"


def test_token_estimate_is_configurable() -> None:
    with FakeAnthropicServer(token_counter=lambda text: len(text), limits=Limits(context_window=100)).start() as fake:
        assert "80 + 30 > 100" in rejection(send(fake, max_tokens=30, messages=[{"role": "user", "content": "y" * 80}]))


# --- cache_control --------------------------------------------------------------------------------------


def marked_text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text, "cache_control": {"type": "ephemeral"}}


def test_five_cache_control_blocks_are_rejected_four_accepted(server: FakeAnthropicServer) -> None:
    tools = [
        {"name": f"t{i}", "input_schema": {"type": "object"}, "cache_control": {"type": "ephemeral"}} for i in range(2)
    ]
    system = [marked_text("rules")]
    user = {"role": "user", "content": [marked_text("a"), {"type": "text", "text": "b"}]}
    assert send(server, tools=tools, system=system, messages=[user]).status == 200
    user["content"][1] = marked_text("b")
    message = rejection(send(server, tools=tools, system=system, messages=[user]))
    assert message == "A maximum of 4 blocks with cache_control may be provided. Found 5."


def test_cache_control_inside_a_tool_result_counts(server: FakeAnthropicServer) -> None:
    messages = tool_loop([])
    messages[2]["content"][0]["content"] = [marked_text("out")]
    system = [marked_text(str(i)) for i in range(4)]
    assert "Found 5." in rejection(send(server, system=system, messages=messages))


# --- thinking configuration -----------------------------------------------------------------------------


def test_thinking_budget_below_1024_is_rejected(server: FakeAnthropicServer) -> None:
    message = rejection(send(server, thinking={"type": "enabled", "budget_tokens": 1000}))
    assert message == "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"


def test_max_tokens_must_exceed_the_thinking_budget(server: FakeAnthropicServer) -> None:
    message = rejection(send(server, max_tokens=1024, thinking=THINKING))
    assert message.startswith("`max_tokens` must be greater than `thinking.budget_tokens`.")
    assert send(server, max_tokens=1025, thinking=THINKING).status == 200


def test_interleaved_thinking_lets_the_budget_exceed_max_tokens(server: FakeAnthropicServer) -> None:
    headers = {**ANTHROPIC_HEADERS, "anthropic-beta": "interleaved-thinking-2025-05-14"}
    assert (
        send(server, headers=headers, max_tokens=1024, thinking={"type": "enabled", "budget_tokens": 8192}).status
        == 200
    )


# --- tool pairing and ids -------------------------------------------------------------------------------


def test_tool_use_without_a_tool_result_right_after_is_rejected(server: FakeAnthropicServer) -> None:
    messages = tool_loop([])
    messages[2] = {"role": "user", "content": "never mind"}
    message = rejection(send(server, messages=messages))
    assert message == (
        "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_1. Each "
        "`tool_use` block must have a corresponding `tool_result` block in the next message."
    )
    assert send(server, messages=tool_loop([])).status == 200


def test_tool_result_without_its_tool_use_is_rejected(server: FakeAnthropicServer) -> None:
    messages = tool_loop([])
    messages[2]["content"].append({"type": "tool_result", "tool_use_id": "toolu_other", "content": "?"})
    assert rejection(send(server, messages=messages)).startswith(
        "messages.2.content.1: unexpected `tool_use_id` found in `tool_result` blocks: toolu_other."
    )


def test_tool_id_outside_the_allowed_pattern_is_rejected(server: FakeAnthropicServer) -> None:
    message = rejection(send(server, messages=tool_loop([], tool_id="call_a+b/c=")))
    assert message == "messages.1.content.0.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'"


def test_unknown_fields_on_content_blocks_are_rejected(server: FakeAnthropicServer) -> None:
    messages = tool_loop([])
    messages[1]["content"][0]["text"] = "stray"
    message = rejection(send(server, messages=messages))
    assert message == "messages.1.content.0.tool_use.text: Extra inputs are not permitted"
    messages = tool_loop([])
    messages[2]["content"][0]["cache_control"] = {"type": "ephemeral", "scope": "global"}
    message = rejection(send(server, messages=messages))
    assert message == "messages.2.content.0.tool_result.cache_control.ephemeral.scope: Extra inputs are not permitted"


def test_is_error_and_a_one_hour_ttl_are_accepted(server: FakeAnthropicServer) -> None:
    messages = tool_loop([])
    messages[2]["content"][0] |= {"is_error": True, "cache_control": {"type": "ephemeral", "ttl": "1h"}}
    assert send(server, messages=messages).status == 200


def test_is_error_must_be_a_boolean(server: FakeAnthropicServer) -> None:
    messages = tool_loop([])
    messages[2]["content"][0]["is_error"] = "true"
    message = rejection(send(server, messages=messages))
    assert message == "messages.2.content.0.tool_result.is_error: Input should be a valid boolean"


# --- signed thinking ------------------------------------------------------------------------------------


def test_signed_thinking_sent_back_unchanged_is_accepted(server: FakeAnthropicServer) -> None:
    block = signed(server, "Read the file first.")
    assert block["type"] == "thinking" and len(block["signature"]) > 40
    assert send(server, thinking=THINKING, messages=tool_loop([block])).status == 200


def test_tool_loop_without_leading_thinking_is_rejected(server: FakeAnthropicServer) -> None:
    message = rejection(send(server, thinking=THINKING, messages=tool_loop([])))
    assert message.startswith(
        "messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`. When "
        "`thinking` is enabled, a final `assistant` message must start with a thinking block"
    )
    assert send(server, messages=tool_loop([])).status == 200  # without thinking the same history is fine


def test_altered_thinking_text_is_rejected(server: FakeAnthropicServer) -> None:
    block = {**signed(server, "Read the file first."), "thinking": "Read the file first!"}
    message = rejection(send(server, thinking=THINKING, messages=tool_loop([block])))
    assert message == "messages.1.content.0: Invalid `signature` in `thinking` block"


def test_altered_signature_is_rejected(server: FakeAnthropicServer) -> None:
    block = signed(server, "Plan.")
    block["signature"] = block["signature"][:-4] + "AAA="
    assert "Invalid `signature`" in rejection(send(server, thinking=THINKING, messages=tool_loop([block])))


def test_unsigned_thinking_is_rejected(server: FakeAnthropicServer) -> None:
    block = {"type": "thinking", "thinking": "Plan."}
    message = rejection(send(server, thinking=THINKING, messages=tool_loop([block])))
    assert message == "messages.1.content.0.thinking.signature: Field required"


def test_thinking_signed_by_another_server_is_rejected(server: FakeAnthropicServer) -> None:
    with FakeAnthropicServer(secret=b"another deployment").start() as other:
        block = signed(other, "Plan.")
    assert "Invalid `signature`" in rejection(send(server, thinking=THINKING, messages=tool_loop([block])))


def test_signatures_are_checked_in_earlier_turns_too(server: FakeAnthropicServer) -> None:
    stale = {"type": "thinking", "thinking": "old", "signature": "forged"}
    good = signed(server, "new")
    messages = [
        {"role": "user", "content": "q1"},
        {"role": "assistant", "content": [stale, {"type": "text", "text": "a1"}]},
        *tool_loop([good]),
    ]
    assert rejection(send(server, thinking=THINKING, messages=messages)).startswith("messages.1.content.0: Invalid")


def test_redacted_thinking_round_trips_and_rejects_tampering(server: FakeAnthropicServer) -> None:
    server.enqueue(AnthropicReply(blocks=(RedactedThinking(), Text("ok"))))
    block = send(server, thinking=THINKING).json()["content"][0]
    assert block["type"] == "redacted_thinking"
    assert send(server, thinking=THINKING, messages=tool_loop([block])).status == 200
    tampered = {**block, "data": "A" + block["data"][1:]}
    message = rejection(send(server, thinking=THINKING, messages=tool_loop([tampered])))
    assert message == "messages.1.content.0: Invalid `data` in `redacted_thinking` block"


def test_a_rejected_request_does_not_use_up_the_scripted_reply(server: FakeAnthropicServer) -> None:
    server.enqueue(text_reply("kept"))
    assert send(server, max_tokens=99999).status == 400
    assert send(server).json()["content"][0]["text"] == "kept"
    assert [record.error is None for record in server.records] == [False, True]


# --- stream shapes --------------------------------------------------------------------------------------


def test_stream_has_the_api_event_sequence(server: FakeAnthropicServer) -> None:
    server.enqueue(
        AnthropicReply(
            blocks=(Thinking("Plan it."), RedactedThinking(), Text("Reading."), ToolUse("read", {"path": "a.py"}))
        )
    )
    events = send(server, thinking=THINKING, stream=True).events()
    names = [name for name, _ in events]
    assert names[:2] == ["message_start", "ping"] and names[-2:] == ["message_delta", "message_stop"]
    assert all(name == data["type"] for name, data in events)
    usage = events[0][1]["message"]["usage"]
    assert {"input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens"} <= set(usage)
    starts = [data["content_block"] for name, data in events if name == "content_block_start"]
    assert [block["type"] for block in starts] == ["thinking", "redacted_thinking", "text", "tool_use"]
    deltas = [data for name, data in events if name == "content_block_delta"]
    thinking = [d["delta"] for d in deltas if d["index"] == 0]
    assert [d["type"] for d in thinking][-1] == "signature_delta" and len(thinking) > 2
    assert "".join(d["thinking"] for d in thinking[:-1]) == "Plan it."
    assert server.signer.verify_thinking("Plan it.", thinking[-1]["signature"])
    assert starts[1]["data"] and server.signer.verify_redacted(starts[1]["data"])
    tool_json = "".join(d["delta"]["partial_json"] for d in deltas if d["index"] == 3)
    assert json.loads(tool_json) == {"path": "a.py"} and starts[3]["id"].startswith("toolu_")
    assert events[-2][1]["delta"]["stop_reason"] == "tool_use" and events[-2][1]["usage"]["output_tokens"] > 0


def test_scripted_error_has_the_api_body(server: FakeAnthropicServer) -> None:
    server.enqueue(overloaded_reply())
    response = send(server, stream=True)
    assert response.status == 529 and response.json()["error"] == {"type": "overloaded_error", "message": "Overloaded"}


def test_stream_error_event_ends_the_stream(server: FakeAnthropicServer) -> None:
    server.enqueue(AnthropicReply(blocks=(Text("partial"),), stream_error=True, error_type="overloaded_error"))
    events = send(server, stream=True).events()
    assert events[-1][0] == "error" and events[-1][1]["error"]["type"] == "overloaded_error"
    assert "message_stop" not in [name for name, _ in events]


def test_count_tokens_endpoint_answers_the_estimate(server: FakeAnthropicServer) -> None:
    body = {"model": MODEL, "messages": [{"role": "user", "content": "z" * 400}]}
    assert post(server.base_url + "/v1/messages/count_tokens", body, ANTHROPIC_HEADERS).json() == {"input_tokens": 100}
