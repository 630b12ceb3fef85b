"""The product's model layer (``LiteLLMModel`` with the real request builder) against the fake Anthropic
server, through litellm's real HTTP path: thinking levels with signed thinking in a tool loop, prompt-cache
breakpoints and their price, the output cap near the window, readable errors (issue 21)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fakes.anthropic_checks import count_cache_breakpoints
from fakes.anthropic_server import FakeAnthropicServer
from fakes.anthropic_stream import AnthropicReply, RedactedThinking, Text, ToolUse, text_reply, tool_reply

from pi_compact.llm.litellm_model import LiteLLMModel
from pi_compact.llm.overflow import is_context_overflow, stated_window
from pi_compact.llm.protocol import ChatRequest, ModelInfo, ToolSpec, complete

INFO = ModelInfo("anthropic/claude-sonnet-4-5", "anthropic", 200_000, 64_000, reasoning=True)
READ = ToolSpec("read", "Read a file", {"type": "object", "properties": {"path": {"type": "string"}}})
SYSTEM = "You are a careful coding agent. " * 20
INTERLEAVED = "interleaved-thinking-2025-05-14"


@pytest.fixture
def server() -> Iterator[FakeAnthropicServer]:
    fake = FakeAnthropicServer(min_cache_tokens=0).start()
    try:
        yield fake
    finally:
        fake.stop()


def model_for(server: FakeAnthropicServer, info: ModelInfo = INFO) -> LiteLLMModel:
    return LiteLLMModel(info, api_base=server.base_url, api_key="sk-fake")


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 0}


def results_for(reply: dict[str, Any], *, error: bool = False) -> list[dict[str, Any]]:
    return [
        {"role": "toolResult", "toolCallId": block["id"], "toolName": block["name"],
         "content": [{"type": "text", "text": f"contents of {block['arguments'].get('path')}"}],
         "isError": error, "timestamp": 0}
        for block in reply["content"] if block["type"] == "toolCall"
    ]  # fmt: skip


def run_loop(model: LiteLLMModel, prompt: str, **request: Any) -> list[dict[str, Any]]:
    """An agent's tool loop on the model layer alone: ask, run the calls, ask again until it stops."""
    messages: list[dict[str, Any]] = [user(prompt)]
    for _ in range(20):
        reply = complete(model, ChatRequest(SYSTEM, messages, [READ], **request))
        messages.append(reply)
        if reply["stopReason"] != "toolUse":
            break
        messages.extend(results_for(reply))
    return messages


def test_medium_thinking_ten_call_tool_loop_is_accepted(server: FakeAnthropicServer) -> None:
    server.enqueue(*(tool_reply("read", {"path": f"f{i}.py"}, thinking=f"Next: f{i}.", text=f"Reading f{i}.")
                     for i in range(10)), text_reply("All read."))  # fmt: skip
    messages = run_loop(model_for(server), "Read ten files.", thinking="medium")
    assert server.rejections == [] and len(server.records) == 11
    assert messages[-1]["stopReason"] == "stop" and messages[-1]["content"] == [{"type": "text", "text": "All read."}]
    for body in server.requests:
        assert body["thinking"] == {"type": "enabled", "budget_tokens": 8192}
        assert body["max_tokens"] == 32_000 + 8192  # pi's number: the small prompt leaves room
    # As pi: a thinking Claude 4 model with tools may think between tool calls.
    assert [record.headers.get("anthropic-beta") for record in server.records] == [INTERLEAVED] * 11
    first = messages[1]
    assert first["api"] == "anthropic-messages" and first["provider"] == "anthropic"
    thinking = first["content"][0]
    assert thinking["type"] == "thinking" and thinking["thinking"] == "Next: f0."
    assert server.signer.verify_thinking(thinking["thinking"], thinking["thinkingSignature"])
    sent = server.requests[1]["messages"][1]["content"]
    assert [part["type"] for part in sent] == ["thinking", "text", "tool_use"]
    assert sent[0]["signature"] == thinking["thinkingSignature"]  # byte for byte


def test_redacted_thinking_is_kept_opaque_and_sent_back(server: FakeAnthropicServer) -> None:
    server.enqueue(AnthropicReply(blocks=(RedactedThinking(), ToolUse("read", {"path": "a.py"}))), text_reply("ok"))
    messages = run_loop(model_for(server), "Read a.py.", thinking="low")
    assert server.rejections == []
    block = messages[1]["content"][0]
    assert block["redacted"] is True and block["thinking"] == "[Reasoning redacted]"
    assert server.requests[1]["messages"][1]["content"][0] == {"type": "redacted_thinking",
                                                              "data": block["thinkingSignature"]}


def test_thinking_of_another_model_is_not_sent(server: FakeAnthropicServer) -> None:
    server.enqueue(tool_reply("read", {"path": "a.py"}, thinking="Mine."), text_reply("ok"), text_reply("ok"))
    messages = run_loop(model_for(server), "Read a.py.", thinking="low")
    opus = ModelInfo("anthropic/claude-opus-4-1", "anthropic", 200_000, 32_000, reasoning=True)
    complete(model_for(server, opus), ChatRequest(SYSTEM, [*messages, user("again")], [READ]))
    assert server.rejections == []
    assert all(part["type"] != "thinking" for m in server.requests[-1]["messages"] for part in m["content"])


def test_cache_breakpoints_as_pi_places_them_and_reads_priced(server: FakeAnthropicServer) -> None:
    server.enqueue(tool_reply("read", {"path": "a.py"}), text_reply("done"))
    messages = run_loop(model_for(server), "Read a.py.")
    first, second = server.requests
    assert first["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert first["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    assert first["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    last_block = second["messages"][-1]["content"][-1]
    assert last_block["type"] == "tool_result" and last_block["cache_control"] == {"type": "ephemeral"}
    assert [count_cache_breakpoints(body) for body in (first, second)] == [3, 3]
    usage = messages[-1]["usage"]
    served = server.records[-1].usage or {}
    assert usage["cacheRead"] == served["cache_read_input_tokens"] > 0
    assert usage["cacheWrite"] == served["cache_creation_input_tokens"]
    assert usage["input"] == served["input_tokens"]
    assert usage["cost"]["cacheRead"] == pytest.approx(usage["cacheRead"] * 0.3e-6)
    assert usage["cost"]["cacheWrite"] == pytest.approx(usage["cacheWrite"] * 3.75e-6)
    assert usage["cost"]["input"] == pytest.approx(usage["input"] * 3e-6)


@pytest.mark.parametrize(("cache", "environ", "expected"), [
    ("none", "", None), ("long", "", {"type": "ephemeral", "ttl": "1h"}),
    ("short", "long", {"type": "ephemeral", "ttl": "1h"}), ("short", "", {"type": "ephemeral"}),
])  # fmt: skip
def test_cache_retention(
    server: FakeAnthropicServer, monkeypatch: pytest.MonkeyPatch, cache: str, environ: str, expected: Any
) -> None:
    monkeypatch.setenv("PI_CACHE_RETENTION", environ)
    server.enqueue(text_reply("hi"))
    reply = complete(model_for(server), ChatRequest(SYSTEM, [user("hello")], [READ], cache=cache))
    body = server.requests[0]
    assert body["system"][0].get("cache_control") == expected and body["tools"][0].get("cache_control") == expected
    assert count_cache_breakpoints(body) == (0 if expected is None else 3)
    if expected and expected.get("ttl"):
        usage = reply["usage"]
        assert usage["cost"]["cacheWrite"] == pytest.approx(usage["cacheWrite"] * 6e-6)  # the 1-hour price


def test_a_180k_prompt_on_a_200k_window_is_accepted_because_the_cap_shrinks(server: FakeAnthropicServer) -> None:
    server.enqueue(text_reply("Fine."))
    big = user("x" * (180_000 * 4))
    reply = complete(model_for(server), ChatRequest(SYSTEM, [big], [READ], thinking="medium"))
    assert reply["stopReason"] == "stop" and len(server.records) == 1 and server.rejections == []
    record = server.records[0]
    assert record.prompt_tokens >= 180_000
    assert record.prompt_tokens + record.body["max_tokens"] <= 200_000
    assert record.body["max_tokens"] > record.body["thinking"]["budget_tokens"] >= 1024


def test_prompt_plus_max_tokens_over_the_window_is_an_overflow_in_one_readable_sentence(
    server: FakeAnthropicServer,
) -> None:
    big = user("x" * (170_000 * 4))
    reply = complete(model_for(server), ChatRequest(SYSTEM, [big], max_tokens=64_000))
    error = reply["errorMessage"]
    assert "input length and `max_tokens` exceed context limit: " in error and "b'" not in error and "{" not in error
    assert is_context_overflow(reply, INFO.context_window) and stated_window(error) == 200_000


def test_provider_error_is_the_api_message_not_a_bytes_repr(server: FakeAnthropicServer) -> None:
    server.enqueue(AnthropicReply(status=400, error_type="invalid_request_error", error_message="Bad thing."))
    reply = complete(model_for(server), ChatRequest(SYSTEM, [user("hi")]))
    assert reply["stopReason"] == "error" and reply["errorMessage"] == "400 Bad thing."  # status + the API's words


def test_text_after_thinking_and_interleaved_blocks_keep_their_order(server: FakeAnthropicServer) -> None:
    server.enqueue(AnthropicReply(blocks=(Text("Plan."),)))
    reply = complete(model_for(server), ChatRequest(SYSTEM, [user("hi")], thinking="off"))
    assert "thinking" not in server.requests[0] and reply["content"] == [{"type": "text", "text": "Plan."}]
    assert "anthropic-beta" not in server.records[0].headers  # no thinking, no beta


def test_no_interleaved_beta_without_thinking_or_without_tools(server: FakeAnthropicServer) -> None:
    server.enqueue(text_reply("a"), text_reply("b"))
    complete(model_for(server), ChatRequest(SYSTEM, [user("hi")], [READ], thinking="off"))
    complete(model_for(server), ChatRequest(SYSTEM, [user("hi")], thinking="low"))
    assert server.rejections == [] and server.requests[1]["thinking"]["budget_tokens"] == 2048
    assert [record.headers.get("anthropic-beta") for record in server.records] == [None, None]


def test_a_too_low_estimate_is_refitted_from_the_refusal_without_an_overflow(server: FakeAnthropicServer) -> None:
    server.token_counter = lambda text: (len(text) + 2) // 3  # the real tokenizer counts more than chars/4
    server.enqueue(text_reply("Fine."))
    reply = complete(model_for(server), ChatRequest(SYSTEM, [user("x" * (140_000 * 4))], thinking="medium"))
    first, second = server.records
    assert first.error is not None and "exceed context limit" in first.error.message
    assert second.error is None and reply["stopReason"] == "stop"
    assert second.prompt_tokens + second.body["max_tokens"] <= 200_000
    assert second.body["max_tokens"] > second.body["thinking"]["budget_tokens"]


def tool_results_sent(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [part for message in body["messages"] for part in message["content"] if part["type"] == "tool_result"]


def test_a_failed_tool_result_is_sent_with_is_error_and_a_good_one_without(server: FakeAnthropicServer) -> None:
    server.enqueue(tool_reply("read", {"path": "gone.py"}, thinking="First."),
                   tool_reply("read", {"path": "a.py"}, thinking="Then."), text_reply("ok"))  # fmt: skip
    model = model_for(server)
    messages: list[dict[str, Any]] = [user("Read two files.")]
    for failed in (True, False):
        reply = complete(model, ChatRequest(SYSTEM, messages, [READ], thinking="low"))
        messages += [reply, *results_for(reply, error=failed)]
    complete(model, ChatRequest(SYSTEM, messages, [READ], thinking="low"))
    assert server.rejections == []
    second, third = (tool_results_sent(body) for body in server.requests[1:])
    assert [result.get("is_error") for result in second] == [True]
    assert [result.get("is_error") for result in third] == [True, None]  # as pi: only a failure is marked
    assert third[-1]["cache_control"] == {"type": "ephemeral"}  # the breakpoint stays on the last result


def test_a_synthetic_result_for_an_unanswered_call_is_an_error(server: FakeAnthropicServer) -> None:
    server.enqueue(tool_reply("read", {"path": "a.py"}), text_reply("ok"))
    model = model_for(server)
    reply = complete(model, ChatRequest(SYSTEM, [user("Read a.py.")], [READ]))
    complete(model, ChatRequest(SYSTEM, [user("Read a.py."), reply, user("Never mind.")], [READ]))
    assert server.rejections == []
    [result] = tool_results_sent(server.requests[1])
    assert result["is_error"] is True and result["content"] == "No result provided"


def test_is_error_follows_the_id_litellm_rewrites(server: FakeAnthropicServer) -> None:
    odd = "call|a+b__thought__c="  # another provider's id: we clean it, litellm cuts it at "__thought__"
    call = {"role": "assistant", "content": [{"type": "toolCall", "id": odd, "name": "read", "arguments": {}}],
            "api": "openai-completions", "provider": "openai", "model": "gpt-5", "stopReason": "toolUse",
            "usage": {}, "timestamp": 0}  # fmt: skip
    failed = {"role": "toolResult", "toolCallId": odd, "toolName": "read",
              "content": [{"type": "text", "text": "ENOENT"}], "isError": True, "timestamp": 0}  # fmt: skip
    server.enqueue(text_reply("ok"))
    complete(model_for(server), ChatRequest(SYSTEM, [user("Read."), call, failed], [READ]))
    assert server.rejections == []
    [result] = tool_results_sent(server.requests[0])
    assert result["is_error"] is True and result["tool_use_id"] == "call_a_b"
